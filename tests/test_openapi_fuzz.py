"""Property-based fuzzing of the HTTP APIs from their own OpenAPI document.

schemathesis reads the schema that drf-spectacular serves at /api/schema/ from a live server and,
for every operation, sends generated requests, valid ones and (negative mode) invalid ones, as a
metastore admin against a namespace that holds real rows (catalog unity, schema unity.default, an
external table unity.default.trips), so that requests reach real code paths instead of stopping
at "does not exist".

The check is `not_a_server_error`: no request may get a 5xx. The conformance checks are not
used: the document declares only the success response of each operation, and names that are
valid strings for the schema (`"a.b"`) are still refused by the server, as they must be. Error
responses are checked separately to be in the envelope of their API.

The Unity Catalog namespace API (catalogs, schemas, tables, permissions, metastore summary) and
everything else the document describes (Delta commits, staging tables, the other Unity Catalog
securables, Iceberg REST) are two tests, so that a failure names the API it comes from. Examples
are derandomized, and few enough per operation (fewer for the other APIs, which hold most of the
operations) that the file runs in well under a minute and a half.
"""

from __future__ import annotations

import zlib
from http.cookiejar import DefaultCookiePolicy

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error

from catalog.models import Catalog, Principal, Schema, Table
from catalog.services import principals, tables
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)

# The routes of the namespace API: catalogs, schemas, tables, permissions, metastore summary.
NAMESPACE_PATHS = rf"^{UC}/(catalogs|schemas|tables|permissions|metastore_summary)(/|$)"


def fuzz_settings(max_examples: int):
    return settings(
        max_examples=max_examples,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


def check_error_envelope(response) -> None:
    """4xx answers are in the envelope of the API that was called (see ucweb/errors.py)."""
    if not 400 <= response.status_code < 500 or response.request is None:
        return
    path = response.request.path_url
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"{response.status_code} from {path} is not JSON: {response.text[:200]!r}") from None
    if path.startswith(f"{UC}/delta/v1/"):  # the Delta REST API's own envelope (managed tables spec 1.0)
        assert isinstance(body, dict) and set(body) == {"error"}, body
        assert set(body["error"]) == {"type", "code", "message"}, body
        assert body["error"]["code"] == response.status_code, body
    elif path.startswith(UC):
        assert isinstance(body, dict) and set(body) == {"error_code", "message", "details"}, body
        assert isinstance(body["error_code"], str) and isinstance(body["message"], str), body
    elif path.startswith("/api/catalog/v1/oauth/"):
        assert isinstance(body, dict) and "error" in body, body  # OAuth's own error format
    elif path.startswith(("/api/catalog/", "/api/management/")):  # Iceberg's envelope, as Polaris answers
        assert isinstance(body, dict) and isinstance(body.get("error"), dict), body
        assert body["error"].get("code") == response.status_code, body


REAL_FULL_NAMES = {
    "metastore": "ucweb", "catalog": "unity", "schema": "unity.default", "table": "unity.default.trips",
}


def ensure_rows(admin: Principal) -> None:
    """Puts back the rows that an earlier example may have renamed or deleted."""
    catalog, _ = Catalog.objects.get_or_create(name="unity", defaults={"owner": "admin", "created_by": "admin"})
    schema, _ = Schema.objects.get_or_create(catalog=catalog, name="default",
                                             defaults={"owner": "admin", "created_by": "admin"})
    if not Table.objects.filter(schema=schema, name="trips").exists():
        tables.create_table(
            caller=admin, name="trips", catalog_name="unity", schema_name="default", table_type="EXTERNAL",
            data_source_format="PARQUET", storage_location="file:///tmp/ucweb-tests/unity/default/trips",
            columns=[
                {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0},
                {"name": "day", "type_name": "DATE", "type_text": "date", "position": 1, "partition_index": 0},
            ],
            comment="fuzzing target",
        )
    principals.ensure_principal(name="bob")


