"""The Iceberg REST catalog (/api/catalog) driven end to end by pyiceberg's RestCatalog against a
live server: on file:// storage and on a real S3-compatible server (SeaweedFS). Where pyiceberg
has no client for a route (multi-table transactions, view replacement, Idempotency-Key, ETags),
the test sends the HTTP request itself."""

from __future__ import annotations

import io
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa
import pytest
import requests
from django.core.management import call_command
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    BadRequestError,
    CommitFailedException,
    ForbiddenError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NoSuchViewError,
    OAuthError,
    TableAlreadyExistsError,
)
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestampType
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from catalog.models import AuditEvent, Table
from catalog.services import principals
from catalog.storage import storage_for
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)

ICEBERG = "/api/catalog"
WAREHOUSE = "unity"

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestampType(), required=False),
    NestedField(3, "category", StringType(), required=False),
    NestedField(4, "amount", DoubleType(), required=False),
)
BY_DAY = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"))
BY_ID = SortOrder(SortField(source_id=1, transform=IdentityTransform(), direction=SortDirection.ASC,
                            null_order=NullOrder.NULLS_FIRST))
ARROW = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("ts", pa.timestamp("us")),
    pa.field("category", pa.string()),
    pa.field("amount", pa.float64()),
])


def rows(*items) -> pa.Table:
    """rows((1, "2024-01-01T10:00", "a", 1.5), ...) as an Arrow table of SCHEMA."""
    return pa.Table.from_pylist(
        [{"id": i, "ts": datetime.fromisoformat(ts), "category": c, "amount": a} for i, ts, c, a in items],
        schema=ARROW,
    )


def ids(table) -> list[int]:
    """The sorted ids of an Arrow table or of a pyiceberg table's current snapshot."""
    arrow = table if isinstance(table, pa.Table) else table.scan().to_arrow()
    return sorted(arrow.column("id").to_pylist())


# -- fixtures ---------------------------------------------------------------------------------------
@dataclass
class Storage:
    kind: str
    root: str
    # What a client needs on top of the loadTable config: the object store's keys (the catalog
    # vends endpoint, region and path style itself, and no long-lived secrets).
    client_properties: dict

    def files(self, location: str) -> list[str]:
        return [info.url for info in storage_for(location).list(location)]


@pytest.fixture(params=["file", pytest.param("s3", marks=pytest.mark.s3)])
def storage(request) -> Storage:
    if request.param == "file":
        root = request.getfixturevalue("storage_root")
        return Storage("file", root.as_uri(), {})
    server = request.getfixturevalue("s3_server")
    root = request.getfixturevalue("s3_storage_root")
    return Storage("s3", root, {"s3.access-key-id": server.access_key, "s3.secret-access-key": server.secret_key})


file_only = pytest.mark.parametrize("storage", ["file"], indirect=True)


@pytest.fixture
def connect(live_server, bootstrap, make_token, storage):
    """connect("bob") → a RestCatalog acting as principal bob (admin for "admin")."""

    def connect(name: str = "admin", *, admin: bool | None = None, **properties) -> RestCatalog:
        token = make_token(name, admin=(name == "admin") if admin is None else admin)
        return RestCatalog(
            "ucweb", uri=f"{live_server.url}{ICEBERG}", warehouse=WAREHOUSE, token=token,
            **storage.client_properties, **properties,
        )

    return connect


@pytest.fixture
def catalog(connect) -> RestCatalog:
    return connect()


class Http:
    """Raw requests to the Iceberg REST routes of the live server, with a bearer token."""

    def __init__(self, base: str, token: str | None):
        self.base = base
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def __call__(self, method: str, path: str, body=None, **kwargs) -> requests.Response:
        return self.session.request(method, self.base + path, json=body, timeout=30, **kwargs)


@pytest.fixture
def http(live_server, bootstrap, make_token, storage):
    """http(method, path, body) against /api/catalog/v1/unity as the metastore admin;
    http.as_("bob") for another principal."""
    base = f"{live_server.url}{ICEBERG}/v1/{WAREHOUSE}"
    token = make_token("admin", admin=True)
    client = Http(base, token)
    client.as_ = lambda name, admin=False: Http(base, make_token(name, admin=admin))
    client.root = Http(f"{live_server.url}{ICEBERG}/v1", token)  # paths without the warehouse
    return client


