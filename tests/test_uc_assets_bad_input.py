"""Bad input to the endpoints of volumes, functions, registered models and versions, credentials,
external locations, temporary credentials and their permissions: each request is refused in the
UC envelope and changes nothing. And the OpenAPI schema documents every one of those
operations."""

from __future__ import annotations

import uuid

import pytest

from tests.conftest import bearer_client
from tests.helpers import UC, securable_rows
from tests.uc_bad_input_support import admin_world

pytestmark = pytest.mark.django_db


# == bad input =====================================================================================
def _parameter(**overrides):
    return {"name": "x", "type_text": "int", "type_json": '{"type":"int"}', "type_name": "INT", "position": 0,
            **overrides}


def _function(**overrides):
    info = {
        "name": "f2", "catalog_name": "shop", "schema_name": "sales",
        "input_params": {"parameters": [_parameter()]}, "data_type": "INT", "full_data_type": "int",
        "routine_body": "SQL", "routine_definition": "x + 1", "parameter_style": "S", "is_deterministic": True,
        "sql_data_access": "CONTAINS_SQL", "is_null_call": False, "security_type": "DEFINER", "specific_name": "f2",
    }
    info.update(overrides)
    return {"function_info": info}


V = "/models/shop.sales.m/versions"
BAD_REQUESTS = [
    # volumes
    ("post", "/volumes", {}, 400),
    ("post", "/volumes", [], 400),
    ("post", "/volumes", {"name": "a.b", "catalog_name": "shop", "schema_name": "sales", "volume_type": "MANAGED"}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "BOGUS"}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "MANAGED",
                          "storage_location": "file:///tmp/x"}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "EXTERNAL"}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "EXTERNAL",
                          "storage_location": "http://example.com/x"}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "MANAGED",
                          "comment": 5}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "MANAGED",
                          "comment": "x" * 70000}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "nope", "volume_type": "MANAGED"}, 404),
    ("get", "/volumes", None, 400),
    ("get", "/volumes?catalog_name=shop&schema_name=sales&max_results=-1", None, 400),
    ("get", "/volumes?catalog_name=shop&schema_name=sales&page_token=%21%21", None, 400),
    ("get", "/volumes/shop.sales", None, 400),
    ("get", "/volumes/shop.sales.nope", None, 404),
    ("patch", "/volumes/shop.sales.raw", {"new_name": "a.b"}, 400),
    ("patch", "/volumes/shop.sales.raw", {"owner": "nobody"}, 404),
    ("patch", "/volumes/shop.sales.raw", {"comment": 5}, 400),
    ("patch", "/volumes/shop.sales.raw", "not an object", 400),
    ("delete", "/volumes/shop.sales.nope", None, 404),
    # functions
    ("post", "/functions", {}, 400),
    ("post", "/functions", {"function_info": "x"}, 400),
    ("post", "/functions", _function(data_type=None), 400),
    ("post", "/functions", _function(data_type="BOGUS"), 400),
    ("post", "/functions", _function(input_params=None), 400),
    ("post", "/functions", _function(input_params={"parameters": "x"}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(type_json=None)]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(position=-1)]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(position=2**40)]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(type_name="NOPE")]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(parameter_mode="OUT")]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(), _parameter(position=1)]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(name="y"), _parameter()]}), 400),
    ("post", "/functions", _function(routine_body="EXTERNAL", sql_data_access="NO_SQL"), 400),
    ("post", "/functions", _function(routine_body="EXTERNAL", external_language="PYTHON"), 400),
    ("post", "/functions", _function(data_type="TABLE_TYPE"), 400),
    ("post", "/functions", _function(return_params={"parameters": [_parameter()]}), 400),
    ("post", "/functions", _function(is_deterministic="yes"), 400),
    ("post", "/functions", _function(parameter_style="X"), 400),
    ("post", "/functions", _function(security_type="INVOKER"), 400),
    ("post", "/functions", _function(specific_name=None), 400),
    ("post", "/functions", _function(routine_dependencies={"dependencies": [{}]}), 400),
    ("post", "/functions", _function(routine_dependencies={"dependencies": [{"table": {"table_full_name": "a"}}]}),
     400),
    ("post", "/functions", _function(properties={"a": "b"}), 400),
    ("post", "/functions", _function(name="f"), 409),
    ("post", "/functions", _function(schema_name="nope"), 404),
    ("get", "/functions/x", None, 400),
    ("get", "/functions?catalog_name=shop", None, 400),
    ("delete", "/functions/shop.sales.nope", None, 404),
    # registered models and versions
    ("post", "/models", {}, 400),
    ("post", "/models", {"name": "a b", "catalog_name": "shop", "schema_name": "sales"}, 400),
    ("post", "/models", {"name": "m", "catalog_name": "shop", "schema_name": "sales"}, 409),
    ("get", "/models?catalog_name=shop", None, 400),
    ("get", "/models?max_results=abc", None, 400),
    ("get", "/models/shop.sales", None, 400),
    ("patch", "/models/shop.sales.m", {"new_name": ""}, 400),
    ("patch", "/models/shop.sales.m", {"comment": ["x"]}, 400),
    ("delete", "/models/shop.sales.m?force=maybe", None, 400),
    ("delete", "/models/shop.sales.m", None, 400),
    ("post", "/models/versions", {}, 400),
    ("post", "/models/versions", {"model_name": "m", "catalog_name": "shop", "schema_name": "sales", "source": 5}, 400),
    ("post", "/models/versions", {"model_name": "m", "catalog_name": "shop", "schema_name": "sales"}, 400),
    ("post", "/models/versions", {"model_name": "nope", "catalog_name": "shop", "schema_name": "sales",
                                  "source": "s"}, 404),
    ("get", f"{V}/abc", None, 400),
    ("get", f"{V}/0", None, 400),
    ("get", f"{V}/-1", None, 400),
    ("get", f"{V}/99999999999999999999999", None, 400),
    ("get", f"{V}/99", None, 404),
    ("get", f"{V}?page_token=%21", None, 400),
    ("patch", f"{V}/1", {"comment": 3}, 400),
    ("patch", f"{V}/1/finalize", {"full_name": "shop.sales.m", "version": 2}, 400),
    ("patch", f"{V}/1/finalize", {"full_name": "shop.sales.other", "version": 1}, 400),
    ("patch", f"{V}/1/finalize", {"full_name": 5, "version": 1}, 400),
    ("patch", f"{V}/x/finalize", {}, 400),
    ("delete", f"{V}/7", None, 404),
    # credentials
    ("post", "/credentials", {}, 400),
    ("post", "/credentials", {"name": "c2"}, 400),
    ("post", "/credentials", {"name": "c2", "aws_iam_role": {"role_arn": "nope"}}, 400),
    ("post", "/credentials", {"name": "c2", "aws_iam_role": "arn"}, 400),
    ("post", "/credentials", {"name": "c2", "purpose": "X", "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/r"}},
     400),
    ("post", "/credentials", {"name": "c2", "aws_static_keys": {"access_key_id": "AKIA"}}, 400),
    ("post", "/credentials", {"name": "c2", "aws_static_keys": {"access_key_id": "A K", "secret_access_key": "s"}},
     400),
    ("post", "/credentials", {"name": "c2", "aws_iam_role": {"role_arn": "arn:aws:iam::123456789012:role/r"},
                              "endpoint_url": "ftp://x"}, 400),
    ("post", "/credentials", {"name": "c2", "aws_iam_role": {"role_arn": "arn:aws:iam::123456789012:role/r"},
                              "region": "US EAST"}, 400),
    ("post", "/credentials", {"name": "c", "aws_iam_role": {"role_arn": "arn:aws:iam::123456789012:role/r"}}, 409),
    ("get", "/credentials?purpose=NOPE", None, 400),
    ("get", "/credentials/nope", None, 404),
    ("patch", "/credentials/c", {"aws_iam_role": {"role_arn": 5}}, 400),
    ("patch", "/credentials/c", {"aws_iam_role": None}, 400),
    ("patch", "/credentials/c", {"new_name": "s"}, 409),
    ("delete", "/credentials/c?force=x", None, 400),
    ("delete", "/credentials/c", None, 400),
    # external locations
    ("post", "/external-locations", {}, 400),
    ("post", "/external-locations", {"name": "l2", "url": "gs://b/x", "credential_name": "c"}, 400),
    ("post", "/external-locations", {"name": "l2", "url": "not a url", "credential_name": "c"}, 400),
    ("post", "/external-locations", {"name": "l2", "url": "s3://b/x", "credential_name": "nope"}, 404),
    ("post", "/external-locations", {"name": "l2", "url": "s3://b/x", "credential_name": "s"}, 400),
    ("post", "/external-locations", {"name": "l2", "url": "s3://lake/landing/x", "credential_name": "c"}, 400),
    ("post", "/external-locations", {"name": "l2", "url": "s3://lake", "credential_name": "c"}, 400),
    ("post", "/external-locations", {"name": "l", "url": "s3://other", "credential_name": "c"}, 409),
    ("patch", "/external-locations/l", {"url": "file:///"}, 400),
    ("patch", "/external-locations/l", {"credential_name": "nope"}, 404),
    ("patch", "/external-locations/l", {"new_name": "x y"}, 400),
    ("delete", "/external-locations/nope", None, 404),
    ("delete", "/external-locations/l?force=2", None, 400),
    # temporary credentials
    ("post", "/temporary-table-credentials", {}, 400),
    ("post", "/temporary-table-credentials", {"table_id": "nope", "operation": "READ"}, 400),
    ("post", "/temporary-table-credentials", {"table_id": str(uuid.UUID(int=1)), "operation": "READ"}, 404),
    ("post", "/temporary-table-credentials", {"table_id": str(uuid.UUID(int=1)), "operation": "WRITE"}, 400),
    ("post", "/temporary-table-credentials", {"table_id": str(uuid.UUID(int=1)),
                                              "operation": "UNKNOWN_TABLE_OPERATION"}, 400),
    ("post", "/temporary-volume-credentials", {"volume_id": 5, "operation": "READ_VOLUME"}, 400),
    ("post", "/temporary-volume-credentials", {"volume_id": str(uuid.UUID(int=1)), "operation": "READ_VOLUME"},
     404),
    ("post", "/temporary-volume-credentials", {"volume_id": str(uuid.UUID(int=1)), "operation": "READ"}, 400),
    ("post", "/temporary-path-credentials", {"operation": "PATH_READ"}, 400),
    ("post", "/temporary-path-credentials", {"url": "s3://lake/landing/x"}, 400),
    ("post", "/temporary-path-credentials", {"url": "ftp://x/y", "operation": "PATH_READ"}, 400),
    ("post", "/temporary-model-version-credentials", {"catalog_name": "shop", "schema_name": "sales",
                                                      "model_name": "m", "version": "x",
                                                      "operation": "READ_MODEL_VERSION"}, 400),
    ("post", "/temporary-model-version-credentials", {"catalog_name": "shop", "schema_name": "sales",
                                                      "model_name": "m", "version": 1, "operation": "READ"}, 400),
    ("post", "/temporary-model-version-credentials", {"catalog_name": "shop", "schema_name": "sales",
                                                      "model_name": "nope", "version": 1,
                                                      "operation": "READ_MODEL_VERSION"}, 404),
    # permissions on the new securables
    ("patch", "/permissions/volume/shop.sales.raw", {"changes": [{"principal": "admin", "add": ["SELECT"]}]}, 400),
    ("patch", "/permissions/function/shop.sales.f", {"changes": [{"principal": "admin", "add": ["READ VOLUME"]}]},
     400),
    ("get", "/permissions/registered_model/shop.sales.nope", None, 404),
    ("get", "/permissions/credential/nope", None, 404),
    ("get", "/permissions/external_location/nope", None, 404),
]


