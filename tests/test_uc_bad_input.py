"""Bad input to the Unity Catalog namespace API: every request below is answered with a 4xx in the
UC envelope ({"error_code", "message", "details"}), never a 5xx, and changes nothing. Unknown JSON
fields are ignored."""

from __future__ import annotations

import base64
import json
import uuid
from urllib.parse import quote

import pytest
from django.core.management import call_command

from catalog.choices import AuditOutcome
from catalog.models import AuditEvent, Catalog, Column, Grant, Metastore, Principal, Schema, Table
from tests.conftest import bearer_client, token_for
from tests.helpers import UC, external_table_body, rows


@pytest.fixture(scope="module")
def admin_token(module_db, django_db_blocker):
    """unity.default (bootstrap), catalog shop, schema shop.sales, table shop.sales.trips (two
    columns), principal bob with USE CATALOG on shop: built once for the module."""
    with django_db_blocker.unblock():
        call_command("bootstrap", verbosity=0)
        token = token_for("admin", admin=True)
        admin_client = bearer_client(token)
        token_for("bob")
        for method, path, body in [
            ("post", "/catalogs", {"name": "shop", "comment": "original", "properties": {"k": "v"}}),
            ("post", "/schemas", {"name": "sales", "catalog_name": "shop", "comment": "original"}),
            ("post", "/tables", table_body()),
            ("patch", "/permissions/catalog/shop", {"changes": [{"principal": "bob", "add": ["USE CATALOG"]}]}),
        ]:
            response = getattr(admin_client, method)(f"{UC}{path}", body, format="json")
            assert response.status_code == 200, response.content
    return token


@pytest.fixture
def world(db, admin_token):
    """The admin's client on the module's shared catalog shop (see admin_token)."""
    return bearer_client(admin_token)


def table_body(**overrides) -> dict:
    """An EXTERNAL table; each body gets a folder of its own, since no two tables may share one."""
    fields = {"name": "trips", "comment": "trips", "properties": {"k": "v"}, **overrides}
    return external_table_body(fields.pop("name"), f"file:///tmp/ucweb-tests/{uuid.uuid4().hex}", **fields)


def column(**overrides) -> dict:
    return {"name": "c", "type_name": "INT", "type_text": "int", "position": 0, **overrides}


def snapshot() -> dict:
    counts = {m.__name__: m.objects.count() for m in (Catalog, Schema, Table, Column, Grant)}
    # A refused request may be audited as FAILED or DENIED, never as a success.
    successes = AuditEvent.objects.filter(outcome=AuditOutcome.SUCCESS).count()
    return {"counts": counts, "rows": rows(Metastore, Principal, Catalog, Schema, Table, Column, Grant),
            "audited successes": successes}


def send(client, method: str, path: str, body=None, *, raw: bytes | str | None = None,
         content_type: str = "application/json"):
    url = f"{UC}{path}"
    if raw is not None:
        return getattr(client, method)(url, data=raw, content_type=content_type)
    if body is None:
        return getattr(client, method)(url)
    return getattr(client, method)(url, data=json.dumps(body), content_type=content_type)


def assert_refused(response, before, status=400, error_code=None):
    assert 400 <= response.status_code < 500, (response.status_code, response.content)
    if status is not None:
        assert response.status_code == status, (response.status_code, response.content)
    body = response.json()
    assert set(body) == {"error_code", "message", "details"}, body
    assert isinstance(body["error_code"], str) and body["error_code"]
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["details"], list)
    if error_code is not None:
        assert body["error_code"] == error_code, body
    assert snapshot() == before, "a refused request changed the database"


BAD_NAMES = [
    5, 1.5, True, None, [], {}, ["shop"], {"name": "x"},
    "", " ", "a.b", "a/b", "a b", " a", "a\tb", "a\nb", "a\u0000b", "a\x7fb", "x" * 256, "x" * 300, ".", "..",
]
BAD_PROPERTIES = ["x", 5, True, [], ["a"], {"a": 1}, {"a": None}, {"a": True}, {"a": {"b": "c"}}, {"a": ["b"]}]
BAD_COMMENTS = [[], ["x"], 5, 1.5, True, {}, {"a": "b"}]
BAD_URLS = [5, True, [], {}, "", "not a url", "ftp://host/x", "s3://", "s3:///no-bucket", "s3://[bad", "http://[::1"]
# Bodies that are valid JSON but not an object, and bodies that are not JSON at all.
NOT_AN_OBJECT = ["[]", "[1, 2]", '[{"name": "x"}]', '"a string"', "5", "true", "false", "1.5"]
MALFORMED = ["{", "}", "{'name': 'x'}", '{"name": "x",}', '{"name": x}', "name=x", "nul", "\u00ff\u00fe", "[" * 100_000,
             '{"name": "x"} trailing', '{"name": "\\ud800"}']


