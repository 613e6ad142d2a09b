"""The catalog maintains Iceberg tables on Spark (the Iceberg Spark procedures, through ucweb's own
REST catalog as its service principal): pyiceberg appends 200 small batches, compaction drops the
live file count and keeps every row, pyiceberg, DuckDB and Spark read the same table; expiry keeps
what the policy says; orphan removal deletes a planted orphan and nothing any snapshot references."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path

import pyarrow as pa
import pytest
from django.core.management import call_command
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

from catalog.models import AuditEvent, Table, Token
from maintenance.models import MaintenancePlan
from tests.duckdb_sessions import iceberg_duckdb
from tests.spark_iceberg import SPARK_TOKEN, admit_token, pyiceberg_catalog, spark  # noqa: F401 - fixtures

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark, pytest.mark.xdist_group("spark")]
Status = MaintenancePlan.Status
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "city", StringType(), required=False),
                NestedField(3, "amount", DoubleType(), required=False))


@pytest.fixture(autouse=True)
def spark_principal(bootstrap, storage_root, live_server, settings):
    admit_token()
    settings.UCWEB_ICEBERG_CATALOG_URL = f"{live_server.url}/api/catalog"


def checksums(table: pa.Table) -> dict:
    table = table.sort_by([("id", "ascending")])
    return {name: hashlib.sha256(json.dumps(table.column(name).to_pylist()).encode()).hexdigest()
            for name in table.column_names}


def local_path(url: str) -> Path:
    """file:/x, file:///x -> /x (Spark writes the first form, pyiceberg the second)."""
    return Path("/" + re.sub(r"^file:/+", "", url))


def data_files(table) -> list[str]:
    return [row["file_path"] for row in table.inspect.files().to_pylist()]


@pytest.fixture
def events(pyiceberg_catalog):
    pyiceberg_catalog.create_namespace("sales")
    table = pyiceberg_catalog.create_table("sales.events", schema=SCHEMA)
    for batch in range(200):
        table.append(pa.table({"id": pa.array(range(batch * 5, batch * 5 + 5), pa.int64()),
                               "city": [f"c{batch % 11}"] * 5, "amount": [batch * 1.5 + i for i in range(5)]}))
    return table


def duckdb_rows(live_server) -> list[tuple]:
    con = iceberg_duckdb(f"{live_server.url}/api/catalog", SPARK_TOKEN)
    try:
        return con.sql("SELECT id, city, amount FROM lake.sales.events ORDER BY id").fetchall()
    finally:
        con.close()


