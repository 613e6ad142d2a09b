"""A real Delta engine reads what the catalog's maintenance wrote: Sail (tests/sail_server.py)
writes many small commits to a managed Delta table, the catalog runs OPTIMIZE, CHECKPOINT and
VACUUM, and Sail reads the same rows, travels back to a version before the OPTIMIZE, and keeps
committing on top of the catalog's versions."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from maintenance.models import MaintenancePlan
from tests.delta_client import log_name
from tests.test_sail import (  # noqa: F401 - the Sail fixtures
    connect,
    local_path,
    managed,
    recorder,
    rows,
    sail,
    sail_catalog,
    sail_log,
    sail_storage,
    sail_token,
    spark,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark, pytest.mark.xdist_group("sail")]
Status = MaintenancePlan.Status
# The issue asks for 200 commits; through Sail those take about 3.5 minutes on two cores (60 take
# about 1.5), so the 200-commit case is covered by the Delta test client (test_maintenance_delta).
COMMITS = 60


def test_sail_reads_what_maintenance_wrote(spark, sail_log):
    spark.sql("CREATE TABLE unity.default.stream (id INT, city STRING) USING DELTA")
    for i in range(COMMITS):
        spark.sql(f"INSERT INTO unity.default.stream VALUES ({i}, 'city-{i % 7}'), ({i + 1000}, NULL)")
    query = "SELECT id, city FROM unity.default.stream"
    before = rows(spark, query)
    assert len(before) == 2 * COMMITS
    version_before = managed("stream").latest_version

    call_command("run_maintenance", "unity.default.stream", "--operation", "OPTIMIZE")
    plan = MaintenancePlan.objects.get(operation="OPTIMIZE")
    assert plan.status == Status.SUCCEEDED, plan.outcome
    assert plan.before["files"] == COMMITS and plan.after["files"] == 1
    assert managed("stream").latest_version == version_before + 1
    assert rows(spark, query) == before
    assert rows(spark, f"{query} VERSION AS OF {version_before}") == before

    # Sail commits on top of the catalog's version, then the catalog checkpoints and vacuums.
    spark.sql("INSERT INTO unity.default.stream VALUES (-1, 'late')")
    expected = sorted([*before, (-1, "late")])
    assert rows(spark, query) == expected
    # With no log retention, the commits below the checkpoint go: Sail then starts from it.
    table = managed("stream")
    table.properties = {**table.properties, "delta.deletedFileRetentionDuration": "interval 0 hours",
                        "delta.logRetentionDuration": "interval 0 hours"}
    table.save(update_fields=["properties"])
    call_command("run_maintenance", "unity.default.stream", "--operation", "CHECKPOINT")
    plan = MaintenancePlan.objects.get(operation="CHECKPOINT")
    assert plan.status == Status.SUCCEEDED, plan.outcome
    checkpoint = plan.after["checkpoint"]["version"]
    log = local_path(table.storage_location) / "_delta_log"
    assert (log / f"{checkpoint:020d}.checkpoint.parquet").is_file()
    assert not (log / log_name(1)).exists() and plan.after["log_files_deleted"] >= checkpoint
    assert rows(spark, query) == expected
    call_command("run_maintenance", "unity.default.stream", "--operation", "VACUUM")
    plan = MaintenancePlan.objects.get(operation="VACUUM")
    assert plan.status == Status.SUCCEEDED, plan.outcome
    assert plan.after["files_deleted"] == COMMITS
    assert rows(spark, query) == expected
    spark.sql("INSERT INTO unity.default.stream VALUES (-2, 'later')")
    assert rows(spark, "SELECT count(*) FROM unity.default.stream") == [(2 * COMMITS + 2,)]
