"""Bad paths and query parameters to the Unity Catalog namespace API (malformed, missing and
control-character full names, paging, list filters, force), and bad requests to its permissions
endpoint (securable types, changes, filters). Every one is answered with a 4xx in the UC
envelope ({"error_code", "message", "details"}), never a 5xx, and changes nothing."""

from __future__ import annotations

import base64

import pytest

from tests.uc_bad_input_support import _case_id, assert_refused, send, snapshot
from tests.uc_bad_input_support import admin_token, world  # noqa: F401 - fixtures


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