def _case_id(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} chars)"


# -- catalogs ---------------------------------------------------------------------------------------
CREATE_CATALOG_BAD = (
    [pytest.param({}, id="missing name"), pytest.param({"comment": "c"}, id="only comment")]
    + [pytest.param({"name": v}, id=f"name={_case_id(v)}") for v in BAD_NAMES]
    + [pytest.param({"name": "new", "properties": v}, id=f"properties={_case_id(v)}") for v in BAD_PROPERTIES]
    + [pytest.param({"name": "new", "comment": v}, id=f"comment={_case_id(v)}") for v in BAD_COMMENTS]
    + [pytest.param({"name": "new", "storage_root": v}, id=f"storage_root={_case_id(v)}") for v in BAD_URLS]
    + [pytest.param({"name": "new", "comment": "a\u0000b"}, id="NUL in comment")]
    + [pytest.param({"name": "new", "properties": {"a": "b\u0000"}}, id="NUL in a property value")]
    + [pytest.param({"name": "new", "properties": {"a\u0000": "b"}}, id="NUL in a property key")]
)


def test_create_catalog_that_exists(world):
    before = snapshot()
    assert_refused(send(world, "post", "/catalogs", {"name": "shop"}), before, 400, "CATALOG_ALREADY_EXISTS")


UPDATE_BAD = (
    [pytest.param({"new_name": v}, id=f"new_name={_case_id(v)}") for v in BAD_NAMES if v is not None]
    + [pytest.param({"properties": v}, id=f"properties={_case_id(v)}") for v in BAD_PROPERTIES]
    + [pytest.param({"comment": v}, id=f"comment={_case_id(v)}") for v in BAD_COMMENTS]
    + [pytest.param({"owner": v}, id=f"owner={_case_id(v)}") for v in (5, True, [], {}, "")]
    + [pytest.param({"comment": "fine", "properties": "x"}, id="good comment, bad properties")]
    + [pytest.param({"new_name": "fine", "comment": 5}, id="good new_name, bad comment")]
    + [pytest.param({"comment": "a\u0000"}, id="NUL in comment")]
)


def test_update_catalog_conflicts(world):
    before = snapshot()
    assert_refused(send(world, "patch", "/catalogs/shop", {"new_name": "unity"}), before, 400,
                   "CATALOG_ALREADY_EXISTS")
    assert_refused(send(world, "patch", "/catalogs/shop", {"owner": "nobody-by-that-name"}), before, 404,
                   "PRINCIPAL_DOES_NOT_EXIST")
    assert_refused(send(world, "patch", "/catalogs/nope", {"comment": "x"}), before, 404, "CATALOG_DOES_NOT_EXIST")


# -- schemas ----------------------------------------------------------------------------------------
CREATE_SCHEMA_BAD = (
    [pytest.param({}, id="empty"), pytest.param({"name": "new"}, id="missing catalog_name"),
     pytest.param({"catalog_name": "shop"}, id="missing name")]
    + [pytest.param({"name": v, "catalog_name": "shop"}, id=f"name={_case_id(v)}") for v in BAD_NAMES]
    + [pytest.param({"name": "new", "catalog_name": v}, id=f"catalog_name={_case_id(v)}") for v in BAD_NAMES]
    + [pytest.param({"name": "new", "catalog_name": "shop", "properties": v}, id=f"properties={_case_id(v)}")
       for v in BAD_PROPERTIES]
    + [pytest.param({"name": "new", "catalog_name": "shop", "comment": v}, id=f"comment={_case_id(v)}")
       for v in BAD_COMMENTS]
    + [pytest.param({"name": "new", "catalog_name": "shop", "storage_root": v}, id=f"storage_root={_case_id(v)}")
       for v in BAD_URLS]
)


def sent_to(path: str, bodies: list) -> list:
    """The cases of `bodies`, each with the path it is sent to."""
    return [pytest.param(path, *case.values, id=f"{path}: {case.id}", marks=case.marks) for case in bodies]