def test_compaction_expiry_and_orphans(spark, pyiceberg_catalog, events, live_server, capsys):
    before = events.scan().to_arrow()
    assert before.num_rows == 1000 and len(data_files(events)) == 200

    call_command("run_maintenance", "unity.sales.events", "--operation", "OPTIMIZE")
    assert "OPTIMIZE unity.sales.events: SUCCEEDED" in capsys.readouterr().out
    table = pyiceberg_catalog.load_table("sales.events")
    files = data_files(table)
    assert len(files) == 1  # 1,000 tiny rows: one file of the 128 MiB target
    after = table.scan().to_arrow()
    assert checksums(after) == checksums(before)
    expected = sorted(zip(*(before.column(n).to_pylist() for n in ("id", "city", "amount"))))
    assert duckdb_rows(live_server) == expected
    spark_rows = [tuple(r) for r in spark.sql("SELECT id, city, amount FROM ucweb.sales.events ORDER BY id").collect()]
    assert spark_rows == expected
    plan = MaintenancePlan.objects.get(operation="OPTIMIZE")
    assert plan.before["files"] == 200 and plan.after["files"] == 1 and plan.after["snapshots"] == 201
    assert AuditEvent.objects.filter(action="maintenanceOptimize", outcome="SUCCESS").exists()
    # Spark committed through the REST catalog as the catalog's service principal.
    assert AuditEvent.objects.filter(principal="ucweb-maintenance", securable_name="unity.sales.events") \
        .exclude(action__startswith="maintenance").exists()

    # Expiry: everything older than 0 ms goes except the 5 the table property keeps.
    row = Table.objects.get(name="events")
    row.properties = {**row.properties, "history.expire.max-snapshot-age-ms": "0",
                      "history.expire.min-snapshots-to-keep": "5"}
    row.save(update_fields=["properties"])
    call_command("run_maintenance", "unity.sales.events", "--operation", "EXPIRE_SNAPSHOTS")
    table = pyiceberg_catalog.load_table("sales.events")
    assert len(table.metadata.snapshots) == 5
    latest = pyiceberg_catalog.load_table("sales.events").metadata.snapshots[-1]
    assert table.metadata.current_snapshot_id == latest.snapshot_id
    assert checksums(table.scan().to_arrow()) == checksums(before)

    # Orphans: every file of the table is made four days old; a planted file that no metadata
    # references goes, everything any snapshot or metadata references stays.
    location = local_path(table.metadata.location)
    orphan = location / "data" / "00000-0-orphan.parquet"
    orphan.write_bytes(b"not referenced")
    four_days_ago = time.time() - 4 * 24 * 3600
    for path in location.rglob("*"):
        if path.is_file():
            os.utime(path, (four_days_ago, four_days_ago))
    referenced = set()
    for snapshot in table.metadata.snapshots:
        for manifest in snapshot.manifests(table.io):
            referenced.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
                referenced.add(entry.data_file.file_path)
        referenced.add(snapshot.manifest_list)
    call_command("run_maintenance", "unity.sales.events", "--operation", "REMOVE_ORPHANS")
    assert not orphan.exists()
    assert len(referenced) > 200
    for url in referenced:
        assert local_path(url).exists(), url
    plan = MaintenancePlan.objects.get(operation="REMOVE_ORPHANS")
    assert plan.status == Status.SUCCEEDED and plan.after["orphans_removed"] >= 1
    assert checksums(pyiceberg_catalog.load_table("sales.events").scan().to_arrow()) == checksums(before)

    call_command("run_maintenance", "unity.sales.events", "--operation", "REWRITE_MANIFESTS")
    assert MaintenancePlan.objects.get(operation="REWRITE_MANIFESTS").status == Status.SUCCEEDED
    assert checksums(pyiceberg_catalog.load_table("sales.events").scan().to_arrow()) == checksums(before)
    # The run's token is gone after the run.
    assert not Token.objects.filter(principal__name="ucweb-maintenance").exists()


def test_files_outside_the_table_are_never_deleted(spark, pyiceberg_catalog, tmp_path):
    """A snapshot that references a file outside the table's location (pyiceberg add_files can
    register any path) stops expiry and orphan removal: the catalog deletes no file that is not
    the table's own."""
    import pyarrow.parquet as pq

    pyiceberg_catalog.create_namespace("sales")
    table = pyiceberg_catalog.create_table("sales.borrowed", schema=SCHEMA)
    outside = tmp_path / "someone-elses.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "city": ["x"], "amount": [1.0]}), outside)
    table.add_files([outside.as_uri()])
    table = pyiceberg_catalog.load_table("sales.borrowed")
    table.overwrite(pa.table({"id": pa.array([2], pa.int64()), "city": ["y"], "amount": [2.0]}))
    snapshots = len(pyiceberg_catalog.load_table("sales.borrowed").metadata.snapshots)
    assert snapshots >= 2
    row = Table.objects.get(name="borrowed")
    row.properties = {**row.properties, "history.expire.max-snapshot-age-ms": "0",
                      "history.expire.min-snapshots-to-keep": "1"}
    row.save(update_fields=["properties"])
    for operation in ("EXPIRE_SNAPSHOTS", "REMOVE_ORPHANS"):
        with pytest.raises(SystemExit) as exited:
            call_command("run_maintenance", "unity.sales.borrowed", "--operation", operation)
        assert exited.value.code == 3  # SKIPPED: nothing was done
        plan = MaintenancePlan.objects.get(operation=operation)
        assert plan.status == Status.SKIPPED and "outside the table location" in plan.outcome, plan.outcome
    assert outside.exists()
    assert len(pyiceberg_catalog.load_table("sales.borrowed").metadata.snapshots) == snapshots
