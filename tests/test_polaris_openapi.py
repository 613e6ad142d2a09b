"""How the server describes the Polaris-native API and Polaris's additions to the Iceberg REST
API: the endpoints the Iceberg config advertises (read with the Apache Polaris Python client),
the new operations in the OpenAPI document with typed bodies, and fuzzing them (schemathesis)
against a live server for server errors."""

from __future__ import annotations

import pytest
from apache_polaris.sdk.catalog import ApiClient, Configuration

from catalog.models import Policy, Table
from tests.polaris_support import CATALOG, EXPIRY, content
from tests.test_openapi_fuzz import check_error_envelope, fuzz_settings, kept_session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("polaris")]


# -- the OpenAPI document and fuzzing of the new operations ---------------------------------------------
NEW_OPERATIONS = {
    ("GET", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/generic-tables"): "listGenericTables",
    ("POST", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/generic-tables"): "createGenericTable",
    ("GET", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/generic-tables/{table}"): "loadGenericTable",
    ("DELETE", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/generic-tables/{table}"): "dropGenericTable",
    ("GET", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies"): "listPolicies",
    ("POST", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies"): "createPolicy",
    ("GET", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy}"): "loadPolicy",
    ("PUT", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy}"): "updatePolicy",
    ("DELETE", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy}"): "dropPolicy",
    ("PUT", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy}/mappings"): "attachPolicy",
    ("POST", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy}/mappings"): "detachPolicy",
    ("GET", "/api/catalog/polaris/v1/{prefix}/applicable-policies"): "getApplicablePolicies",
    ("POST", "/api/catalog/v1/{prefix}/namespaces/{namespace}/register-view"): "registerView",
    ("POST", "/api/catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}/notifications"): "sendNotification",
}


def test_the_schema_describes_the_new_operations_with_typed_bodies(client):
    import yaml

    schema = yaml.safe_load(client.get("/api/schema/").content)
    components = schema["components"]["schemas"]
    for (method, path), operation_id in NEW_OPERATIONS.items():
        operation = schema["paths"][path][method.lower()]
        assert operation["operationId"] == operation_id
        if "requestBody" in operation:
            ref = next(iter(operation["requestBody"]["content"].values()))["schema"]["$ref"]
            assert components[ref.rsplit("/", 1)[1]]["properties"], path
        success = operation["responses"].get("200")
        if success is not None and path.startswith("/api/catalog/polaris"):
            ref = success["content"]["application/json"]["schema"]["$ref"]
            assert components[ref.rsplit("/", 1)[1]]["properties"], path
    for name in ("CreatePolicyRequest", "AttachPolicyRequest", "GetApplicablePoliciesResponse", "GenericTable"):
        assert any(component.startswith(name) for component in components), name


NEW_PATHS = r"^/api/catalog/(polaris/|v1/\{prefix\}/namespaces/\{namespace\}/(register-view|tables/\{table\}/notifications))"


def _ensure_polaris_rows() -> None:
    from catalog.models import Principal, Schema as Namespace
    from catalog.services import generic_tables
    from catalog.services import policies as policy_service

    admin = Principal.objects.get(name="admin")
    schema = Namespace.objects.get(catalog__name=CATALOG, name="default")
    if not Table.objects.filter(schema=schema, name="gen").exists():
        generic_tables.create_generic_table(caller=admin, prefix=CATALOG, namespace="default",
                                            body={"name": "gen", "format": "delta"})
    if not Policy.objects.filter(schema=schema, name="p").exists():
        policy_service.create_policy(caller=admin, prefix=CATALOG, namespace="default",
                                     body={"name": "p", "type": EXPIRY, "content": content()})


@pytest.fixture
def polaris_api_schema(live_server, bootstrap, storage_root):
    import schemathesis

    _ensure_polaris_rows()
    return schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json")


def _fuzz():
    import schemathesis

    return schemathesis.pytest.from_fixture("polaris_api_schema").include(path_regex=NEW_PATHS)


@pytest.fixture
def http():
    with kept_session() as session:
        yield session


@_fuzz().parametrize()
@fuzz_settings(max_examples=15)
def test_new_operations_have_no_server_errors(case, live_server, make_token, http):
    import zlib

    from schemathesis.checks import not_a_server_error

    # Half of the cases are aimed at rows that exist, so that they reach the code under test.
    data = repr((case.operation.label, case.path_parameters, case.query, case.body))
    if zlib.crc32(data.encode("utf-8", "surrogatepass")) % 2 == 0:
        _ensure_polaris_rows()
        params = case.path_parameters or {}
        for key, value in (("prefix", CATALOG), ("namespace", "default"), ("policy", "p"), ("table", "gen")):
            if key in params:
                params[key] = value
    token = make_token("admin", admin=True)
    response = case.call(base_url=live_server.url, session=http, headers={"Authorization": f"Bearer {token}"},
                         timeout=30)
    case.validate_response(response, checks=[not_a_server_error])
    check_error_envelope(response)


def test_config_advertises_the_polaris_endpoints(live_server, make_token, bootstrap):
    from apache_polaris.sdk.catalog.api.configuration_api import ConfigurationAPI

    client = ApiClient(Configuration(host=f"{live_server.url}/api/catalog"))
    client.set_default_header("Authorization", f"Bearer {make_token('admin', admin=True)}")
    endpoints = set(ConfigurationAPI(client).get_config(warehouse=CATALOG).endpoints)
    assert {"POST /polaris/v1/{prefix}/namespaces/{namespace}/generic-tables",
            "GET /polaris/v1/{prefix}/applicable-policies",
            "POST /v1/{prefix}/namespaces/{namespace}/register-view",
            "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/notifications"} <= endpoints
