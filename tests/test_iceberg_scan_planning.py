"""Server-side scan planning (planTableScan, fetchPlanningResult, cancelPlanning, fetchScanTasks):
pyiceberg 0.12 in `scan-planning-mode=server` reads the same rows as pyiceberg planning on the
client, on tables with partitions and schema evolution (position deletes written by Spark are in
test_iceberg_scan_planning_spark.py), the server prunes by partition and column statistics, large
plans page through plan tasks, and bad input is refused without leaving anything behind."""

from __future__ import annotations

import json
from datetime import datetime

import pyarrow as pa
import pytest
from pyiceberg.expressions import (
    AlwaysTrue, And, EqualTo, GreaterThanOrEqual, In, IsNull, LessThan, NotEqualTo, Or,
)
from pyiceberg.types import LongType, StringType

from catalog.models import AuditEvent, ScanPlan, ScanPlanPage, Table
from tests.helpers import audited_successes, grant
from tests.pyiceberg_support import BY_DAY, SCHEMA, error_of, file_only, new_table, rows
from tests.pyiceberg_support import catalog, connect, http, storage  # noqa: F401 - the fixtures

pytestmark = pytest.mark.django_db(transaction=True)

SERVER = {"scan-planning-mode": "server"}
PLAN = "/namespaces/default/tables/events/plan"
TASKS = "/namespaces/default/tables/events/tasks"


def sorted_rows(arrow: pa.Table) -> list[dict]:
    return sorted(arrow.to_pylist(), key=lambda row: json.dumps(row, sort_keys=True, default=str))


def both_ways(client_catalog, server_catalog, row_filter=AlwaysTrue(), name="events", **scan):
    """The rows (and the count) of one scan planned by the client, and planned by the server."""
    on_client = client_catalog.load_table(("default", name)).scan(row_filter=row_filter, **scan)
    on_server = server_catalog.load_table(("default", name)).scan(row_filter=row_filter, **scan)
    assert server_catalog.supports_server_side_planning() and not client_catalog.supports_server_side_planning()
    return ((sorted_rows(on_client.to_arrow()), on_client.count()),
            (sorted_rows(on_server.to_arrow()), on_server.count()))


def data_files(table) -> list[str]:
    return [task.file.file_path for task in table.scan().plan_files()]


def events(catalog):
    """`events` by day, 4 appends over 3 days, then a column added and renamed, and 2 more appends."""
    table = new_table(catalog)
    table.append(rows((1, "2024-01-01T10:00", "a", 1.5), (2, "2024-01-02T11:00", "b", 2.5)))
    table.append(rows((3, "2024-01-02T12:00", "a", 3.5), (4, "2024-01-03T09:00", "c", None)))
    table.append(rows((5, "2024-01-03T10:00", None, 5.5)))
    table.append(rows((6, "2024-01-01T23:00", "b", 6.5)))
    with table.update_schema() as update:
        update.add_column("note", StringType())
        update.rename_column("amount", "total")
    table = catalog.load_table(("default", "events"))
    arrow = pa.Table.from_pylist([
        {"id": 7, "ts": datetime(2024, 1, 4, 8), "category": "d", "total": 7.5, "note": "late"},
        {"id": 8, "ts": datetime(2024, 1, 2, 8), "category": "a", "total": 8.5, "note": None},
    ], schema=table.schema().as_arrow())
    table.append(arrow)
    return catalog.load_table(("default", "events"))


def test_server_planning_reads_the_rows_client_planning_reads(connect, http, storage):
    client = connect()
    server = connect(**SERVER)
    table = events(client)
    assert len(data_files(table)) == 8

    filters = [
        AlwaysTrue(),
        EqualTo("category", "a"),
        GreaterThanOrEqual("ts", "2024-01-03T00:00:00"),
        And(LessThan("ts", "2024-01-02T00:00:00"), NotEqualTo("id", 6)),
        Or(EqualTo("note", "late"), IsNull("category")),
        In("id", {2, 7}),
        GreaterThanOrEqual("total", 6.0),  # the renamed column: statistics by field id
        EqualTo("category", "zzz"),
    ]
    for row_filter in filters:
        on_client, on_server = both_ways(client, server, row_filter)
        assert on_server == on_client, row_filter
    assert both_ways(client, server, GreaterThanOrEqual("id", 5), selected_fields=("id", "note"))[1][0] == [
        {"id": 5, "note": None}, {"id": 6, "note": None}, {"id": 7, "note": "late"}, {"id": 8, "note": None}]

    # Time travel to the snapshot before the schema change: the rows of that snapshot.
    first = table.snapshots()[0].snapshot_id
    on_client, on_server = both_ways(client, server, snapshot_id=first)
    assert [row["id"] for row in on_server[0]] == [1, 2] and on_server == on_client

    # Pruning: one day's partition, then column statistics within the partitions.
    last_day = json.loads(GreaterThanOrEqual("ts", "2024-01-04T00:00:00").model_dump_json())
    by_day = http("POST", PLAN, {"filter": last_day})
    assert by_day.status_code == 200, by_day.text
    answer = by_day.json()
    assert answer["status"] == "completed" and "plan-tasks" not in answer
    assert [task["data-file"]["record-count"] for task in answer["file-scan-tasks"]] == [1]
    by_stats = http("POST", PLAN, {"filter": {"type": "eq", "term": "id", "value": 4}}).json()
    assert len(by_stats["file-scan-tasks"]) == 1 < len(data_files(table))
    [task] = by_stats["file-scan-tasks"]
    assert task["residual-filter"] == {"type": "eq", "term": "id", "value": 4}
    assert task["data-file"]["file-path"] in data_files(table)

    # A plan is recorded as a read of the table, by the principal that planned.
    assert audited_successes("planIcebergScan") >= len(filters) + 3
    event = AuditEvent.objects.filter(action="planIcebergScan").latest("id")
    assert event.principal == "admin" and event.securable_name == "unity.default.events"