@pytest.fixture(scope="module")
def admin_token(module_db, django_db_blocker, module_storage_root):
    """shop.sales with volume raw, function f, model m (version 1), STORAGE credential c, SERVICE
    credential s, external location l at s3://lake/landing: built once for the module (see
    `module_db`); each test's changes are rolled back after it."""
    role = {"role_arn": "arn:aws:iam::123456789012:role/r"}
    with django_db_blocker.unblock():
        return admin_world([
            ("post", "/catalogs", {"name": "shop"}),
            ("post", "/schemas", {"name": "sales", "catalog_name": "shop"}),
            ("post", "/volumes", {"name": "raw", "catalog_name": "shop", "schema_name": "sales",
                                  "volume_type": "MANAGED"}),
            ("post", "/functions", _function(name="f", specific_name="f")),
            ("post", "/models", {"name": "m", "catalog_name": "shop", "schema_name": "sales"}),
            ("post", "/models/versions", {"model_name": "m", "catalog_name": "shop", "schema_name": "sales",
                                          "source": "file:///tmp/m"}),
            ("post", "/credentials", {"name": "c", "aws_iam_role": role}),
            ("post", "/credentials", {"name": "s", "purpose": "SERVICE", "aws_iam_role": role}),
            ("post", "/external-locations", {"name": "l", "url": "s3://lake/landing", "credential_name": "c"}),
        ])


