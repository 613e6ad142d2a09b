"""The catalog maintains the managed Delta tables it reserves maintenance of: OPTIMIZE, VACUUM,
CHECKPOINT, on real parquet files written through the Delta test client, ratified by the same
ratification as any client, with writers committing while OPTIMIZE runs, on S3, and by
partition. Reads rebuild the table from the log as a Delta reader does. How runs are started,
retried and shown is in test_maintenance_delta_runs.py."""

from __future__ import annotations

import io
import json
import threading
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.db import connection
from unitycatalog.client.exceptions import ApiException

from catalog.models import AuditEvent, Table
from catalog.storage import join, storage_for
from commits.models import DeltaCommit
from maintenance import runs
from maintenance.models import MaintenancePlan
from tests.delta_client import DeltaCommitInfo, encode, log_name
from tests.helpers import plant_orphans
from tests.maintenance_delta_support import commit, live_files, make_table, read_rows, write_rows
from tests.maintenance_delta_support import table_of_20  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)
Status = MaintenancePlan.Status


def append_with_retry(delta, table_id, location, add) -> int:
    """A writer's blind append: on 409 it reads the latest version and tries the next one."""
    for _ in range(500):
        latest = delta.get_commits(table_id, location).latest_table_version
        try:
            commit(delta, table_id, location, latest + 1, add)
            return latest + 1
        except ApiException as exc:
            if exc.status not in (409, 429):
                raise
    raise AssertionError("the writer never got a version")


def checksums(table: pa.Table) -> dict:
    import hashlib

    return {name: hashlib.sha256(json.dumps(table.column(name).to_pylist()).encode()).hexdigest()
            for name in table.column_names}


@pytest.fixture
def small_table(delta):
    """200 small commits, one file of 10 rows each."""
    return make_table(delta, 200)


# -- OPTIMIZE, time travel, VACUUM, CHECKPOINT ------------------------------------------------------
def test_optimize_200_small_commits_then_time_travel_then_vacuum(delta, small_table, capsys):
    table_id, location = small_table
    before = read_rows(delta, table_id, location)
    assert before.num_rows == 2000 and len(live_files(delta, table_id, location)) == 200

    call_command("run_maintenance", "unity.default.events", "--operation", "OPTIMIZE")
    out = capsys.readouterr().out
    assert "OPTIMIZE unity.default.events: SUCCEEDED" in out and "files: 200 -> 1" in out
    assert "[##############################] rewrote 200/200 files" in out

    table = Table.objects.get(id=table_id)
    assert table.latest_version == 201
    after_files = live_files(delta, table_id, location)
    assert len(after_files) == 1 and after_files[0]["dataChange"] is False
    after = read_rows(delta, table_id, location)
    assert after.equals(before) and checksums(after) == checksums(before)

    # The commit is a Delta OPTIMIZE: commitInfo first, removes and adds without data change.
    log = join(location, "_delta_log")
    actions = [json.loads(line) for line in storage_for(log).read(join(log, log_name(201))).decode().splitlines()]
    assert actions[0]["commitInfo"]["operation"] == "OPTIMIZE"
    assert actions[0]["commitInfo"]["inCommitTimestamp"] > 0
    assert DeltaCommit.objects.get(table_id=table_id, version=201).operation == "OPTIMIZE"  # as recorded
    removes = [a["remove"] for a in actions if "remove" in a]
    assert len(removes) == 200 and all(r["dataChange"] is False for r in removes)
    # It was ratified like a client's commit, by the catalog's service principal, and audited.
    assert AuditEvent.objects.filter(action="commitDelta", principal="ucweb-maintenance",
                                     securable_id=table_id).count() == 1
    plan = MaintenancePlan.objects.get(table_id=table_id, operation="OPTIMIZE")
    assert plan.status == Status.SUCCEEDED and plan.attempts == 1
    assert plan.before["files"] == 200 and plan.after["files"] == 1
    assert plan.before["small_file_share"] == 1.0 and plan.after["duration_seconds"] >= 0
    assert AuditEvent.objects.filter(action="maintenanceOptimize", securable_id=table_id, outcome="SUCCESS").exists()

    # Time travel to a version before the OPTIMIZE still reads, from the old files.
    old = read_rows(delta, table_id, location, version=200)
    assert old.equals(before)
    assert read_rows(delta, table_id, location, version=100).num_rows == 1000

    # VACUUM with one hour of retention: the files OPTIMIZE removed a moment ago stay, an old
    # unreferenced file goes, a fresh unreferenced file (a writer's, about to commit) stays.
    table.properties = {**table.properties, "delta.deletedFileRetentionDuration": "interval 1 hours"}
    table.save(update_fields=["properties"])
    root = Path(location.removeprefix("file://"))
    old_orphan, fresh_orphan = plant_orphans(root)
    call_command("run_maintenance", "unity.default.events", "--operation", "VACUUM")
    assert not old_orphan.exists() and fresh_orphan.exists()
    assert read_rows(delta, table_id, location, version=200).equals(before)
    plan = MaintenancePlan.objects.filter(table_id=table_id, operation="VACUUM").first()
    assert plan.status == Status.SUCCEEDED and plan.after["files_deleted"] == 1

    # Past the retention, the removed files go too; the latest version reads the same.
    table.properties = {**table.properties, "delta.deletedFileRetentionDuration": "interval 0 hours"}
    table.save(update_fields=["properties"])
    call_command("run_maintenance", "unity.default.events", "--operation", "VACUUM")
    parquet = sorted(p.name for p in root.glob("*.parquet"))
    assert parquet == [after_files[0]["path"]]
    assert read_rows(delta, table_id, location).equals(before)
    assert (root / "_delta_log" / log_name(0)).exists()