@file_only
def test_a_plan_larger_than_a_page_pages_through_plan_tasks(connect, http, settings):
    settings.UCWEB_SCAN_PLAN_PAGE_SIZE = 3
    client = connect()
    table = new_table(client, partition_spec=BY_DAY)
    for day in range(1, 9):  # 8 files, one a day
        table.append(rows((day, f"2024-01-0{day}T10:00", "a", float(day))))
    table = client.load_table(("default", "events"))
    files = sorted(data_files(table))
    assert len(files) == 8

    answer = http("POST", PLAN, {}).json()
    assert len(answer["file-scan-tasks"]) == 3 and len(answer["plan-tasks"]) == 2
    paged = [task["data-file"]["file-path"] for task in answer["file-scan-tasks"]]
    for plan_task in answer["plan-tasks"]:
        page = http("POST", TASKS, {"plan-task": plan_task})
        assert page.status_code == 200, page.text
        assert "plan-tasks" not in page.json()
        paged += [task["data-file"]["file-path"] for task in page.json()["file-scan-tasks"]]
    assert sorted(paged) == files and len(paged) == len(set(paged))

    # fetchPlanningResult answers the same first page and plan tasks again.
    again = http("GET", f"{PLAN}/{answer['plan-id']}").json()
    assert again == answer

    on_client, on_server = both_ways(client, connect(**SERVER))
    assert on_server == on_client and len(on_server[0]) == 8
    on_client, on_server = both_ways(client, connect(**SERVER), GreaterThanOrEqual("id", 3))
    assert on_server == on_client and len(on_server[0]) == 6


def _unchanged(table_id, metadata_location) -> bool:
    return Table.objects.get(id=table_id).iceberg.metadata_location == metadata_location