@pytest.fixture
def assets_world(db, admin_token):
    """The admin's client on the module's shared assets (see admin_token)."""
    return bearer_client(admin_token)


@pytest.mark.parametrize("method,path,body,status", BAD_REQUESTS,
                         ids=[f"{m} {p} {i}" for i, (m, p, _, _) in enumerate(BAD_REQUESTS)])
def test_bad_input_is_refused_and_changes_nothing(assets_world, method, path, body, status):
    before = securable_rows()
    if body is None:
        response = getattr(assets_world, method)(f"{UC}{path}")
    elif isinstance(body, str):
        response = getattr(assets_world, method)(f"{UC}{path}", body, content_type="application/json")
    else:
        response = getattr(assets_world, method)(f"{UC}{path}", body, format="json")
    assert response.status_code == status, response.content
    payload = response.json()
    assert set(payload) == {"error_code", "message", "details"}, payload
    assert securable_rows() == before


def test_openapi_documents_every_new_operation(client):
    import yaml

    schema = yaml.safe_load(client.get("/api/schema/").content)
    operations = {(method.upper(), path) for path, item in schema["paths"].items() for method in item
                  if method in {"get", "post", "patch", "delete"}}
    expected = set()
    for method, path in [
        ("GET", "volumes"), ("POST", "volumes"), ("GET", "volumes/{name}"), ("PATCH", "volumes/{name}"),
        ("DELETE", "volumes/{name}"), ("GET", "functions"), ("POST", "functions"), ("GET", "functions/{name}"),
        ("DELETE", "functions/{name}"), ("GET", "models"), ("POST", "models"), ("GET", "models/{full_name}"),
        ("PATCH", "models/{full_name}"), ("DELETE", "models/{full_name}"), ("POST", "models/versions"),
        ("GET", "models/{full_name}/versions"), ("GET", "models/{full_name}/versions/{version}"),
        ("PATCH", "models/{full_name}/versions/{version}"), ("DELETE", "models/{full_name}/versions/{version}"),
        ("PATCH", "models/{full_name}/versions/{version}/finalize"), ("GET", "credentials"), ("POST", "credentials"),
        ("GET", "credentials/{name}"), ("PATCH", "credentials/{name}"), ("DELETE", "credentials/{name}"),
        ("GET", "external-locations"), ("POST", "external-locations"), ("GET", "external-locations/{name}"),
        ("PATCH", "external-locations/{name}"), ("DELETE", "external-locations/{name}"),
        ("POST", "temporary-table-credentials"), ("POST", "temporary-volume-credentials"),
        ("POST", "temporary-path-credentials"), ("POST", "temporary-model-version-credentials"),
    ]:
        expected.add((method, f"{UC}/{path}"))
    assert expected <= operations, sorted(expected - operations)
    ids = {item[m]["operationId"] for item in schema["paths"].values() for m in item if isinstance(item[m], dict)
           and "operationId" in item[m]}
    assert {"createVolume", "createFunction", "createModelVersion", "finalizeModelVersion", "createCredential",
            "createExternalLocation", "generateTemporaryPathCredentials"} <= ids