def test_checkpoint_describes_the_live_files(delta, table_of_20):
    table_id, location = table_of_20
    call_command("run_maintenance", "unity.default.events", "--operation", "CHECKPOINT")
    log = Path(location.removeprefix("file://")) / "_delta_log"
    last = json.loads((log / "_last_checkpoint").read_text())
    assert last["version"] == 20 and last["numOfAddFiles"] == 20
    checkpoint = pq.read_table(log / f"{20:020d}.checkpoint.parquet")
    adds = [row["path"] for row in checkpoint.column("add").to_pylist() if row]
    assert sorted(adds) == sorted(a["path"] for a in live_files(delta, table_id, location))
    protocol = [row for row in checkpoint.column("protocol").to_pylist() if row]
    assert protocol and "catalogManaged" in protocol[0]["readerFeatures"]

    # The checkpoint is where the catalog's own reader starts: OPTIMIZE after it still sees all rows.
    before = read_rows(delta, table_id, location)
    call_command("run_maintenance", "unity.default.events", "--operation", "OPTIMIZE")
    assert read_rows(delta, table_id, location).equals(before)
    assert len(live_files(delta, table_id, location)) == 1


def test_eight_writers_commit_during_compaction_and_all_land(delta, small_table):
    table_id, location = small_table
    before = read_rows(delta, table_id, location)
    plan = runs.request_run(table=Table.objects.get(id=table_id), operation="OPTIMIZE", requested_by="test")
    written: list[list[str]] = [[] for _ in range(8)]
    errors = []
    start = threading.Barrier(9)

    def writer(index):
        try:
            start.wait()
            for n in range(6):
                add = write_rows(location, 100_000 + index * 1000 + n * 10, 10, f"w{index}")
                append_with_retry(delta, table_id, location, add)
                written[index].append(add["path"])
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    start.wait()
    result = runs.run_plan(plan.id)
    for thread in threads:
        thread.join()
    connection.close()
    assert errors == []
    assert result.status == Status.SUCCEEDED, result.outcome
    table = Table.objects.get(id=table_id)
    assert table.latest_version == 200 + 48 + 1
    final = read_rows(delta, table_id, location)
    assert final.num_rows == before.num_rows + 48 * 10
    live = {a["path"] for a in live_files(delta, table_id, location)}
    assert all(path in live for paths in written for path in paths)
    ids = set(final.column("id").to_pylist())
    assert set(before.column("id").to_pylist()) <= ids


