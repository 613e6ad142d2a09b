"""catalog.rows reads an Iceberg table (loadTable, tableExists, credentials) with its metadata in
the same statement: the metadata instance holds what the ORM's select_related gives, and a table
without Iceberg metadata reads as select_related leaves it (no `iceberg`, and no query to find out)."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from catalog import authz, rows
from catalog.models import Grant, Principal, Schema, Table

pytestmark = pytest.mark.django_db


def fields_of(row) -> dict:
    return {field.attname: getattr(row, field.attname) for field in row._meta.concrete_fields}


def test_an_iceberg_table_reads_with_its_metadata_as_the_orm_reads_it(admin_client, bootstrap, storage_root):
    created = admin_client.post("/api/catalog/v1/unity/namespaces/default/tables", {
        "name": "ice", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": False}]}}, format="json")
    assert created.status_code == 200, created.content
    orm = Table.objects.select_related("schema__catalog", "iceberg").get(name="ice")
    bob = Principal.objects.create(name="bob")
    Grant.objects.create(securable_type="table", securable_id=orm.id, securable_name=orm.full_name,
                         principal="bob", privilege="SELECT")
    for caller in (Principal.objects.get(name="admin"), bob):
        with CaptureQueriesContext(connection) as queries:
            [read] = rows.tables(caller, rows.by_name(1), ["unity", "default", "ice"], iceberg=True)
            assert fields_of(read.iceberg) == fields_of(orm.iceberg)
            assert read.iceberg.table is read
            assert fields_of(read.schema.catalog) == fields_of(orm.schema.catalog)
        assert len(queries.captured_queries) == 1
        assert authz.access_to_read(caller, read).has("SELECT")


def test_a_table_without_iceberg_metadata_reads_without_it(bootstrap, storage_root):
    schema = Schema.objects.get(catalog__name="unity", name="default")
    Table.objects.create(schema=schema, name="plain", table_type="EXTERNAL", data_source_format="DELTA",
                         storage_location=f"{storage_root}/plain", owner="admin")
    admin = Principal.objects.get(name="admin")
    with CaptureQueriesContext(connection) as queries:
        [read] = rows.tables(admin, rows.by_name(1), ["unity", "default", "plain"], iceberg=True)
        assert not hasattr(read, "iceberg")
    assert len(queries.captured_queries) == 1
    [without] = rows.tables(admin, rows.by_name(1), ["unity", "default", "plain"])
    assert fields_of(without) == fields_of(read)


@pytest.mark.django_db(transaction=True)
def test_a_commit_locks_its_tables_and_their_metadata_in_the_order_of_their_ids(admin_client, bootstrap, storage_root):
    for name in ("b_ice", "a_ice"):
        created = admin_client.post("/api/catalog/v1/unity/namespaces/default/tables", {
            "name": name, "schema": {"type": "struct", "schema-id": 0, "fields": []}}, format="json")
        assert created.status_code == 200, created.content
    admin = Principal.objects.get(name="admin")
    params = ["unity", "default", "a_ice", "default", "b_ice", "default", "missing"]
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        found = rows.tables(admin, rows.by_names(3), params, for_update=True, iceberg=True)
    assert [table.id for table in found] == sorted(table.id for table in found)
    assert sorted(table.name for table in found) == ["a_ice", "b_ice"]
    assert all(table.iceberg.table is table for table in found)
    if connection.vendor == "postgresql":
        [statement] = [query["sql"] for query in queries.captured_queries if "SELECT" in query["sql"]]
        metadata = Table._meta.get_field("iceberg").related_model._meta.db_table
        assert statement.endswith(f'FOR UPDATE OF "{Table._meta.db_table}", "{metadata}"')
    with pytest.raises(ValueError):
        rows.tables(admin, rows.by_names(3) + " OR TRUE", params)


def test_a_commit_locks_iceberg_tables_only_not_views_of_the_same_names(admin_client, bootstrap, storage_root):
    for name in ("seen", "viewed"):
        created = admin_client.post("/api/catalog/v1/unity/namespaces/default/tables", {
            "name": name, "schema": {"type": "struct", "schema-id": 0, "fields": []}}, format="json")
        assert created.status_code == 200, created.content
    Table.objects.filter(name="viewed").update(table_type="VIEW")
    admin = Principal.objects.get(name="admin")
    params = ["unity", "default", "seen", "default", "viewed"]
    with transaction.atomic():
        locked = rows.tables(admin, rows.by_names(2, iceberg_tables=True), params, for_update=True, iceberg=True)
    assert [table.name for table in locked] == ["seen"]
    assert sorted(table.name for table in rows.tables(admin, rows.by_names(2), params, iceberg=True)) == [
        "seen", "viewed"]