@pytest.mark.parametrize("path, body", [*sent_to("/catalogs", CREATE_CATALOG_BAD),
                                        *sent_to("/schemas", CREATE_SCHEMA_BAD)])
def test_create_rejects(world, path, body):
    before = snapshot()
    assert_refused(send(world, "post", path, body), before)
    assert not Catalog.objects.filter(name="new").exists()
    assert not Schema.objects.filter(name="new").exists()


@pytest.mark.parametrize("path, body", [*sent_to("/catalogs/shop", UPDATE_BAD),
                                        *sent_to("/schemas/shop.sales", UPDATE_BAD)])
def test_update_rejects(world, path, body):
    before = snapshot()
    assert_refused(send(world, "patch", path, body), before)


def test_create_schema_conflicts(world):
    before = snapshot()
    # 409, as Unity Catalog OSS answers: Sail's CREATE SCHEMA IF NOT EXISTS takes a 409 as "exists".
    assert_refused(send(world, "post", "/schemas", {"name": "sales", "catalog_name": "shop"}), before, 409,
                   "SCHEMA_ALREADY_EXISTS")
    assert_refused(send(world, "post", "/schemas", {"name": "new", "catalog_name": "nope"}), before, 404,
                   "CATALOG_DOES_NOT_EXIST")


def test_update_schema_conflicts(world):
    send(world, "post", "/schemas", {"name": "hr", "catalog_name": "shop"})
    before = snapshot()
    assert_refused(send(world, "patch", "/schemas/shop.sales", {"new_name": "hr"}), before, 409,
                   "SCHEMA_ALREADY_EXISTS")
    assert_refused(send(world, "patch", "/schemas/shop.sales", {"owner": "nobody-by-that-name"}), before, 404,
                   "PRINCIPAL_DOES_NOT_EXIST")


# -- tables -----------------------------------------------------------------------------------------
BAD_COLUMNS = [
    "x", 5, True, {}, {"name": "c"}, [5], ["c"], [None], [[]], [{}],
    [{"name": 3}], [{"name": None}], [{"name": ""}], [{"name": ["c"]}],
    [column(type_name="NOPE")], [column(type_name=5)], [column(type_name="int")],
    [column(position="a")], [column(position=1.5)], [column(position=True)], [column(position=2**40)],
    [column(position=-(2**40))], [column(nullable="yes")], [column(nullable=1)], [column(nullable="false")],
    [column(comment=[])], [column(comment=5)], [column(type_text=5)], [column(type_json={})],
    [column(type_precision="10")], [column(type_scale=1.5)], [column(partition_index=True)],
    [column(type_interval_type=5)],
    [column(name="c"), column(name="c", position=1)],
    [column(name="c"), column(name="C", position=1)],
    [column(name="a", position=0), column(name="b", position=0)],
    [column(name="x" * 256)], [column(name="x" * 300)], [column(type_interval_type="x" * 300)],
    [column(name="a\u0000b")], [column(comment="a\u0000b")],
]


def _table_cases():
    yield pytest.param({}, id="empty")
    for key in ("name", "catalog_name", "schema_name", "table_type"):
        body = table_body(name="new")
        body.pop(key)
        yield pytest.param(body, id=f"missing {key}")
    for key in ("name", "catalog_name", "schema_name"):
        for value in BAD_NAMES:
            yield pytest.param(table_body(**{"name": "new", key: value}), id=f"{key}={_case_id(value)}")
    for value in ("NOPE", "external", 5, None, [], {}):
        yield pytest.param(table_body(name="new", table_type=value), id=f"table_type={_case_id(value)}")
    for value in ("NOPE", "parquet", 5, [], {}):
        yield pytest.param(table_body(name="new", data_source_format=value), id=f"data_source_format={value!r}")
    for value in BAD_COLUMNS:
        yield pytest.param(table_body(name="new", columns=value), id=f"columns={_case_id(value)}")
    for value in BAD_PROPERTIES:
        yield pytest.param(table_body(name="new", properties=value), id=f"properties={_case_id(value)}")
    for value in BAD_COMMENTS:
        yield pytest.param(table_body(name="new", comment=value), id=f"comment={_case_id(value)}")
    for value in BAD_URLS + [None]:
        yield pytest.param(table_body(name="new", storage_location=value), id=f"storage_location={_case_id(value)}")
    yield pytest.param(table_body(name="new", data_source_format=None), id="EXTERNAL without data_source_format")
    yield pytest.param(table_body(name="new", table_type="VIEW"), id="VIEW without view_definition")
    yield pytest.param(table_body(name="new", table_type="VIEW", view_definition=5), id="view_definition=5")
    yield pytest.param(table_body(name="new", table_type="VIEW", view_definition="select 1",
                                  view_dependencies="x"), id="view_dependencies='x'")
    yield pytest.param(table_body(name="new", schema_name="nope"), id="schema does not exist")
    yield pytest.param(table_body(), id="table exists")