def test_a_user_commit_that_removes_a_rewritten_file_wins(delta, table_of_20):
    """A user's DELETE of a file the OPTIMIZE rewrote lands first: the maintenance commit gives
    up (nothing of it is committed), and the operation is planned again."""
    table_id, location = table_of_20
    victim = sorted(a["path"] for a in live_files(delta, table_id, location))[0]
    table = Table.objects.get(id=table_id)
    from maintenance import delta_ops, policy
    from maintenance.errors import Conflict

    class Ctx:
        def check(self):
            pass

        def before(self, figures):
            pass

        def progress(self, text):
            if text.startswith("ratifying") and not done:
                done.append(True)
                now = int(time.time() * 1000)
                payload = encode([{"commitInfo": {"inCommitTimestamp": now, "operation": "DELETE"}},
                                  {"remove": {"path": victim, "deletionTimestamp": now, "dataChange": True}}])
                name = f"{21:020d}.{uuid.uuid4()}.json"
                url = join(location, "_delta_log", "_staged_commits", name)
                storage_for(url).put(url, payload)
                delta.ratify(table_id, location, DeltaCommitInfo(
                    version=21, timestamp=now, file_name=name, file_size=len(payload), file_modification_timestamp=now))

    done = []
    with pytest.raises(Conflict):
        delta_ops.optimize(table, policy.for_table(table), Ctx())
    table.refresh_from_db()
    assert table.latest_version == 21
    live = live_files(delta, table_id, location)
    assert len(live) == 19 and victim not in {a["path"] for a in live}
    root = Path(location.removeprefix("file://"))
    assert len(list(root.glob("*.parquet"))) == 20  # the uncommitted output was removed


@pytest.mark.s3
def test_optimize_and_vacuum_on_s3(delta_s3):
    """The same executors through the S3 storage (boto3 against SeaweedFS)."""
    table_id, location = make_table(delta_s3, 12)
    before = read_rows(delta_s3, table_id, location)
    call_command("run_maintenance", "unity.default.events", "--operation", "OPTIMIZE")
    assert len(live_files(delta_s3, table_id, location)) == 1
    assert read_rows(delta_s3, table_id, location).equals(before)
    assert read_rows(delta_s3, table_id, location, version=12).equals(before)
    table = Table.objects.get(id=table_id)
    table.properties = {**table.properties, "delta.deletedFileRetentionDuration": "interval 0 hours"}
    table.save(update_fields=["properties"])
    call_command("run_maintenance", "unity.default.events", "--operation", "VACUUM")
    data = [item for item in storage_for(location).list(location) if "/_delta_log/" not in item.url]
    assert len(data) == 1
    assert read_rows(delta_s3, table_id, location).equals(before)


def test_optimize_bin_packs_each_partition_on_its_own(delta):
    from tests.delta_client import metadata_action, protocol_action

    staging = delta.stage("unity", "default", "parted")
    metadata = metadata_action(staging.id)
    metadata["metaData"]["partitionColumns"] = ["city"]
    delta.write_version_zero(staging.staging_location, staging.id, actions=[
        {"commitInfo": {"inCommitTimestamp": int(time.time() * 1000), "operation": "CREATE TABLE"}},
        protocol_action(), metadata])
    created = delta.finalize("unity", "default", "parted", staging.staging_location)
    table_id, location = created.table_id, created.storage_location
    cities = ["Lyon", "Saint Étienne/Loire"]
    for version in range(1, 13):
        city = cities[version % 2]
        data = pa.table({"id": pa.array(range(version * 10, version * 10 + 10), pa.int64())})
        buffer = io.BytesIO()
        pq.write_table(data, buffer)
        name = f"part-{uuid.uuid4()}.parquet"
        storage_for(location).put(join(location, name), buffer.getvalue())
        commit(delta, table_id, location, version, {
            "path": name, "size": len(buffer.getvalue()), "modificationTime": int(time.time() * 1000),
            "dataChange": True, "partitionValues": {"city": city}})

    def by_city():
        result = {}
        for add in live_files(delta, table_id, location):
            from urllib.parse import unquote

            ids = pq.read_table(io.BytesIO(storage_for(location).read(join(location, unquote(add["path"]))))).column("id")
            result.setdefault(add["partitionValues"]["city"], []).extend(ids.to_pylist())
        return {city: sorted(ids) for city, ids in result.items()}

    before = by_city()
    call_command("run_maintenance", "unity.default.parted", "--operation", "OPTIMIZE")
    after_files = live_files(delta, table_id, location)
    assert sorted(a["partitionValues"]["city"] for a in after_files) == sorted(cities)
    assert all(a["path"].startswith("city=") for a in after_files)
    assert by_city() == before
