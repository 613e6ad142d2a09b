"""Namespaces and tables of the Iceberg REST catalog (/api/catalog) driven end to end by
pyiceberg's RestCatalog against a live server, on file:// storage and on a real S3-compatible
server (SeaweedFS): namespace properties, create, write, scan and time travel, schema and
partition evolution, rename, drop with and without purge, register, and staged create."""

from __future__ import annotations

import uuid
from datetime import datetime

import pyarrow as pa
import pytest
from pyiceberg.exceptions import (
    BadRequestError,
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table.sorting import SortDirection
from pyiceberg.types import StringType

from catalog.models import AuditEvent, Table
from catalog.storage import storage_for
from tests.helpers import UC
from tests.pyiceberg_support import ARROW, BY_DAY, BY_ID, SCHEMA, error_of, file_only, ids, new_table, rows
from tests.pyiceberg_support import catalog, connect, http, storage  # noqa: F401 - the fixtures

pytestmark = pytest.mark.django_db(transaction=True)


# -- namespaces -------------------------------------------------------------------------------------
@file_only
def test_namespaces(catalog, http):
    catalog.create_namespace("sales", {"owner.team": "sales", "comment": "the sales data"})
    assert set(catalog.list_namespaces()) >= {("default",), ("sales",)}
    assert catalog.list_namespaces("sales") == []
    assert catalog.namespace_exists("sales") and not catalog.namespace_exists("nope")
    assert catalog.load_namespace_properties("sales") == {"owner.team": "sales", "comment": "the sales data"}
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace("sales")

    summary = catalog.update_namespace_properties("sales", removals={"owner.team", "absent"}, updates={"tier": "gold"})
    assert (summary.removed, summary.updated, summary.missing) == (["owner.team"], ["tier"], ["absent"])
    summary = catalog.update_namespace_properties("sales", updates={"tier": "silver"})
    assert (summary.removed, summary.updated, summary.missing) == ([], ["tier"], [])
    assert catalog.load_namespace_properties("sales") == {"tier": "silver", "comment": "the sales data"}

    overlap = http("POST", "/namespaces/sales/properties", {"removals": ["tier"], "updates": {"tier": "x"}})
    assert error_of(overlap) == (422, "UnprocessableEntityException")
    assert catalog.load_namespace_properties("sales")["tier"] == "silver"

    new_table(catalog, "orders", "sales")
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace("sales")
    assert error_of(http("DELETE", "/namespaces/sales")) == (409, "NamespaceNotEmptyException")
    assert catalog.namespace_exists("sales")

    catalog.drop_table(("sales", "orders"))
    catalog.drop_namespace("sales")
    assert not catalog.namespace_exists("sales")
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties("sales")
    with pytest.raises(NoSuchNamespaceError):
        catalog.drop_namespace("sales")
    assert AuditEvent.objects.filter(action="updateNamespaceProperties", securable_name="unity.sales",
                                    outcome="SUCCESS").count() == 2


# -- tables: create, write, read --------------------------------------------------------------------
def test_create_write_and_read(catalog, storage):
    table = new_table(catalog, properties={"owner.team": "growth"})
    assert table.metadata.location.startswith(storage.root + "/tables/")
    assert table.metadata_location.startswith(table.metadata.location + "/metadata/00000-")
    spec = table.spec()
    assert [(f.source_id, str(f.transform), f.name) for f in spec.fields] == [(2, "day", "ts_day")]
    order = table.sort_order()
    assert [(f.source_id, f.direction) for f in order.fields] == [(1, SortDirection.ASC)]
    assert table.properties["owner.team"] == "growth"
    assert catalog.table_exists(("default", "events"))
    assert ("default", "events") in catalog.list_tables("default")
    with pytest.raises(TableAlreadyExistsError):
        new_table(catalog)

    table.append(rows((1, "2024-01-01T10:00", "a", 10.0), (2, "2024-01-01T11:00", "b", 20.0)))
    table.append(rows((3, "2024-01-02T10:00", "a", 30.0), (4, "2024-01-03T10:00", "c", 40.0)))
    reloaded = catalog.load_table(("default", "events"))
    assert reloaded.metadata_location == table.metadata_location
    assert ids(reloaded) == [1, 2, 3, 4]
    assert len(reloaded.snapshots()) == 2
    # One data file per day partition, written under the table's location.
    data_files = [url for url in storage.files(table.metadata.location) if url.endswith(".parquet")]
    assert len(data_files) == 3 and all("/data/ts_day=" in url for url in data_files)

    january_first = reloaded.scan(row_filter=And(GreaterThanOrEqual("ts", "2024-01-01T00:00:00"),
                                                 LessThan("ts", "2024-01-02T00:00:00"))).to_arrow()
    assert ids(january_first) == [1, 2]
    assert ids(reloaded.scan(row_filter=EqualTo("category", "a")).to_arrow()) == [1, 3]
    projected = reloaded.scan(row_filter="amount > 15", selected_fields=("id", "amount")).to_arrow()
    assert projected.column_names == ["id", "amount"] and ids(projected) == [2, 3, 4]

    reloaded.overwrite(rows((10, "2024-02-01T00:00", "z", 1.0)))
    assert ids(catalog.load_table(("default", "events"))) == [10]
    reloaded.append(rows((11, "2024-02-02T00:00", "y", 2.0), (12, "2024-02-02T01:00", "z", 3.0)))
    reloaded.delete(delete_filter=EqualTo("category", "z"))
    final = catalog.load_table(("default", "events"))
    assert ids(final) == [11]
    operations = [s.summary.operation.value for s in final.snapshots()]
    # overwrite = delete everything + append; the filtered delete drops the file that holds only
    # "z" rows and rewrites the one that holds "y" and "z".
    assert operations == ["append", "append", "delete", "append", "append", "delete", "overwrite"]

    row = Table.objects.get(schema__name="default", name="events")
    assert row.data_source_format == "ICEBERG" and row.table_type == "MANAGED"
    assert row.iceberg.metadata_location == final.metadata_location
    assert storage_for(final.metadata_location).exists(final.metadata_location)


def test_time_travel(catalog):
    table = new_table(catalog, partition_spec=PartitionSpec())
    table.append(rows((1, "2024-01-01T00:00", "a", 1.0)))
    first = table.current_snapshot().snapshot_id
    table.append(rows((2, "2024-01-02T00:00", "b", 2.0)))
    second = table.current_snapshot().snapshot_id
    table.delete(delete_filter=EqualTo("id", 1))

    table = catalog.load_table(("default", "events"))
    assert ids(table) == [2]
    assert ids(table.scan(snapshot_id=first).to_arrow()) == [1]
    assert ids(table.scan(snapshot_id=second).to_arrow()) == [1, 2]
    assert [entry.snapshot_id for entry in table.history()][:2] == [first, second]
    assert table.snapshot_by_id(second).parent_snapshot_id == first


def test_schema_and_partition_evolution(catalog, admin_client):
    table = new_table(catalog)
    table.append(rows((1, "2024-01-01T00:00", "a", 1.0)))

    with table.update_schema() as update:
        update.add_column("note", StringType(), doc="free text")
        update.rename_column("amount", "total")
    table = catalog.load_table(("default", "events"))
    assert [f.name for f in table.schema().fields] == ["id", "ts", "category", "total", "note"]
    assert table.schema().find_field("note").doc == "free text"
    assert len(table.schemas()) == 2

    with table.update_spec() as update:
        update.add_identity("category")
    table = catalog.load_table(("default", "events"))
    assert [(f.name, str(f.transform)) for f in table.spec().fields] == [("ts_day", "day"), ("category", "identity")]
    assert len(table.specs()) == 2

    arrow = pa.schema([*ARROW][:3] + [pa.field("total", pa.float64()), pa.field("note", pa.string())])
    table.append(pa.Table.from_pylist(
        [{"id": 2, "ts": datetime(2024, 1, 5), "category": "b", "total": 2.5, "note": "new"}], schema=arrow))
    result = catalog.load_table(("default", "events")).scan().to_arrow().sort_by("id")
    assert result.column("total").to_pylist() == [1.0, 2.5]
    assert result.column("note").to_pylist() == [None, "new"]
    assert ids(table.scan(row_filter=EqualTo("category", "b")).to_arrow()) == [2]

    # The Unity Catalog view of the table follows the current schema.
    uc = admin_client.get(f"{UC}/tables/unity.default.events").json()
    columns = [(c["name"], c["type_name"], c["partition_index"]) for c in uc["columns"]]
    assert columns == [("id", "LONG", None), ("ts", "TIMESTAMP_NTZ", 0), ("category", "STRING", 1),
                       ("total", "DOUBLE", None), ("note", "STRING", None)]


def test_rename(catalog):
    catalog.create_namespace("archive")
    table = new_table(catalog)
    table.append(rows((1, "2024-01-01T00:00", "a", 1.0)))

    renamed = catalog.rename_table(("default", "events"), ("default", "events_v1"))
    assert ids(renamed) == [1]
    moved = catalog.rename_table(("default", "events_v1"), ("archive", "events"))
    assert ids(moved) == [1] and moved.metadata_location == table.metadata_location
    assert not catalog.table_exists(("default", "events"))
    assert not catalog.table_exists(("default", "events_v1"))
    with pytest.raises(NoSuchTableError):
        catalog.load_table(("default", "events"))
    with pytest.raises(NoSuchTableError):
        catalog.rename_table(("default", "events"), ("default", "other"))
    new_table(catalog, "other")
    with pytest.raises(TableAlreadyExistsError):
        catalog.rename_table(("default", "other"), ("archive", "events"))
    assert Table.objects.get(schema__name="archive", name="events").id == uuid.UUID(str(table.metadata.table_uuid))


def test_drop_with_and_without_purge_and_register(catalog, storage):
    kept = new_table(catalog, "kept")
    kept.append(rows((1, "2024-01-01T00:00", "a", 1.0)))
    purged = new_table(catalog, "purged")
    purged.append(rows((2, "2024-01-01T00:00", "b", 2.0)))
    kept_files, purged_files = storage.files(kept.metadata.location), storage.files(purged.metadata.location)
    assert any(url.endswith(".parquet") for url in kept_files) and len(purged_files) >= 4

    catalog.drop_table(("default", "kept"))
    catalog.purge_table(("default", "purged"))
    assert not catalog.table_exists(("default", "kept")) and not catalog.table_exists(("default", "purged"))
    assert storage.files(kept.metadata.location) == kept_files
    assert storage.files(purged.metadata.location) == []
    with pytest.raises(NoSuchTableError):
        catalog.drop_table(("default", "kept"))

    # The files of the dropped table make it again: register its last metadata file.
    registered = catalog.register_table(("default", "restored"), kept.metadata_location)
    assert registered.metadata_location == kept.metadata_location
    assert ids(catalog.load_table(("default", "restored"))) == [1]
    registered.append(rows((3, "2024-01-02T00:00", "c", 3.0)))
    assert ids(catalog.load_table(("default", "restored"))) == [1, 3]
    row = Table.objects.get(schema__name="default", name="restored")
    assert row.table_type == "EXTERNAL" and [c.name for c in row.columns.order_by("position")] == [
        "id", "ts", "category", "amount"]
    with pytest.raises(TableAlreadyExistsError):
        catalog.register_table(("default", "restored"), kept.metadata_location)
    with pytest.raises(BadRequestError):
        catalog.register_table(("default", "nothing"), kept.metadata.location + "/metadata/missing.metadata.json")


def test_stage_create(catalog, storage):
    transaction = catalog.create_table_transaction(("default", "staged"), schema=SCHEMA, partition_spec=BY_DAY,
                                                   sort_order=BY_ID, properties={"stage": "yes"})
    # Nothing exists until the transaction commits.
    assert not catalog.table_exists(("default", "staged"))
    assert not Table.objects.filter(name="staged").exists()
    transaction.append(rows((1, "2024-01-01T00:00", "a", 1.0), (2, "2024-01-02T00:00", "b", 2.0)))
    transaction.set_properties({"stage": "done"})
    committed = transaction.commit_transaction()

    table = catalog.load_table(("default", "staged"))
    assert committed.metadata_location == table.metadata_location
    assert ids(table) == [1, 2] and table.properties["stage"] == "done"
    assert [str(f.transform) for f in table.spec().fields] == ["day"]
    assert table.metadata.location.startswith(storage.root + "/tables/")
    row = Table.objects.get(name="staged")
    assert row.table_type == "MANAGED" and str(row.id) == str(table.metadata.table_uuid)

    # A second staged create of the same name loses: the table exists now.
    late = catalog.create_table_transaction(("default", "late"), schema=SCHEMA)
    new_table(catalog, "late")
    late.set_properties({"x": "y"})
    with pytest.raises(CommitFailedException):
        late.commit_transaction()