def error_of(response: requests.Response) -> tuple[int, str]:
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == response.status_code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return response.status_code, body["error"]["type"]


def new_table(catalog: RestCatalog, name: str = "events", namespace: str = "default", **kwargs):
    kwargs.setdefault("partition_spec", BY_DAY)
    kwargs.setdefault("sort_order", BY_ID)
    return catalog.create_table((namespace, name), schema=SCHEMA, **kwargs)


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
    assert AuditEvent.objects.filter(action="updateNamespaceProperties", securable_name="unity.sales").count() == 2


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


def test_concurrent_appends(connect):
    first_client, second_client = connect(), connect()
    new_table(first_client, properties={"commit.retry.num-retries": "0"})
    mine = first_client.load_table(("default", "events"))
    theirs = second_client.load_table(("default", "events"))

    mine.append(rows((1, "2024-01-01T00:00", "a", 1.0)))
    with pytest.raises(CommitFailedException):
        theirs.append(rows((2, "2024-01-01T00:00", "b", 2.0)))
    theirs.refresh()
    theirs.append(rows((2, "2024-01-01T00:00", "b", 2.0)))
    table = first_client.load_table(("default", "events"))
    assert ids(table) == [1, 2]

    # With retries on, pyiceberg refreshes and commits again by itself; no append is lost and
    # the snapshots form one line.
    with table.transaction() as transaction:
        transaction.set_properties({"commit.retry.num-retries": "3", "commit.retry.min-wait-ms": "10"})
    mine = first_client.load_table(("default", "events"))
    theirs = second_client.load_table(("default", "events"))
    mine.append(rows((3, "2024-01-01T00:00", "a", 3.0)))
    theirs.append(rows((4, "2024-01-01T00:00", "b", 4.0)))
    table = first_client.load_table(("default", "events"))
    assert ids(table) == [1, 2, 3, 4]
    snapshots = table.snapshots()
    assert len(snapshots) == 4
    assert [s.parent_snapshot_id for s in snapshots[1:]] == [s.snapshot_id for s in snapshots[:-1]]


