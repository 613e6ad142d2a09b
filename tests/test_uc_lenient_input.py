"""What the Unity Catalog namespace API lets pass: unknown JSON fields and query parameters are
ignored, null optional fields and JSON sent as text/plain are accepted, and every name it accepts
is reached again by its full name; a method it does not serve is answered in the UC envelope."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from catalog.models import Catalog, Table
from tests.uc_bad_input_support import _case_id, assert_refused, column, send, snapshot, table_body
from tests.uc_bad_input_support import admin_token, world  # noqa: F401 - fixtures


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