@pytest.mark.parametrize("body", list(_table_cases()))
def test_create_table_rejects(world, body):
    before = snapshot()
    response = send(world, "post", "/tables", body)
    assert_refused(response, before, 404 if body.get("schema_name") == "nope" else 400)
    assert not Table.objects.filter(name="new").exists()


# -- full names in paths ------------------------------------------------------------------------------
BAD_PATHS = [
    # (method, path, status)
    ("get", "/schemas/shop", 400),
    # Since namespaces nest, more parts name a nested schema (or a table in one): well-formed, so
    # missing ones answer 404.
    ("get", "/schemas/shop.sales.trips", 404),
    ("get", "/schemas/shop.sales..trips", 400),
    ("get", "/schemas/shop.sales.", 400),
    ("get", "/schemas/.sales", 400),
    ("get", "/schemas/shop.", 400),
    ("get", "/schemas/shop..sales", 400),
    ("get", "/tables/shop.sales", 400),
    ("get", "/tables/shop.sales.trips.x", 404),
    ("get", "/tables/shop.sales.trips..x", 400),
    ("get", "/tables/shop..trips", 400),
    ("delete", "/tables/shop.sales", 400),
    ("patch", "/schemas/shop", 400),
    ("delete", "/schemas/a.b.c", 404),
    ("delete", "/schemas/a..c", 400),
    ("get", "/catalogs/nope", 404),
    ("get", "/catalogs/" + "x" * 300, 404),
    ("get", "/schemas/shop.nope", 404),
    ("get", "/schemas/nope.sales", 404),
    ("get", "/tables/shop.sales.nope", 404),
    ("get", "/tables/shop.nope.trips", 404),
    ("delete", "/catalogs/nope", 404),
    ("delete", "/tables/shop.sales.nope", 404),
    # NUL and other control characters, plain and percent-encoded once more
    ("get", "/catalogs/a%00b", None),
    ("patch", "/catalogs/a%00b", None),
    ("delete", "/catalogs/a%00b", None),
    ("get", "/schemas/shop.a%00b", None),
    ("get", "/schemas/shop.a%2500b", None),
    ("get", "/tables/shop.sales.a%00b", None),
    ("get", "/tables/shop.sales.a%2500b", None),
    ("delete", "/tables/shop.sales.a%2500b", None),
    ("get", "/permissions/catalog/a%00b", None),
    ("get", "/permissions/table/shop.sales.a%2500b", None),
    ("get", "/catalogs/%ff%fe", 404),
]


@pytest.mark.parametrize("method, path, status", BAD_PATHS, ids=[f"{m} {p[:40]}" for m, p, _ in BAD_PATHS])
def test_bad_full_names(world, method, path, status):
    before = snapshot()
    body = {"comment": "x"} if method == "patch" else None
    assert_refused(send(world, method, path, body), before, status)


# -- list parameters ---------------------------------------------------------------------------------
LISTS = ["/catalogs", "/schemas?catalog_name=shop", "/tables?catalog_name=shop&schema_name=sales"]
BAD_PAGING = [
    "max_results=-1", "max_results=abc", "max_results=1.5", "max_results=", "max_results=%00",
    "max_results=99999999999999999999999999", "max_results=-99999999999999999999",
    "page_token=!!!", "page_token=zzzz", "page_token=a", "page_token=%00", "page_token=AAAA",
    f"page_token={base64.urlsafe_b64encode(b'a' + bytes([0]) + b'b').decode()}",
    "page_token=%ff%fe", "page_token=====",
]


@pytest.mark.parametrize("query", BAD_PAGING)
@pytest.mark.parametrize("path", LISTS, ids=["catalogs", "schemas", "tables"])
def test_bad_paging(world, path, query):
    before = snapshot()
    separator = "&" if "?" in path else "?"
    response = send(world, "get", f"{path}{separator}{query}")
    if query in ("max_results=", "max_results=99999999999999999999999999"):
        # Empty means the default and a huge page is capped at the server's maximum.
        assert response.status_code == 200, response.content
        return
    assert_refused(response, before, 400, "INVALID_PARAMETER_VALUE")