def test_parallel_appends_all_land(connect):
    """Writers in threads, each with its own client: the table row lock serializes the commits,
    the losers refresh and retry, and every append is in the one line of snapshots."""
    new_table(connect(), partition_spec=PartitionSpec(),
              properties={"commit.retry.num-retries": "20", "commit.retry.min-wait-ms": "5",
                          "commit.retry.max-wait-ms": "200"})
    writers = [connect() for _ in range(4)]
    errors = []

    def append(index: int, client: RestCatalog) -> None:
        try:
            table = client.load_table(("default", "events"))
            table.append(rows((index, "2024-01-01T00:00", "w", float(index))))
        except Exception as exc:  # reported below, with the writer that failed
            errors.append((index, exc))

    threads = [threading.Thread(target=append, args=(i, client)) for i, client in enumerate(writers, start=1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and not any(thread.is_alive() for thread in threads)
    table = writers[0].load_table(("default", "events"))
    assert ids(table) == [1, 2, 3, 4]
    snapshots = table.snapshots()
    assert [s.parent_snapshot_id for s in snapshots] == [None] + [s.snapshot_id for s in snapshots[:-1]]


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


# -- multi-table transactions -----------------------------------------------------------------------
def _change(table, *, snapshot_id, properties):
    return {
        "identifier": {"namespace": ["default"], "name": table.name()[-1]},
        "requirements": [
            {"type": "assert-table-uuid", "uuid": str(table.metadata.table_uuid)},
            {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": snapshot_id},
        ],
        "updates": [{"action": "set-properties", "updates": properties}],
    }


def test_multi_table_transaction(catalog, http, storage):
    left, right = new_table(catalog, "left"), new_table(catalog, "right")
    left.append(rows((1, "2024-01-01T00:00", "a", 1.0)))
    right.append(rows((2, "2024-01-01T00:00", "b", 2.0)))
    left_snapshot, right_snapshot = left.current_snapshot().snapshot_id, right.current_snapshot().snapshot_id

    ok = http("POST", "/transactions/commit", {"table-changes": [
        _change(left, snapshot_id=left_snapshot, properties={"batch": "1"}),
        _change(right, snapshot_id=right_snapshot, properties={"batch": "1"}),
    ]})
    assert ok.status_code == 204, ok.text
    left, right = catalog.load_table(("default", "left")), catalog.load_table(("default", "right"))
    assert left.properties["batch"] == right.properties["batch"] == "1"

    before = {name: (t.metadata_location, storage.files(t.metadata.location)) for name, t in
              (("left", left), ("right", right))}
    failed = http("POST", "/transactions/commit", {"table-changes": [
        _change(left, snapshot_id=left_snapshot, properties={"batch": "2"}),
        _change(right, snapshot_id=left_snapshot, properties={"batch": "2"}),  # not right's snapshot
    ]})
    assert error_of(failed) == (409, "CommitFailedException")
    for name, (location, files) in before.items():
        table = catalog.load_table(("default", name))
        assert table.metadata_location == location and table.properties["batch"] == "1"
        assert storage.files(table.metadata.location) == files  # not even a stray metadata file

    missing = http("POST", "/transactions/commit", {"table-changes": [
        _change(left, snapshot_id=left_snapshot, properties={"batch": "3"}),
        {**_change(right, snapshot_id=right_snapshot, properties={}), "identifier": {"namespace": ["default"],
                                                                                      "name": "absent"}},
    ]})
    assert error_of(missing) == (404, "NoSuchTableException")
    assert catalog.load_table(("default", "left")).properties["batch"] == "1"
    assert error_of(http("POST", "/transactions/commit", {"table-changes": []})) == (400, "BadRequestException")


@file_only
def test_transactions_over_the_same_tables_in_opposite_orders(catalog, http):
    """Tables are locked in one fixed order whatever the order of the request: two writers that
    name the same tables in opposite orders never wait on each other."""
    tables = [new_table(catalog, name, partition_spec=PartitionSpec()) for name in ("left", "right")]
    statuses = []
    sessions = {1: http.as_("admin", admin=True), 2: http.as_("admin", admin=True)}  # one per thread

    def commit(writer: int, order: list) -> None:
        for round_ in range(5):
            body = {"table-changes": [{
                "identifier": {"namespace": ["default"], "name": table.name()[-1]},
                "requirements": [{"type": "assert-table-uuid", "uuid": str(table.metadata.table_uuid)}],
                "updates": [{"action": "set-properties", "updates": {f"writer-{writer}": str(round_)}}],
            } for table in order]}
            statuses.append(sessions[writer]("POST", "/transactions/commit", body).status_code)

    threads = [threading.Thread(target=commit, args=(1, tables)),
               threading.Thread(target=commit, args=(2, tables[::-1]))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert statuses == [204] * 10
    for name in ("left", "right"):
        properties = catalog.load_table(("default", name)).properties
        assert properties["writer-1"] == properties["writer-2"] == "4"


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


# -- HTTP details: ETag, snapshots=refs, HEAD, errors ------------------------------------------------
@file_only
def test_etag_and_snapshots_refs(catalog, http):
    table = new_table(catalog, partition_spec=PartitionSpec())
    table.append(rows((1, "2024-01-01T00:00", "a", 1.0)))
    with table.manage_snapshots() as manage:
        manage.create_tag(table.current_snapshot().snapshot_id, "v1")
    table = catalog.load_table(("default", "events"))
    table.append(rows((2, "2024-01-01T00:00", "a", 1.0)))
    table.append(rows((3, "2024-01-01T00:00", "a", 1.0)))

    path = "/namespaces/default/tables/events"
    full = http("GET", path)
    etag = full.headers["ETag"]
    assert full.status_code == 200 and etag.startswith('"') and len(full.json()["metadata"]["snapshots"]) == 3
    assert http("GET", path, params={"snapshots": "all"}).json() == full.json()

    not_modified = http("GET", path, headers={"If-None-Match": etag})
    assert not_modified.status_code == 304 and not_modified.content == b"" and not_modified.headers["ETag"] == etag
    assert http("GET", path, headers={"If-None-Match": f'"other", {etag}'}).status_code == 304
    assert http("GET", path, headers={"If-None-Match": '"other"'}).status_code == 200

    refs = http("GET", path, params={"snapshots": "refs"})
    metadata = refs.json()["metadata"]
    # main (the third append) and tag v1 (the first); the second is no ref's snapshot.
    assert sorted(s["snapshot-id"] for s in metadata["snapshots"]) == sorted(
        [metadata["refs"]["main"]["snapshot-id"], metadata["refs"]["v1"]["snapshot-id"]])
    assert refs.headers["ETag"] != etag  # another representation of the same version
    assert http("GET", path, params={"snapshots": "refs"}, headers={"If-None-Match": etag}).status_code == 200
    assert http("GET", path, params={"snapshots": "refs"},
                headers={"If-None-Match": refs.headers["ETag"]}).status_code == 304
    assert error_of(http("GET", path, params={"snapshots": "some"})) == (400, "BadRequestException")

    refs_catalog = RestCatalog("refs", uri=catalog.properties["uri"], warehouse=WAREHOUSE,
                               token=catalog.properties["token"], **{"snapshot-loading-mode": "refs"})
    assert len(refs_catalog.load_table(("default", "events")).snapshots()) == 2

    table.append(rows((4, "2024-01-01T00:00", "a", 1.0)))
    changed = http("GET", path, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag


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
def test_error_envelope(catalog, http):
    table = new_table(catalog)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(("default", "missing"))
    assert error_of(http("GET", "/namespaces/default/tables/missing")) == (404, "NoSuchTableException")
    # Spark resolves `db.t.snapshots` by first loading table `snapshots` in namespace db.t.
    assert error_of(http("GET", "/namespaces/db%1Ft/tables/snapshots")) == (404, "NoSuchTableException")
    assert error_of(http("GET", "/namespaces/default%1Fevents/tables/snapshots")) == (404, "NoSuchTableException")
    assert error_of(http("GET", "/namespaces/nope/tables")) == (404, "NoSuchNamespaceException")
    assert error_of(http.root("GET", "/nowhere/namespaces"))[0] == 404

    path = "/namespaces/default/tables/events"
    location = table.metadata_location
    unknown = http("POST", path, {"requirements": [], "updates": [{"action": "make-it-fast"}]})
    assert error_of(unknown) == (400, "BadRequestException")
    bad_requirement = http("POST", path, {"requirements": [{"type": "assert-everything"}], "updates": []})
    assert error_of(bad_requirement) == (400, "BadRequestException")
    failed = http("POST", path, {
        "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 7}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
    })
    assert error_of(failed) == (409, "CommitFailedException")
    assert error_of(http("POST", path, {"requirements": [{"type": "assert-create"}], "updates": []})) == (
        409, "CommitFailedException")
    assert error_of(http("POST", path, ["not", "an", "object"])) == (400, "BadRequestException")
    assert error_of(http("POST", path, {"updates": [{"action": "set-properties"}]})) == (400, "BadRequestException")
    assert error_of(http("POST", "/namespaces/default/tables/missing", {"updates": []})) == (
        404, "NoSuchTableException")
    malformed = http.session.post(http.base + path, data=b"{not json", headers={"Content-Type": "application/json"},
                                  timeout=30)
    assert error_of(malformed) == (400, "BadRequestException")
    assert catalog.load_table(("default", "events")).metadata_location == location
    assert "k" not in catalog.load_table(("default", "events")).properties

    anonymous = requests.get(http.base + "/namespaces", timeout=30)
    assert error_of(anonymous) == (401, "NotAuthorizedException")


# -- authentication, idempotency, grants ------------------------------------------------------------
@file_only
def test_oauth_client_credentials(live_server, bootstrap, catalog, http):
    out = io.StringIO()
    call_command("issue_token", "etl", "--admin", "--service-principal", stdout=out)
    lines = out.getvalue().splitlines()
    client_id = next(line.split(": ", 1)[1] for line in lines if line.startswith("client_id: "))
    client_secret = next(line.split(": ", 1)[1] for line in lines if line.startswith("client_secret: "))

    uri = f"{live_server.url}{ICEBERG}"
    oauth = {"oauth2-server-uri": f"{uri}/v1/oauth/tokens"}
    etl = RestCatalog("etl", uri=uri, warehouse=WAREHOUSE, credential=f"{client_id}:{client_secret}", **oauth)
    assert ("default",) in etl.list_namespaces()
    new_table(etl, "loaded_by_etl")
    assert Table.objects.get(name="loaded_by_etl").owner == "etl"

    _, other_id, other_secret = principals.create_service_principal(name="reporting")
    reporting = RestCatalog("reporting", uri=uri, warehouse=WAREHOUSE, credential=f"{other_id}:{other_secret}",
                            **oauth)
    # Authenticated, but granted nothing: the warehouse does not exist for it (no existence
    # oracle), and pyiceberg reports the 404 of listing as a missing namespace.
    with pytest.raises(NoSuchNamespaceError):
        reporting.list_namespaces()

    with pytest.raises(OAuthError):
        RestCatalog("bad", uri=uri, warehouse=WAREHOUSE, credential=f"{client_id}:wrong", **oauth)
    bad = requests.post(f"{uri}/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": client_id, "client_secret": "wrong"})
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
    unknown = requests.post(f"{uri}/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": "nobody", "client_secret": client_secret})
    assert unknown.status_code == 401 and unknown.json()["error"] == "invalid_client"
    grant = requests.post(f"{uri}/v1/oauth/tokens", timeout=30, data={"grant_type": "password"})
    assert grant.status_code == 400 and grant.json()["error"] == "unsupported_grant_type"
    # Malformed requests get OAuth's own error format too, never a server error.
    for body in (["client_credentials"], "client_credentials",
                 {"grant_type": "client_credentials", "client_id": client_id, "client_secret": 12345},
                 {"grant_type": "client_credentials", "client_id": [client_id], "client_secret": client_secret},
                 {"grant_type": "client_credentials", "client_id": "a\u0000b", "client_secret": client_secret}):
        malformed = requests.post(f"{uri}/v1/oauth/tokens", json=body, timeout=30)
        assert (malformed.status_code, malformed.json()["error"]) == (400, "invalid_request"), body
    not_json = requests.post(f"{uri}/v1/oauth/tokens", data=b"{", timeout=30,
                             headers={"Content-Type": "application/json"})
    assert (not_json.status_code, not_json.json()["error"]) == (400, "invalid_request")
    good = requests.post(f"{uri}/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret,
        "scope": "catalog"})
    token = good.json()
    assert good.status_code == 200 and token["token_type"] == "bearer" and token["expires_in"] > 0
    listed = requests.get(f"{uri}/v1/{WAREHOUSE}/namespaces", timeout=30,
                          headers={"Authorization": f"Bearer {token['access_token']}"})
    assert listed.status_code == 200 and ["default"] in listed.json()["namespaces"]


def _create_body(name: str) -> dict:
    return {"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True}]}}


@file_only
def test_idempotency_key(catalog, http):
    key = str(uuid.uuid4())
    first = http("POST", "/namespaces/default/tables", _create_body("once"), headers={"Idempotency-Key": key})
    assert first.status_code == 200, first.text
    replay = http("POST", "/namespaces/default/tables", _create_body("once"), headers={"Idempotency-Key": key})
    assert replay.status_code == 200 and replay.json() == first.json()
    assert Table.objects.filter(name="once").count() == 1
    assert AuditEvent.objects.filter(action="createIcebergTable", securable_name="unity.default.once").count() == 1

    other_key = http("POST", "/namespaces/default/tables", _create_body("once"),
                     headers={"Idempotency-Key": str(uuid.uuid4())})
    assert error_of(other_key) == (409, "AlreadyExistsException")
    no_key = http("POST", "/namespaces/default/tables", _create_body("once"))
    assert error_of(no_key) == (409, "AlreadyExistsException")

    # A commit replays too: the second request with the key does not append another snapshot.
    table = catalog.load_table(("default", "once"))
    commit_key = str(uuid.uuid4())
    body = {"requirements": [{"type": "assert-table-uuid", "uuid": str(table.metadata.table_uuid)}],
            "updates": [{"action": "set-properties", "updates": {"n": "1"}}]}
    committed = http("POST", "/namespaces/default/tables/once", body, headers={"Idempotency-Key": commit_key})
    again = http("POST", "/namespaces/default/tables/once", body, headers={"Idempotency-Key": commit_key})
    assert committed.status_code == again.status_code == 200
    assert again.json()["metadata-location"] == committed.json()["metadata-location"]
    assert catalog.load_table(("default", "once")).metadata_location == committed.json()["metadata-location"]

    # A final 4xx is replayed as well; the key of one request cannot serve another.
    failing_key = str(uuid.uuid4())
    stale = {"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 9}], "updates": []}
    assert error_of(http("POST", "/namespaces/default/tables/once", stale,
                         headers={"Idempotency-Key": failing_key})) == (409, "CommitFailedException")
    assert error_of(http("POST", "/namespaces/default/tables/once", stale,
                         headers={"Idempotency-Key": failing_key})) == (409, "CommitFailedException")
    reused = http("DELETE", "/namespaces/default/tables/once", headers={"Idempotency-Key": key})
    assert error_of(reused) == (422, "UnprocessableEntityException")
    assert catalog.table_exists(("default", "once"))


@file_only
def test_select_only_principal_reads_but_cannot_commit(connect, catalog, http, admin_client):
    table = new_table(catalog)
    table.append(rows((1, "2024-01-01T00:00", "a", 1.0)))
    reader = connect("reader")
    for securable, name, privilege in [("catalog", "unity", "USE CATALOG"), ("schema", "unity.default", "USE SCHEMA"),
                                       ("table", "unity.default.events", "SELECT")]:
        response = admin_client.patch(f"{UC}/permissions/{securable}/{name}",
                                      {"changes": [{"principal": "reader", "add": [privilege]}]}, format="json")
        assert response.status_code == 200, response.content

    assert reader.list_tables("default") == [("default", "events")]
    readable = reader.load_table(("default", "events"))
    assert ids(readable) == [1]
    with pytest.raises(ForbiddenError):
        readable.append(rows((2, "2024-01-01T00:00", "b", 2.0)))
    with pytest.raises(ForbiddenError):
        reader.drop_table(("default", "events"))
    with pytest.raises(ForbiddenError):
        new_table(reader, "mine")
    forbidden = http.as_("reader")("POST", "/namespaces/default/tables/events", {
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    assert error_of(forbidden) == (403, "ForbiddenException")
    assert ids(catalog.load_table(("default", "events"))) == [1]

    stranger = connect("stranger")
    with pytest.raises((ForbiddenError, NoSuchTableError)):
        stranger.load_table(("default", "events"))


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


@file_only
def test_idempotency_key_of_a_server_error_can_be_retried(http, monkeypatch):
    from commits import iceberg as service

    original = service.create_table

    def broken(**kwargs):
        raise RuntimeError("storage went away")

    key = str(uuid.uuid4())
    monkeypatch.setattr(service, "create_table", broken)
    failed = http("POST", "/namespaces/default/tables", _create_body("flaky"), headers={"Idempotency-Key": key})
    assert failed.status_code == 500
    monkeypatch.setattr(service, "create_table", original)
    retried = http("POST", "/namespaces/default/tables", _create_body("flaky"), headers={"Idempotency-Key": key})
    assert retried.status_code == 200, retried.text
    replayed = http("POST", "/namespaces/default/tables", _create_body("flaky"), headers={"Idempotency-Key": key})
    assert replayed.status_code == 200 and replayed.json() == retried.json()
    assert replayed.headers["ETag"] == retried.headers["ETag"]


@file_only
def test_pagination(catalog, http):
    for name in ("c", "a", "b"):
        catalog.create_namespace(f"ns_{name}")
        new_table(catalog, name)
    everything = http("GET", "/namespaces/default/tables").json()
    assert [t["name"] for t in everything["identifiers"]] == ["a", "b", "c"] and "next-page-token" not in everything

    names, token, pages = [], "", 0
    while token is not None and pages < 10:
        page = http("GET", "/namespaces/default/tables", params={"pageToken": token, "pageSize": 2}).json()
        names += [t["name"] for t in page["identifiers"]]
        token, pages = page.get("next-page-token"), pages + 1
    assert names == ["a", "b", "c"] and pages == 2
    first = http("GET", "/namespaces", params={"pageToken": "", "pageSize": 1}).json()
    assert len(first["namespaces"]) == 1 and first["next-page-token"]
    paged = RestCatalog("paged", uri=catalog.properties["uri"], warehouse=WAREHOUSE,
                        token=catalog.properties["token"], **{"rest-page-size": "1"})
    assert paged.list_tables("default") == [("default", "a"), ("default", "b"), ("default", "c")]


@pytest.mark.s3
@pytest.mark.parametrize("storage", ["s3"], indirect=True)
def test_s3_settings_are_vended_without_secrets(catalog, http, s3_server):
    table = new_table(catalog)
    config = http("GET", "/namespaces/default/tables/events").json()["config"]
    assert config["s3.endpoint"] == s3_server.endpoint_url
    assert config["s3.path-style-access"] == "true" and config["s3.region"] == s3_server.region
    assert not any("secret" in key or "access-key" in key for key in config)
    credentials = http("GET", "/namespaces/default/tables/events/credentials").json()["storage-credentials"]
    assert credentials == [{"prefix": table.metadata.location, "config": config}]