@file_only
def test_bad_scan_requests_are_refused_and_change_nothing(connect, http):
    table = new_table(connect())
    table.append(rows((1, "2024-01-01T10:00", "a", 1.5)))
    row = Table.objects.get(name="events")
    location = row.iceberg.metadata_location
    before = AuditEvent.objects.filter(action="planIcebergScan", outcome="SUCCESS").count()

    missing_column = http("POST", PLAN, {"filter": {"type": "eq", "term": "no_such_column", "value": 1}})
    assert error_of(missing_column) == (400, "BadRequestException")
    assert "no_such_column" in missing_column.json()["error"]["message"]
    # The same through pyiceberg in server mode: a 400, as its own planning refuses the filter.
    with pytest.raises(Exception, match="no_such_column"):
        connect(**SERVER).load_table(("default", "events")).scan(row_filter=EqualTo("no_such_column", 1)).to_arrow()

    big = {"type": "in", "term": "category", "values": ["x" * 1000] * 10_500}  # 10 MB
    assert len(json.dumps({"filter": big})) > 10 * 1024 * 1024
    assert error_of(http("POST", PLAN, {"filter": big})) == (413, "BadRequestException")

    for body in ({"filter": {"type": "nonsense"}}, {"filter": "id = 1"}, {"select": ["nope"]},
                 {"snapshot-id": 12345}, {"snapshot-id": "x"}, {"case-sensitive": "yes"},
                 {"filter": {"type": "lt", "term": "id", "value": "not a number"}},
                 {"filter": {"type": "starts-with", "term": "ts", "value": 2**70}},
                 {"start-snapshot-id": 1}, [1, 2]):
        assert error_of(http("POST", PLAN, body)) == (400, "BadRequestException"), body
    # A filter nested nearly as deeply as a body may be is read; one nested 2000 levels deep is refused.
    deep = {"type": "eq", "term": "id", "value": 1}
    for _ in range(97):
        deep = {"type": "not", "child": deep}
    assert http("POST", PLAN, {"filter": deep}).status_code == 200
    ScanPlan.objects.all().delete()
    before += 1  # that plan, the one request here that is no bad input
    deeper = '{"type": "eq", "term": "id", "value": 1}'
    for _ in range(2000):
        deeper = '{"type": "not", "child": ' + deeper + "}"
    too_deep = http.session.post(http.base + PLAN, data='{"filter": ' + deeper + "}",
                                 headers={"Content-Type": "application/json"}, timeout=30)
    assert error_of(too_deep) == (400, "BadRequestException")
    assert error_of(http("POST", PLAN, {"start-snapshot-id": 1, "end-snapshot-id": 2})) == (
        501, "UnsupportedOperationException")
    for body in ({}, {"plan-task": 7}, {"plan-task": ""}, {"plan-task": "\x00.1"}, {"plan-task": "a\x00b.0"}):
        assert error_of(http("POST", TASKS, body)) == (400, "BadRequestException"), body
    for plan_task in ("x", "x.1", "x.-1", f"{'a' * 43}.99999999999999999999", "\u0661.\u0661"):
        assert error_of(http("POST", TASKS, {"plan-task": plan_task})) == (404, "NoSuchPlanTaskException"), plan_task
    assert error_of(http("GET", f"{PLAN}/{'a' * 43}")) == (404, "NoSuchPlanIdException")
    assert error_of(http("POST", "/namespaces/default/tables/nope/plan", {})) == (404, "NoSuchTableException")

    assert not ScanPlan.objects.exists() and not ScanPlanPage.objects.exists()
    assert AuditEvent.objects.filter(action="planIcebergScan", outcome="SUCCESS").count() == before
    assert _unchanged(row.id, location)


@file_only
def test_a_plan_answers_only_its_principal_and_only_until_it_expires(connect, http, settings):
    table = new_table(connect())
    table.append(rows((1, "2024-01-01T10:00", "a", 1.5)))
    table.append(rows((2, "2024-01-02T10:00", "b", 2.5)))
    for name in ("bob", "carol"):
        grant(name, "catalog", "unity", "USE CATALOG")
        grant(name, "schema", "unity.default", "USE SCHEMA")
        grant(name, "table", "unity.default.events", "SELECT")
    grant("dave", "catalog", "unity", "USE CATALOG")
    grant("dave", "schema", "unity.default", "USE SCHEMA")  # and nothing on the table
    bob, carol, dave = http.as_("bob"), http.as_("carol"), http.as_("dave")

    settings.UCWEB_SCAN_PLAN_PAGE_SIZE = 1
    plan = bob("POST", PLAN, {})
    assert plan.status_code == 200, plan.text
    plan_id, [plan_task] = plan.json()["plan-id"], plan.json()["plan-tasks"]
    assert len(plan_id) >= 43 and plan_task.startswith(plan_id)

    # Another principal, even one that may read the table, gets the answer of an unknown plan id.
    unknown = "b" * len(plan_id)
    assert error_of(carol("GET", f"{PLAN}/{plan_id}")) == error_of(carol("GET", f"{PLAN}/{unknown}")) == (
        404, "NoSuchPlanIdException")
    assert error_of(carol("POST", TASKS, {"plan-task": plan_task})) == (404, "NoSuchPlanTaskException")
    assert error_of(carol("DELETE", f"{PLAN}/{plan_id}")) == (404, "NoSuchPlanIdException")
    # One that may not see the table gets the answer of a table that does not exist.
    assert error_of(dave("POST", PLAN, {})) == error_of(dave("POST", "/namespaces/default/tables/nope/plan", {})) == (
        404, "NoSuchTableException")
    assert error_of(dave("GET", f"{PLAN}/{plan_id}")) == (404, "NoSuchTableException")
    # Through another table, the plan does not exist either.
    other = new_table(connect(), "other")
    other.append(rows((3, "2024-01-01T10:00", "a", 1.5)))
    assert error_of(http("POST", "/namespaces/default/tables/other/tasks", {"plan-task": plan_task})) == (
        404, "NoSuchPlanTaskException")
    # Its own principal still reads it.
    assert bob("GET", f"{PLAN}/{plan_id}").json() == plan.json()
    assert len(bob("POST", TASKS, {"plan-task": plan_task}).json()["file-scan-tasks"]) == 1

    # Cancelled, it is gone.
    assert bob("DELETE", f"{PLAN}/{plan_id}").status_code == 204
    assert error_of(bob("GET", f"{PLAN}/{plan_id}")) == (404, "NoSuchPlanIdException")
    assert error_of(bob("POST", TASKS, {"plan-task": plan_task})) == (404, "NoSuchPlanTaskException")
    assert not ScanPlan.objects.filter(id=plan_id).exists()
    assert not ScanPlanPage.objects.filter(plan_id=plan_id).exists()

    # Expired (a lifetime of 0 seconds), a plan answers as one that does not exist.
    settings.UCWEB_SCAN_PLAN_LIFETIME_SECONDS = 0
    expired = bob("POST", PLAN, {}).json()
    assert error_of(bob("GET", f"{PLAN}/{expired['plan-id']}")) == (404, "NoSuchPlanIdException")
    assert error_of(bob("POST", TASKS, {"plan-task": expired["plan-tasks"][0]})) == (404, "NoSuchPlanTaskException")
    # ... and is deleted when the next plan is made.
    settings.UCWEB_SCAN_PLAN_LIFETIME_SECONDS = 3600
    assert bob("POST", PLAN, {}).status_code == 200
    assert not ScanPlan.objects.filter(id=expired["plan-id"]).exists()

    refused = AuditEvent.objects.filter(action="fetchIcebergScanTasks", principal="carol")
    assert refused.exists() and all(event.outcome != "SUCCESS" for event in refused)


