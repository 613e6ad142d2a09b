"""The run lifecycle around the executors: planning from Iceberg metadata and Delta reports, one
run per table, SKIPPED with the reason where Spark cannot run, the policy's one reading point."""

from __future__ import annotations

import pyarrow as pa
import pytest
from django.core.management import call_command
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from catalog.models import AuditEvent, Table, Token
from maintenance import health, policy, runs
from maintenance.models import MaintenancePlan
from tests.test_maintenance_delta import commit, make_table, write_rows

pytestmark = pytest.mark.django_db(transaction=True)
Status = MaintenancePlan.Status


@pytest.fixture
def iceberg_table(live_server, bootstrap, make_token, storage_root, settings):
    settings.UCWEB_OPTIMIZE_MIN_FILES = 10
    catalog = RestCatalog("ucweb", uri=f"{live_server.url}/api/catalog", warehouse="unity",
                          token=make_token("admin", admin=True))
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.events", schema=Schema(NestedField(1, "id", LongType(), required=False)))
    for batch in range(12):
        table.append(pa.table({"id": pa.array([batch], pa.int64())}))
    return Table.objects.get(name="events")


def test_iceberg_tables_are_planned_from_their_metadata(iceberg_table):
    row = iceberg_table
    row.properties = {**row.properties, "history.expire.max-snapshot-age-ms": "0"}
    row.save(update_fields=["properties"])
    assert health.refresh_all() == 1
    plans = {p.operation: p for p in MaintenancePlan.objects.filter(table=row)}
    assert set(plans) == {"OPTIMIZE", "EXPIRE_SNAPSHOTS", "REMOVE_ORPHANS"}
    assert "12 data files" in plans["OPTIMIZE"].reason
    assert "11 of 12 snapshots" in plans["EXPIRE_SNAPSHOTS"].reason
    # Planned once: refreshing again adds nothing while they are PLANNED.
    health.refresh_all()
    assert MaintenancePlan.objects.filter(table=row).count() == 3
    # A table whose policy turns maintenance off is not planned.
    MaintenancePlan.objects.all().delete()
    row.properties = {**row.properties, "ucweb.maintenance.enabled": "false"}
    row.save(update_fields=["properties"])
    health.refresh_all()
    assert not MaintenancePlan.objects.exists()


def test_without_java_an_iceberg_run_is_skipped_with_the_reason(iceberg_table, monkeypatch, settings, tmp_path,
                                                                capsys):
    settings.JAVA_HOME = None
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemExit) as exited:
        call_command("run_maintenance", "unity.sales.events", "--operation", "EXPIRE_SNAPSHOTS")
    assert exited.value.code == 3  # a script learns that nothing was done
    assert "SKIPPED" in capsys.readouterr().out
    plan = MaintenancePlan.objects.get(table=iceberg_table)
    assert plan.status == Status.SKIPPED and "Java is not installed" in plan.outcome
    event = AuditEvent.objects.get(action="maintenanceExpireSnapshots")
    assert event.details["status"] == "SKIPPED" and event.principal == "ucweb-maintenance"
    assert not Token.objects.filter(principal__name="ucweb-maintenance").exists()


def test_one_run_per_table_at_a_time(iceberg_table):
    first = runs.request_run(table=iceberg_table, operation="OPTIMIZE", requested_by="test")
    second = runs.request_run(table=iceberg_table, operation="REWRITE_MANIFESTS", requested_by="test")
    assert runs.claim(first.id, "worker-a") is not None
    assert runs.claim(second.id, "worker-b") is None  # the table is taken
    assert runs.claim(first.id, "worker-b") is None  # and this plan too
    assert MaintenancePlan.objects.get(id=second.id).status == Status.PLANNED
    # Asking again for a PLANNED operation returns the same plan.
    assert runs.request_run(table=iceberg_table, operation="REWRITE_MANIFESTS").id == second.id


