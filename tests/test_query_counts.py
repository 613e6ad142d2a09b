"""The number of SQL queries of each hot path is pinned (tests/query_counts.json), so that an N+1
or an extra round trip fails here. After a deliberate change, run with UPDATE_QUERY_COUNTS=1
(tests/query_pins.py). The get and list of every securable (catalogs and schemas too) are pinned
by tests/api_cases/."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.helpers import UC, grant
from tests.query_pins import assert_query_count

pytestmark = pytest.mark.django_db(transaction=True)
ICEBERG = "/api/catalog/v1/unity"
POLARIS = "/api/catalog/polaris/v1/unity"


def measure(call, status: int | None = None) -> int:
    """The queries of the second `call()` (the first warms the token cache and lazy imports, which
    are not what is pinned); it must succeed (with `status`, when given)."""
    call()
    with CaptureQueriesContext(connection) as queries:
        response = call()
    assert response.status_code == status if status else response.status_code < 300, response.content
    return len(queries.captured_queries)


def count(client, method, path, **kwargs):
    return measure(lambda: getattr(client, method)(path, **kwargs))


@pytest.fixture
def managed(delta):
    created = delta.create_table("unity", "default", "events")
    for version in (1, 2):
        delta.append(created.table_id, created.storage_location, version, f"p{version}.parquet")
    return created


@pytest.fixture
def reader(make_client, managed):
    """A principal with grants (not an admin), so that the grant lookups are counted too."""
    client = make_client("reader")
    grant("reader", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY")
    return client


def test_get_table(reader):
    assert_query_count("uc get table", count(reader, "get", f"{UC}/tables/unity.default.events"))


def test_list_tables(reader, delta):
    for index in range(5):
        delta.create_table("unity", "default", f"more_{index}")
    params = {"catalog_name": "unity", "schema_name": "default"}
    assert_query_count("uc list tables", count(reader, "get", f"{UC}/tables", data=params))


def test_delta_commit(reader, managed):
    versions = iter(range(3, 10))

    def body():
        from tests.delta_client import write_staged

        version = next(versions)
        size = write_staged(managed.storage_location, f"{version}.json")
        return {"table_id": managed.table_id, "table_uri": managed.storage_location,
                "commit_info": {"version": version, "timestamp": 1, "file_name": f"{version}.json",
                                "file_size": size, "file_modification_timestamp": 1}}

    assert_query_count("delta commit", measure(
        lambda: reader.post(f"{UC}/delta/commit", body(), format="json"), 200))


def test_delta_get_commits(reader, managed):
    params = {"table_id": managed.table_id, "table_uri": managed.storage_location}
    assert_query_count("delta get commits", count(reader, "get", f"{UC}/delta/commits", data=params))


def test_iceberg_load_table(reader, admin_client, storage_root):
    admin_client.post("/api/catalog/v1/unity/namespaces/default/tables", {
        "name": "ice", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": False}]}}, format="json")
    path = "/api/catalog/v1/unity/namespaces/default/tables/ice"
    assert_query_count("iceberg load table", count(reader, "get", path))


def test_delta_v1_load_table(reader, managed):
    path = f"{UC}/delta/v1/catalogs/unity/schemas/default/tables/events"
    assert_query_count("delta v1 load table", count(reader, "get", path))


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
    assert_query_count("delta v1 commit", measure(lambda: reader.post(path, body(), format="json"), 200))


def test_update_permissions(admin_client, managed, make_client):
    make_client("dave")
    path = f"{UC}/permissions/table/unity.default.events"
    changes = iter(["SELECT", "MODIFY"])

    def patch():
        return admin_client.patch(path, {"changes": [{"principal": "dave", "add": [next(changes)]}]}, format="json")

    assert_query_count("uc update permissions", measure(patch, 200))


@pytest.fixture
def ice(admin_client, storage_root):
    """Iceberg table unity.default.ice, and its change with a new property each time it is called."""
    response = admin_client.post(f"{ICEBERG}/namespaces/default/tables", {
        "name": "ice", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": False}]}}, format="json")
    assert response.status_code == 200, response.content
    table_uuid = response.json()["metadata"]["table-uuid"]
    values = iter(range(100))

    def change() -> dict:
        return {"requirements": [{"type": "assert-table-uuid", "uuid": table_uuid}],
                "updates": [{"action": "set-properties", "updates": {"write.k": str(next(values))}}]}

    return change


def test_iceberg_update_table(reader, ice):
    path = f"{ICEBERG}/namespaces/default/tables/ice"
    assert_query_count("iceberg update table", measure(lambda: reader.post(path, ice(), format="json"), 200))


def test_iceberg_transactions_commit(reader, ice):
    def body():
        return {"table-changes": [{"identifier": {"namespace": ["default"], "name": "ice"}, **ice()}]}

    commit = f"{ICEBERG}/transactions/commit"
    assert_query_count("iceberg transactions commit", measure(
        lambda: reader.post(commit, body(), format="json"), 204))


def test_polaris_load_policy_and_applicable_policies(reader, admin_client, ice):
    response = admin_client.post(f"{POLARIS}/namespaces/default/policies", {
        "name": "expiry", "type": "system.snapshot-expiry",
        "content": json.dumps({"version": "2025-02-03", "enable": True})}, format="json")
    assert response.status_code == 200, response.content
    response = admin_client.put(f"{POLARIS}/namespaces/default/policies/expiry/mappings", {
        "target": {"type": "table-like", "path": ["default", "ice"]}}, format="json")
    assert response.status_code == 204, response.content
    grant("reader", "policy", "unity.default.expiry", "APPLY POLICY")
    assert_query_count("polaris load policy", count(reader, "get", f"{POLARIS}/namespaces/default/policies/expiry"))
    assert_query_count("polaris applicable policies", count(
        reader, "get", f"{POLARIS}/applicable-policies", data={"namespace": "default", "target-name": "ice"}))


def test_delta_transaction_of_two_tables(reader, managed, delta):
    """Both Delta APIs' transactions over the same two tables: per table, its API's own commit
    path, and one locking read for all of them."""
    import uuid

    from tests.delta_client import write_staged

    other = delta.create_table("unity", "default", "events_2")
    tables = [(managed, "events"), (other, "events_2")]
    versions = iter(range(1, 20))

    def commit(table, version):
        file_name = f"{version:020d}.{uuid.uuid4()}.json"
        size = write_staged(table.storage_location, file_name)
        return {"version": version + 2 if table is managed else version, "timestamp": 1, "file_name": file_name,
                "file_size": size, "file_modification_timestamp": 1}

    def preview():
        version = next(versions)
        return reader.post(f"{UC}/delta/preview/transactions/commit", {
            "transaction_id": str(uuid.uuid4()), "commits": [
                {"table_id": table.table_id, "table_uri": table.storage_location, "commit_info": commit(table, version)}
                for table, _ in tables]}, format="json")

    def v1():
        version = next(versions)
        path = f"{UC}/delta/v1/transactions/commit"
        return reader.post(path, {"transaction-id": str(uuid.uuid4()), "table-changes": [
            {"identifier": {"catalog": "unity", "schema": "default", "name": name},
             "requirements": [{"type": "assert-table-uuid", "uuid": table.table_id}],
             "updates": [{"action": "add-commit", "commit": {
                 key.replace("_", "-"): value for key, value in commit(table, version).items()}}]}
            for table, name in tables]}, format="json")

    assert_query_count("delta transaction of two tables", measure(preview, 200))
    assert_query_count("delta v1 transaction of two tables", measure(v1, 200))