@pytest.mark.parametrize("path", [
    "/schemas", "/schemas?catalog_name=", "/tables", "/tables?catalog_name=shop", "/tables?schema_name=sales",
    "/tables?catalog_name=&schema_name=sales", "/schemas?catalog_name=a%00b",
    "/tables?catalog_name=shop&schema_name=a%00b", "/schemas?catalog_name=nope",
    "/tables?catalog_name=shop&schema_name=nope",
])
def test_bad_list_filters(world, path):
    before = snapshot()
    response = send(world, "get", path)
    assert_refused(response, before, 404 if "nope" in path else 400)


@pytest.mark.parametrize("value", ["maybe", "yes", "2", "%00", "truee", "[]"])
@pytest.mark.parametrize("path", ["/catalogs/shop", "/schemas/shop.sales"])
def test_bad_force(world, path, value):
    before = snapshot()
    assert_refused(send(world, "delete", f"{path}?force={value}"), before, 400, "INVALID_PARAMETER_VALUE")


def test_force_is_needed_to_drop_what_is_not_empty(world):
    before = snapshot()
    assert_refused(send(world, "delete", "/catalogs/shop"), before, 400, "CATALOG_NOT_EMPTY")
    assert_refused(send(world, "delete", "/catalogs/shop?force=false"), before, 400, "CATALOG_NOT_EMPTY")
    assert_refused(send(world, "delete", "/schemas/shop.sales"), before, 400, "SCHEMA_NOT_EMPTY")


# -- permissions --------------------------------------------------------------------------------------
@pytest.mark.parametrize("securable_type", [
    "nope", "CATALOG", "Catalog", "tables", "share", "provider", "recipient", "connection", "storage_credential",
    "%00", "x" * 300, "catalog.schema",
])
@pytest.mark.parametrize("method", ["get", "patch"])
def test_unknown_securable_types(world, method, securable_type):
    before = snapshot()
    body = {"changes": [{"principal": "bob", "add": ["SELECT"]}]} if method == "patch" else None
    assert_refused(send(world, method, f"/permissions/{securable_type}/shop", body), before, 400,
                   "INVALID_PARAMETER_VALUE")


def _change(**overrides):
    return {"changes": [{"principal": "bob", "add": ["SELECT"], **overrides}]}


BAD_CHANGES = [
    ("catalog/shop", {"changes": "x"}, 400),
    ("catalog/shop", {"changes": {}}, 400),
    ("catalog/shop", {"changes": None}, 400),
    ("catalog/shop", {"changes": 5}, 400),
    ("catalog/shop", {"changes": [5]}, 400),
    ("catalog/shop", {"changes": ["bob"]}, 400),
    ("catalog/shop", {"changes": [None]}, 400),
    ("catalog/shop", _change(principal=5), 400),
    ("catalog/shop", _change(principal=""), 400),
    ("catalog/shop", _change(principal=None), 400),
    ("catalog/shop", _change(principal=["bob"]), 400),
    ("catalog/shop", _change(add="SELECT"), 400),
    ("catalog/shop", _change(add=[5]), 400),
    ("catalog/shop", _change(add=[None]), 400),
    ("catalog/shop", _change(add=[["SELECT"]]), 400),
    ("catalog/shop", _change(add={"SELECT": True}), 400),
    ("catalog/shop", _change(add=["NOPE"]), 400),
    ("catalog/shop", _change(add=["SELECT", "NOPE"]), 400),
    ("catalog/shop", _change(add=[""]), 400),
    ("catalog/shop", _change(add=["ALL PRIVILEGES"]), 400),
    ("catalog/shop", _change(add=["SELECT\u0000"]), 400),
    ("catalog/shop", _change(remove=["NOPE"]), 400),
    ("catalog/shop", _change(remove="SELECT"), 400),
    ("catalog/shop", _change(add=["CREATE CATALOG"]), 400),
    ("catalog/shop", _change(add=["READ FILES"]), 400),
    ("schema/shop.sales", _change(add=["USE CATALOG"]), 400),
    ("table/shop.sales.trips", _change(add=["USE CATALOG"]), 400),
    ("table/shop.sales.trips", _change(add=["USE SCHEMA"]), 400),
    ("table/shop.sales.trips", _change(add=["CREATE TABLE"]), 400),
    ("metastore/x", _change(add=["SELECT"]), 400),
    ("metastore/x", _change(add=["USE CATALOG"]), 400),
    ("catalog/shop", _change(principal="nobody-by-that-name"), 404),
    ("catalog/shop", _change(principal="a\u0000b"), 400),
    ("catalog/shop", {"changes": [{"principal": "bob", "add": ["SELECT"]}, {"principal": "ghost", "add": ["SELECT"]}]},
     404),
    ("catalog/nope", _change(), 404),
    ("schema/shop.nope", _change(), 404),
    ("table/shop.sales.nope", _change(), 404),
    ("schema/shop", _change(), 400),
    ("table/shop.sales", _change(), 400),
]


