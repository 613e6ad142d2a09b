"""The number of SQL queries of each hot path is pinned (tests/query_counts.json), so that an N+1
or an extra round trip fails here. After a deliberate change, update the JSON file."""

import json
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db(transaction=True)
UC = "/api/2.1/unity-catalog"
PINS = json.loads((Path(__file__).parent / "query_counts.json").read_text())


def count(client, method, path, **kwargs):
    call = getattr(client, method)
    call(path, **kwargs)  # warm: the token cache and lazy imports are not what is pinned
    with CaptureQueriesContext(connection) as queries:
        response = call(path, **kwargs)
    assert response.status_code < 300, response.content
    return len(queries.captured_queries)


@pytest.fixture
def managed(delta):
    created = delta.create_table("unity", "default", "events")
    for version in (1, 2):
        delta.append(created.table_id, created.storage_location, version, f"p{version}.parquet")
    return created


@pytest.fixture
def reader(make_client, managed):
    """A principal with grants (not an admin), so that the grant lookups are counted too."""
    from catalog.models import Catalog, Principal
    from catalog.services import grants

    client = make_client("reader")
    admin = Principal.objects.get(name="admin")
    catalog = Catalog.objects.get(name="unity")
    grants.update_assignments(securable_type="catalog", securable=catalog, caller=admin, access=None, changes=[
        {"principal": "reader", "add": ["USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY"], "remove": []}])
    return client


def test_get_table(reader):
    assert count(reader, "get", f"{UC}/tables/unity.default.events") == PINS["uc get table"]


def test_list_tables(reader, delta):
    for index in range(5):
        delta.create_table("unity", "default", f"more_{index}")
    params = {"catalog_name": "unity", "schema_name": "default"}
    assert count(reader, "get", f"{UC}/tables", data=params) == PINS["uc list tables"]


def test_delta_commit(reader, managed):
    versions = iter(range(3, 10))

    def body():
        from tests.delta_client import write_staged

        version = next(versions)
        size = write_staged(managed.storage_location, f"{version}.json")
        return {"table_id": managed.table_id, "table_uri": managed.storage_location,
                "commit_info": {"version": version, "timestamp": 1, "file_name": f"{version}.json",
                                "file_size": size, "file_modification_timestamp": 1}}

    reader.post(f"{UC}/delta/commit", body(), format="json")
    with CaptureQueriesContext(connection) as queries:
        response = reader.post(f"{UC}/delta/commit", body(), format="json")
    assert response.status_code == 200, response.content
    assert len(queries.captured_queries) == PINS["delta commit"]


def test_delta_get_commits(reader, managed):
    params = {"table_id": managed.table_id, "table_uri": managed.storage_location}
    assert count(reader, "get", f"{UC}/delta/commits", data=params) == PINS["delta get commits"]


def test_iceberg_load_table(reader, admin_client, storage_root):
    admin_client.post("/api/catalog/v1/unity/namespaces/default/tables", {
        "name": "ice", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": False}]}}, format="json")
    path = "/api/catalog/v1/unity/namespaces/default/tables/ice"
    assert count(reader, "get", path) == PINS["iceberg load table"]


def test_delta_v1_load_table(reader, managed):
    path = f"{UC}/delta/v1/catalogs/unity/schemas/default/tables/events"
    assert count(reader, "get", path) == PINS["delta v1 load table"]


def test_delta_v1_commit(reader, managed):
    versions = iter(range(3, 10))

    def body():
        from tests.delta_client import write_staged

        version = next(versions)
        size = write_staged(managed.storage_location, f"{version}.json")
        return {"requirements": [{"type": "assert-table-uuid", "uuid": managed.table_id}],
                "updates": [{"action": "add-commit", "commit": {
                    "version": version, "timestamp": 1, "file-name": f"{version}.json", "file-size": size,
                    "file-modification-timestamp": 1}}]}

    path = f"{UC}/delta/v1/catalogs/unity/schemas/default/tables/events"
    reader.post(path, body(), format="json")
    with CaptureQueriesContext(connection) as queries:
        response = reader.post(path, body(), format="json")
    assert response.status_code == 200, response.content
    assert len(queries.captured_queries) == PINS["delta v1 commit"]


ICEBERG = "/api/catalog/v1/unity"
ICEBERG_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def _iceberg_tables(admin_client, *names):
    for name in names:
        created = admin_client.post(f"{ICEBERG}/namespaces/default/tables", {"name": name, "schema": ICEBERG_SCHEMA},
                                    format="json")
        assert created.status_code == 200, created.content


def _count_posts(client, path, bodies):
    """Queries of the second of two requests (the first warms the token cache and lazy imports)."""
    client.post(path, next(bodies), format="json")
    with CaptureQueriesContext(connection) as queries:
        response = client.post(path, next(bodies), format="json")
    assert response.status_code < 300, response.content
    return len(queries.captured_queries)


def test_iceberg_update_table(reader, admin_client, storage_root):
    _iceberg_tables(admin_client, "ice")
    bodies = ({"updates": [{"action": "set-properties", "updates": {"commit": str(n)}}]} for n in range(2))
    path = f"{ICEBERG}/namespaces/default/tables/ice"
    assert _count_posts(reader, path, bodies) == PINS["iceberg update table"]


def test_iceberg_transaction(reader, admin_client, storage_root):
    _iceberg_tables(admin_client, "ice_a", "ice_b")
    bodies = ({"table-changes": [
        {"identifier": {"namespace": ["default"], "name": name},
         "updates": [{"action": "set-properties", "updates": {"commit": str(n)}}]} for name in ("ice_a", "ice_b")]}
        for n in range(2))
    assert _count_posts(reader, f"{ICEBERG}/transactions/commit", bodies) == PINS["iceberg transaction of two tables"]