@file_only
def test_the_catalog_advertises_scan_planning(http):
    endpoints = http.root("GET", "/config").json()["endpoints"]
    assert {"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
            "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
            "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
            "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks"} <= set(endpoints)


def test_an_unpartitioned_table_with_identity_columns_and_no_snapshot(connect, http, storage):
    client, server = connect(), connect(**SERVER)
    table = client.create_table(("default", "events"), schema=SCHEMA)
    empty = http("POST", PLAN, {}).json()
    assert empty["status"] == "completed" and empty["file-scan-tasks"] == []
    assert server.load_table(("default", "events")).scan().to_arrow().num_rows == 0
    for start in range(0, 40, 10):
        table.append(rows(*[(i, f"2024-01-0{1 + i % 5}T10:00", f"c{i % 3}", float(i))
                            for i in range(start, start + 10)]))
    with table.update_schema() as update:
        update.add_column("extra", LongType())
    for row_filter in (AlwaysTrue(), LessThan("id", 10), EqualTo("category", "c1"), IsNull("extra"),
                       And(GreaterThanOrEqual("id", 15), LessThan("amount", 25.0))):
        on_client, on_server = both_ways(client, server, row_filter)
        assert on_server == on_client, row_filter
    pruned = http("POST", PLAN, {"filter": {"type": "lt", "term": "id", "value": 10}}).json()
    assert len(pruned["file-scan-tasks"]) == 1


def test_kept_manifest_entries_are_bounded_and_keyed_by_their_root(settings):
    from catalog.services.iceberg_scan_tasks import _ManifestEntries, common_folder

    settings.UCWEB_SCAN_MANIFEST_CACHE_ENTRIES = 5
    kept = _ManifestEntries()
    kept.put(("file:///t1", "file:///t1/m1.avro"), [1, 2, 3])
    kept.put(("file:///t1", "file:///t1/m2.avro"), [4, 5])
    assert kept.get(("file:///t1", "file:///t1/m1.avro")) == [1, 2, 3]
    assert kept.get(("file:///t2", "file:///t1/m1.avro")) is None  # read under another root: not kept for it
    kept.put(("file:///t1", "file:///t1/m3.avro"), [6])  # over the bound: the least recently used goes
    assert kept.get(("file:///t1", "file:///t1/m2.avro")) is None
    assert kept.get(("file:///t1", "file:///t1/m1.avro")) == [1, 2, 3]
    kept.put(("file:///t1", "file:///t1/big.avro"), list(range(6)))  # larger than the bound: not kept
    assert kept.get(("file:///t1", "file:///t1/big.avro")) is None
    settings.UCWEB_SCAN_MANIFEST_CACHE_ENTRIES = 0
    kept.put(("file:///t1", "file:///t1/m4.avro"), [7])
    assert kept.get(("file:///t1", "file:///t1/m4.avro")) is None

    assert common_folder(["s3://b/t/data/a=1/x.parquet", "s3://b/t/data/a=1/y.parquet"]) == "s3://b/t/data/a=1"
    assert common_folder(["s3://b/t/data/a=1/x.parquet", "s3://b/t/data/a=2/y.parquet"]) == "s3://b/t/data"
    assert common_folder(["file:///r/t/data/x.parquet"]) == "file:///r/t/data"
    assert common_folder(["s3://b/x.parquet", "file:///b/y.parquet"]) is None
    assert common_folder(["s3://a/x.parquet", "s3://b/y.parquet"]) is None
    assert common_folder([]) is None