def aim_at_real_rows(case) -> None:
    """Points the names of a generated request at rows that exist, keeping every other generated
    value: without this nearly every request would end in a 404 before reaching the code under
    test."""
    path = case.operation.path
    params = case.path_parameters or {}
    if path.endswith("/catalogs/{name}"):
        params["name"] = "unity"
    elif path.endswith("/schemas/{full_name}"):
        params["full_name"] = "unity.default"
    elif path.endswith("/tables/{full_name}"):
        params["full_name"] = "unity.default.trips"
    elif "{catalog}" in path:  # the Delta REST API
        params["catalog"] = "unity"
        params["schema"] = "default"
        if "{table}" in path:
            params["table"] = "trips"
    elif "securable_type" in params:
        if params["securable_type"] not in REAL_FULL_NAMES:
            params["securable_type"] = "table"
        params["full_name"] = REAL_FULL_NAMES[params["securable_type"]]
    if isinstance(case.query, dict):
        for key, value in (("catalog_name", "unity"), ("schema_name", "default")):
            if key in case.query:
                case.query[key] = value
    if isinstance(case.body, dict):
        for key, value in (("catalog_name", "unity"), ("schema_name", "default")):
            if key in case.body:
                case.body[key] = value
        for change in case.body.get("changes") or []:
            if isinstance(change, dict) and "principal" in change:
                change["principal"] = "bob"


@pytest.fixture
def fuzz_server(live_server, bootstrap, make_token):
    """A live server with real rows, and a metastore admin's token."""
    ensure_rows(Principal.objects.get(name="admin"))
    return live_server.url, make_token("admin", admin=True)


@pytest.fixture
def api_schema(fuzz_server):
    base_url, _ = fuzz_server
    return schemathesis.openapi.from_url(f"{base_url}/api/schema/?format=json")


def kept_session() -> requests.Session:
    """One kept HTTP connection for the fuzzer's requests. Without a session of its own,
    schemathesis opens a connection for every request, and the live server a thread and a
    database connection for each: a third of the test's time went to connecting. The session
    keeps no cookies, so each request still stands alone."""
    session = requests.Session()
    session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    return session


def half_of_the_cases(case) -> bool:
    """A choice that depends only on the generated request, so that Hypothesis replays a failing
    example the same way."""
    data = repr((case.operation.label, case.path_parameters, case.query, case.body))
    return zlib.crc32(data.encode("utf-8", "surrogatepass")) % 2 == 0


class Runner:
    def __init__(self, base_url: str, token: str):
        self.base_url, self.token = base_url, token
        self.admin = Principal.objects.get(name="admin")
        self.session = kept_session()

    def __call__(self, case, *, aim: bool = False) -> None:
        if aim and half_of_the_cases(case):
            ensure_rows(self.admin)
            aim_at_real_rows(case)
        response = case.call(base_url=self.base_url, session=self.session,
                             headers={"Authorization": f"Bearer {self.token}"}, timeout=30)
        case.validate_response(response, checks=[not_a_server_error])
        check_error_envelope(response)


@pytest.fixture
def run(fuzz_server):
    runner = Runner(*fuzz_server)
    yield runner
    runner.session.close()


namespace_api = schemathesis.pytest.from_fixture("api_schema").include(path_regex=NAMESPACE_PATHS)
other_apis = schemathesis.pytest.from_fixture("api_schema").exclude(path_regex=NAMESPACE_PATHS)


@namespace_api.parametrize()
@fuzz_settings(max_examples=10)
def test_namespace_api_has_no_server_errors(case, run):
    run(case, aim=True)


@other_apis.parametrize()
@fuzz_settings(max_examples=6)
def test_other_apis_have_no_server_errors(case, run):
    run(case)


def test_the_schema_covers_the_namespace_api(api_schema):
    """The fuzzer only reaches what the document describes: every routed namespace operation."""
    operations = {(method.upper(), path) for path, item in api_schema.raw_schema["paths"].items()
                  for method in item if method in {"get", "post", "patch", "put", "delete"}}
    expected = {
        ("GET", f"{UC}/catalogs"), ("POST", f"{UC}/catalogs"),
        ("GET", f"{UC}/catalogs/{{name}}"), ("PATCH", f"{UC}/catalogs/{{name}}"),
        ("DELETE", f"{UC}/catalogs/{{name}}"),
        ("GET", f"{UC}/schemas"), ("POST", f"{UC}/schemas"),
        ("GET", f"{UC}/schemas/{{full_name}}"), ("PATCH", f"{UC}/schemas/{{full_name}}"),
        ("DELETE", f"{UC}/schemas/{{full_name}}"),
        ("GET", f"{UC}/tables"), ("POST", f"{UC}/tables"),
        ("GET", f"{UC}/tables/{{full_name}}"), ("DELETE", f"{UC}/tables/{{full_name}}"),
        ("GET", f"{UC}/permissions/{{securable_type}}/{{full_name}}"),
        ("PATCH", f"{UC}/permissions/{{securable_type}}/{{full_name}}"),
        ("GET", f"{UC}/metastore_summary"),
    }
    assert expected <= operations, sorted(expected - operations)
