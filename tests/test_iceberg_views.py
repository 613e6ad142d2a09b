"""Iceberg views through pyiceberg's RestCatalog against a live server on file:// storage, with
the requests pyiceberg has no client for (replacing and renaming a view); and how views and
tables are told apart: HEAD on their routes, and the Iceberg tables and views in the Unity
Catalog API."""

from __future__ import annotations

import uuid

import pytest
from pyiceberg.exceptions import NoSuchViewError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from catalog.models import Table
from tests.helpers import UC
from tests.pyiceberg_support import error_of, file_only, new_table
from tests.pyiceberg_support import catalog, connect, http, storage  # noqa: F401 - the fixtures

pytestmark = pytest.mark.django_db(transaction=True)


# -- views ------------------------------------------------------------------------------------------
def _view_version(sql: str) -> ViewVersion:
    return ViewVersion(
        version_id=1, schema_id=0, summary={"engine-name": "pyiceberg"},
        representations=[SQLViewRepresentation(type="sql", sql=sql, dialect="spark")],
        default_namespace=["default"],
    )


@file_only
def test_views(catalog, http):
    new_table(catalog)
    view_schema = Schema(NestedField(1, "id", LongType(), required=False))
    catalog.create_view(("default", "recent"), view_schema, _view_version("SELECT id FROM events"),
                        properties={"comment": "recent ids"})
    assert catalog.list_views("default") == [("default", "recent")]
    assert ("default", "recent") not in catalog.list_tables("default")
    assert catalog.view_exists(("default", "recent")) and not catalog.view_exists(("default", "events"))
    assert not catalog.table_exists(("default", "recent"))
    view = catalog.load_view(("default", "recent"))
    assert view.metadata.properties["comment"] == "recent ids"
    row = Table.objects.get(name="recent")
    assert row.table_type == "VIEW" and row.view_definition == "SELECT id FROM events"

    loaded = http("GET", "/namespaces/default/views/recent").json()
    replaced = http("POST", "/namespaces/default/views/recent", {
        "requirements": [{"type": "assert-view-uuid", "uuid": loaded["metadata"]["view-uuid"]}],
        "updates": [
            {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
                {"id": 1, "name": "id", "type": "long", "required": False},
                {"id": 2, "name": "amount", "type": "double", "required": False}]}},
            {"action": "add-view-version", "view-version": {
                "version-id": 2, "schema-id": -1, "timestamp-ms": 1735689600000, "summary": {},
                "representations": [{"type": "sql", "sql": "SELECT id, amount FROM events", "dialect": "spark"}],
                "default-namespace": ["default"]}},
            {"action": "set-current-view-version", "view-version-id": -1},
        ],
    })
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["metadata-location"] != loaded["metadata-location"]
    view = catalog.load_view(("default", "recent"))
    assert view.metadata.current_version_id == 2
    assert view.metadata.versions[-1].representations[0].root.sql == "SELECT id, amount FROM events"
    assert Table.objects.get(name="recent").view_definition == "SELECT id, amount FROM events"

    stale = http("POST", "/namespaces/default/views/recent", {
        "requirements": [{"type": "assert-view-uuid", "uuid": str(uuid.uuid4())}], "updates": []})
    assert error_of(stale) == (409, "CommitFailedException")
    unknown = http("POST", "/namespaces/default/views/recent", {"updates": [{"action": "drop-everything"}]})
    assert error_of(unknown) == (400, "BadRequestException")

    renamed = http("POST", "/views/rename", {"source": {"namespace": ["default"], "name": "recent"},
                                              "destination": {"namespace": ["default"], "name": "latest"}})
    assert renamed.status_code == 204, renamed.text
    assert catalog.list_views("default") == [("default", "latest")]
    assert error_of(http("POST", "/views/rename", {"source": {"namespace": ["default"], "name": "recent"},
                                                   "destination": {"namespace": ["default"], "name": "x"}})) == (
        404, "NoSuchViewException")
    assert error_of(http("POST", "/views/rename", {"source": {"namespace": ["default"], "name": "latest"},
                                                   "destination": {"namespace": ["default"], "name": "events"}})) == (
        409, "AlreadyExistsException")

    catalog.drop_view(("default", "latest"))
    assert not catalog.view_exists(("default", "latest"))
    with pytest.raises(NoSuchViewError):
        catalog.drop_view(("default", "latest"))
    with pytest.raises(NoSuchViewError):
        catalog.drop_view(("default", "recent"))
    with pytest.raises(NoSuchViewError):
        catalog.load_view(("default", "recent"))
    assert catalog.table_exists(("default", "events"))


# -- views beside tables: HEAD routes, the Unity Catalog API ----------------------------------------
@file_only
def test_head_routes(catalog, http):
    new_table(catalog)
    catalog.create_view(("default", "v"), Schema(NestedField(1, "id", LongType())), _view_version("SELECT 1"))
    for path, status in [
        ("/namespaces/default", 204), ("/namespaces/nope", 404),
        ("/namespaces/default/tables/events", 204), ("/namespaces/default/tables/nope", 404),
        ("/namespaces/nope/tables/events", 404), ("/namespaces/default/tables/v", 404),
        ("/namespaces/default/views/v", 204), ("/namespaces/default/views/events", 404),
    ]:
        response = http("HEAD", path)
        assert (path, response.status_code) == (path, status) and response.content == b""
    missing_warehouse = http.root("HEAD", "/nowhere/namespaces/default")
    assert missing_warehouse.status_code == 404


@file_only
def test_iceberg_tables_in_the_unity_catalog_api(catalog, admin_client):
    new_table(catalog, properties={"owner.team": "growth"})
    catalog.create_view(("default", "v"), Schema(NestedField(1, "id", LongType())), _view_version("SELECT 1"))
    listed = admin_client.get(f"{UC}/tables", {"catalog_name": "unity", "schema_name": "default"}).json()["tables"]
    by_name = {t["name"]: t for t in listed}
    events = by_name["events"]
    assert events["data_source_format"] == "ICEBERG" and events["table_type"] == "MANAGED"
    assert events["storage_location"].endswith(f"/tables/{events['table_id']}")
    assert events["properties"]["owner.team"] == "growth"
    assert [(c["name"], c["type_name"], c["nullable"], c["position"], c["partition_index"])
            for c in events["columns"]] == [
        ("id", "LONG", False, 0, None), ("ts", "TIMESTAMP_NTZ", True, 1, 0),
        ("category", "STRING", True, 2, None), ("amount", "DOUBLE", True, 3, None)]
    assert by_name["v"]["table_type"] == "VIEW"
    got = admin_client.get(f"{UC}/tables/unity.default.events").json()
    assert got["table_id"] == events["table_id"] == str(catalog.load_table(("default", "events")).metadata.table_uuid)