@pytest.mark.parametrize("target, body, status", BAD_CHANGES,
                         ids=[f"{t} {_case_id(b['changes'])}" for t, b, _ in BAD_CHANGES])
def test_bad_permission_changes(world, target, body, status):
    before = snapshot()
    assert_refused(send(world, "patch", f"/permissions/{target}", body), before, status)


@pytest.mark.parametrize("query", ["principal=%00", "principal=a%00b"])
def test_bad_permission_filters(world, query):
    before = snapshot()
    assert_refused(send(world, "get", f"/permissions/catalog/shop?{query}"), before, 400)


# -- bodies that are not a JSON object -------------------------------------------------------------------
MUTATIONS = [
    ("post", "/catalogs"), ("patch", "/catalogs/shop"), ("post", "/schemas"), ("patch", "/schemas/shop.sales"),
    ("post", "/tables"), ("patch", "/permissions/catalog/shop"),
]
MUTATION_IDS = [f"{m} {p}" for m, p in MUTATIONS]


@pytest.mark.parametrize("raw", NOT_AN_OBJECT + MALFORMED, ids=[_case_id(r) for r in NOT_AN_OBJECT + MALFORMED])
@pytest.mark.parametrize("method, path", MUTATIONS, ids=MUTATION_IDS)
def test_bodies_that_are_not_an_object(world, method, path, raw):
    before = snapshot()
    assert_refused(send(world, method, path, raw=raw), before, 400, "INVALID_PARAMETER_VALUE")


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", "application/octet-stream"])
@pytest.mark.parametrize("method, path", MUTATIONS, ids=MUTATION_IDS)
def test_invalid_utf8_body(world, method, path, content_type):
    before = snapshot()
    response = send(world, method, path, raw=b'{"name": "\xff\xfe"}', content_type=content_type)
    assert_refused(response, before, 400)


@pytest.mark.parametrize("method, path", [("post", "/catalogs"), ("post", "/schemas"), ("post", "/tables")],
                         ids=["catalog", "schema", "table"])
@pytest.mark.parametrize("raw", ["", "null", "{}"], ids=["no body", "null", "empty object"])
def test_empty_bodies_miss_required_fields(world, method, path, raw):
    before = snapshot()
    assert_refused(send(world, method, path, raw=raw), before, 400, "INVALID_PARAMETER_VALUE")


@pytest.mark.parametrize("method, path", MUTATIONS, ids=MUTATION_IDS)
def test_a_10_mb_body(world, method, path):
    before = snapshot()
    events = AuditEvent.objects.count()
    raw = json.dumps({"name": "big", "catalog_name": "shop", "comment": "x" * (10 * 1024 * 1024)})
    response = send(world, method, path, raw=raw)
    assert response.status_code in (400, 413), response.content
    assert_refused(response, before, None)
    assert AuditEvent.objects.count() <= events + 1


# -- unknown fields are ignored -----------------------------------------------------------------------
EXTRA = {"unknown": 1, "nested": {"a": [1, {"b": None}]}, "full_name": "ignored.too", "owner_id": 5}