def test_operations_that_do_not_apply_are_skipped(iceberg_table):
    plan = runs.request_run(table=iceberg_table, operation="VACUUM", requested_by="test")
    assert runs.run_plan(plan.id).status == Status.SKIPPED
    assert "does not apply" in MaintenancePlan.objects.get(id=plan.id).outcome


def test_the_policy_reads_settings_and_table_properties(iceberg_table, settings):
    settings.UCWEB_TARGET_FILE_BYTES = 1000
    assert policy.for_table(iceberg_table).target_file_bytes == 1000
    iceberg_table.properties = {"write.target-file-size-bytes": "4096", "delta.deletedFileRetentionDuration": "interval 2 days",
                                "history.expire.min-snapshots-to-keep": "nonsense"}
    found = policy.for_table(iceberg_table)
    assert found.target_file_bytes == 4096 and found.vacuum_retention_hours == 48
    assert found.snapshots_min_keep == settings.UCWEB_SNAPSHOTS_MIN_KEEP  # a bad value falls back


def test_after_optimize_the_health_shows_the_compacted_table(delta, settings):
    """The catalog reports its own OPTIMIZE commit, so the table is not planned for OPTIMIZE again,
    and a client's next commit builds on the catalog's version."""
    from commits.models import CommitReport

    settings.UCWEB_OPTIMIZE_MIN_FILES = 10
    table_id, location = make_table(delta, 12)
    CommitReport.objects.create(table_id=table_id, commit_version=12, reported_by="admin", num_files_added=12,
                                file_size_histogram={"sorted_bin_boundaries": [0, 1024], "file_counts": [12, 0],
                                                     "total_bytes": [12_000, 0]})
    table = Table.objects.get(id=table_id)
    assert health.refresh_table(table) == ["OPTIMIZE"]
    finished = runs.run_due(table=table)
    assert [p.status for p in finished] == [Status.SUCCEEDED]
    assert health.refresh_table(Table.objects.get(id=table_id)) == []
    assert Table.objects.get(id=table_id).health.files_live == 1
    commit(delta, table_id, location, 14, write_rows(location, 9000, 5, "late"))
    assert Table.objects.get(id=table_id).latest_version == 14


def test_vacuum_deletes_nothing_where_another_securable_lives(delta, settings):
    """A table whose location contains another table's storage (here the other row is planted,
    as a location bug or a hostile registration would) is never vacuumed: those files are
    unreferenced by this table's log, and they are not the catalog's to delete."""
    from pathlib import Path

    table_id, location = make_table(delta, 2)
    table = Table.objects.get(id=table_id)
    table.properties = {**table.properties, "delta.deletedFileRetentionDuration": "interval 0 hours"}
    table.save(update_fields=["properties"])
    inner = Path(location.removeprefix("file://")) / "nested"
    inner.mkdir()
    (inner / "their-data.parquet").write_bytes(b"someone else's rows")
    Table.objects.create(schema=table.schema, name="intruder", table_type="EXTERNAL", data_source_format="PARQUET",
                         storage_location=inner.as_uri())
    plan = runs.request_run(table=table, operation="VACUUM", requested_by="test")
    assert runs.run_plan(plan.id).status == Status.SKIPPED
    assert "overlaps the storage of table" in MaintenancePlan.objects.get(id=plan.id).outcome
    assert (inner / "their-data.parquet").exists()


def test_a_run_past_its_time_limit_fails_and_changes_nothing(delta, settings):
    table_id, location = make_table(delta, 12)
    settings.UCWEB_MAINTENANCE_TIME_LIMIT_SECONDS = 0
    plan = runs.request_run(table=Table.objects.get(id=table_id), operation="OPTIMIZE", requested_by="test")
    finished = runs.run_plan(plan.id)
    assert finished.status == Status.FAILED and "time limit" in finished.outcome
    assert Table.objects.get(id=table_id).latest_version == 12
    assert AuditEvent.objects.filter(action="maintenanceOptimize", outcome="FAILED").count() == 1
