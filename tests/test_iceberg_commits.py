"""Concurrent commits to Iceberg tables through pyiceberg's RestCatalog against a live server, on
file:// storage and on a real S3-compatible server (SeaweedFS): a stale append fails without
retries and lands with them, writers in threads all land in one line of snapshots, and
multi-table transactions (/transactions/commit, which pyiceberg has no client for) commit all or
nothing and lock their tables in one order."""

from __future__ import annotations

import threading

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.partitioning import PartitionSpec

from tests.pyiceberg_support import error_of, file_only, ids, new_table, rows
from tests.pyiceberg_support import catalog, connect, http, storage  # noqa: F401 - the fixtures

pytestmark = pytest.mark.django_db(transaction=True)


# -- concurrent appends -----------------------------------------------------------------------------
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