def test_unknown_fields_are_ignored(world, make_client):
    def ok(method, path, body):
        response = send(world, method, path, {**body, **EXTRA})
        assert response.status_code == 200, response.content
        return response.json()

    assert ok("post", "/catalogs", {"name": "newcat"})["name"] == "newcat"
    assert ok("patch", "/catalogs/newcat", {"comment": "c"})["comment"] == "c"
    assert ok("post", "/schemas", {"name": "news", "catalog_name": "newcat"})["full_name"] == "newcat.news"
    assert ok("patch", "/schemas/newcat.news", {"comment": "c"})["comment"] == "c"
    columns = [{**column(name="a"), "extra": True, "mask": {"x": 1}}]
    table = ok("post", "/tables", table_body(name="newt", catalog_name="newcat", schema_name="news", columns=columns))
    assert [c["name"] for c in table["columns"]] == ["a"]
    change = {"principal": "bob", "add": ["USE CATALOG"], "why": "because"}
    assert ok("patch", "/permissions/catalog/newcat", {"changes": [change]})["privilege_assignments"] == [
        {"principal": "bob", "privileges": ["USE CATALOG"]}]
    assert Catalog.objects.filter(name="newcat").exists() and Table.objects.filter(name="newt").exists()


def test_unknown_query_parameters_are_ignored(world):
    response = send(world, "get", "/catalogs?unknown=1&max_results=1&page_token=")
    assert response.status_code == 200, response.content
    assert len(response.json()["catalogs"]) == 1


def test_null_optional_fields_are_accepted(world):
    response = send(world, "post", "/catalogs", {"name": "newcat", "comment": None, "properties": None,
                                                 "storage_root": None})
    assert response.status_code == 200, response.content
    assert response.json()["properties"] == {}
    response = send(world, "patch", "/catalogs/newcat", {"new_name": None, "owner": None})
    assert response.status_code == 200, response.content
    assert Catalog.objects.filter(name="newcat").exists()


def test_text_plain_json_body_is_accepted(world):
    """Delta and Iceberg clients send JSON with other content types; the parser is lenient."""
    response = send(world, "post", "/catalogs", {"name": "newcat"}, content_type="text/plain")
    assert response.status_code == 200, response.content


def test_method_not_allowed_is_in_the_envelope(world):
    before = snapshot()
    assert_refused(send(world, "put", "/catalogs/shop", {"comment": "x"}), before, 405, "METHOD_NOT_ALLOWED")
    assert_refused(send(world, "patch", "/tables/shop.sales.trips", {"comment": "x"}), before, 405)
    assert_refused(send(world, "delete", "/catalogs"), before, 405)


# -- every name the server accepts can be reached again ---------------------------------------------
TRICKY_NAMES = [
    "café", "数据", "ä" * 255, "a-b_c", "a%2Eb", "a%252Eb", "a%b", "100%", "a+b", "a?b", "a#b", "a&b", "a=b",
    "a;b", "a\\b", "a'b", 'a"b', "a:b", "a@b", "a,b", "a~b", "a*b", "a|b", "a<b>", "`a`", "a\u200bb", "😀",
]


@pytest.mark.parametrize("name", TRICKY_NAMES, ids=[_case_id(n) for n in TRICKY_NAMES])
def test_an_accepted_name_is_reachable_by_its_full_name(world, name):
    """A client quotes a full name once for the URL. Whatever name the server accepts must be found
    again that way, at every level; a name it cannot serve must be refused when created."""
    response = send(world, "post", "/catalogs", {"name": name})
    if response.status_code == 400:
        assert not Catalog.objects.filter(name=name).exists()
        return
    assert response.status_code == 200, response.content
    for method, path, body in [
        ("post", "/schemas", {"name": name, "catalog_name": name}),
        ("post", "/tables", table_body(name=name, catalog_name=name, schema_name=name)),
    ]:
        response = send(world, method, path, body)
        assert response.status_code == 200, response.content

    def quoted(*parts):
        return quote(".".join(parts), safe="")

    assert send(world, "get", f"/catalogs/{quoted(name)}").json()["name"] == name
    assert send(world, "get", f"/schemas/{quoted(name, name)}").json()["name"] == name
    assert send(world, "get", f"/tables/{quoted(name, name, name)}").json()["name"] == name
    assert send(world, "get", f"/schemas?catalog_name={quoted(name)}").json()["schemas"][0]["name"] == name
    listed = send(world, "get", f"/tables?catalog_name={quoted(name)}&schema_name={quoted(name)}").json()
    assert [t["name"] for t in listed["tables"]] == [name]
    response = send(world, "patch", f"/permissions/table/{quoted(name, name, name)}",
                    {"changes": [{"principal": "bob", "add": ["SELECT"]}]})
    assert response.status_code == 200, response.content
    assert send(world, "delete", f"/catalogs/{quoted(name)}?force=true").status_code == 200
    assert not Catalog.objects.filter(name=name).exists()
