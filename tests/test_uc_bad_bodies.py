"""Bad bodies to the Unity Catalog namespace API: bad fields in the bodies that create and update
catalogs, schemas and tables, creating what exists, and bodies that are not a JSON object, not
UTF-8, empty or of 10 MB. Every one is answered with a 4xx in the UC envelope
({"error_code", "message", "details"}), never a 5xx, and changes nothing."""

from __future__ import annotations

import json

import pytest

from catalog.models import AuditEvent, Catalog, Schema, Table
from tests.uc_bad_input_support import _case_id, assert_refused, column, send, snapshot, table_body
from tests.uc_bad_input_support import admin_token, world  # noqa: F401 - fixtures


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
