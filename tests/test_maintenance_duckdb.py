"""DuckDB (its unity_catalog, delta and httpfs extensions, loaded from the PyPI wheels' files)
writes small commits to a managed Delta table through `/delta/v1`; the catalog runs OPTIMIZE and
VACUUM on it; DuckDB reads the same rows afterwards, reads a version before the OPTIMIZE, and
keeps committing on top of the catalog's version.

DuckDB 1.5's unity_catalog tables answer `AT (VERSION => n)` with an internal error on any table,
maintained or not (a known DuckDB bug: duckdb/unity_catalog issue 79), and its delta_scan refuses
catalog-managed tables. A version before the OPTIMIZE is therefore read as a catalog-managed
reader does: the commits up to it (the published log, or the ratified staged commit where a
version is not yet published) name the live files, and DuckDB reads exactly those files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from catalog.models import AuditEvent, Table
from commits.models import DeltaCommit
from maintenance.models import MaintenancePlan
from tests.duckdb_sessions import sql_string
from tests.helpers import plant_orphans
from tests.test_delta_v1_duckdb import duck, v1  # noqa: F401 - the DuckDB fixtures

pytestmark = pytest.mark.django_db(transaction=True)
Status = MaintenancePlan.Status
COMMITS = 30
QUERY = "SELECT id, city FROM lake.default.events"


def parquet_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet") if "_delta_log" not in p.parts}


def files_at(root: Path, table_id: str, version: int) -> list[Path]:
    """The data files live at `version`, replayed from the log as a catalog-managed reader does."""
    staged = {c.version: root / "_delta_log" / "_staged_commits" / c.file_name
              for c in DeltaCommit.objects.filter(table_id=table_id, version__lte=version)}
    live: dict[str, None] = {}
    for v in range(version + 1):
        published = root / "_delta_log" / f"{v:020d}.json"
        for line in (published if published.exists() else staged[v]).read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = None
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return [root / path for path in live]


def rows_at(con, root: Path, table_id: str, version: int) -> list[tuple]:
    files = ", ".join(sql_string(str(path)) for path in files_at(root, table_id, version))
    return sorted(con.execute(f"SELECT id, city FROM read_parquet([{files}])").fetchall())


def set_properties(table_id: str, **properties: str) -> None:
    table = Table.objects.get(id=table_id)
    table.properties = {**table.properties, **properties}
    table.save(update_fields=["properties"])


def test_duckdb_small_commits_optimize_time_travel_vacuum(v1, duck):  # noqa: F811
    created = v1.create_table("unity", "default", "events")
    table_id, location = created["metadata"]["table-uuid"], created["metadata"]["location"]
    root = Path(location.removeprefix("file://"))
    con = duck()
    for i in range(COMMITS):
        con.execute(f"INSERT INTO lake.default.events VALUES ({i}, 'city-{i % 7}'), ({i + 1000}, NULL)")
    before = sorted(duck().execute(QUERY).fetchall())
    assert len(before) == 2 * COMMITS and (5, "city-5") in before and (1005, None) in before
    version_before = Table.objects.get(id=table_id).latest_version
    assert version_before == COMMITS
    written = parquet_files(root)
    assert len(written) == COMMITS  # one small file per INSERT

    call_command("run_maintenance", "unity.default.events", "--operation", "OPTIMIZE")
    plan = MaintenancePlan.objects.get(table_id=table_id, operation="OPTIMIZE")
    assert plan.status == Status.SUCCEEDED, plan.outcome
    assert plan.before["files"] == COMMITS and plan.after["files"] == 1
    assert Table.objects.get(id=table_id).latest_version == version_before + 1
    assert AuditEvent.objects.filter(action="maintenanceOptimize", securable_id=table_id,
                                     outcome="SUCCESS").exists()
    compacted = parquet_files(root) - written
    assert len(compacted) == 1

    # A new DuckDB session reads the same rows from the one compacted file.
    assert sorted(duck().execute(QUERY).fetchall()) == before
    # A version before the OPTIMIZE still reads, from the small files; after it, from the one file.
    assert len(files_at(root, table_id, version_before)) == COMMITS
    assert rows_at(duck(), root, table_id, version_before) == before
    assert len(rows_at(duck(), root, table_id, 10)) == 20
    assert [p.name for p in files_at(root, table_id, version_before + 1)] == sorted(compacted)

    # VACUUM inside the retention: the files OPTIMIZE removed a moment ago stay (time travel may
    # read them), an old unreferenced file goes, a fresh unreferenced one (a writer's) stays.
    set_properties(table_id, **{"delta.deletedFileRetentionDuration": "interval 1 hours"})
    old_orphan, fresh_orphan = plant_orphans(root)
    call_command("run_maintenance", "unity.default.events", "--operation", "VACUUM")
    plan = MaintenancePlan.objects.filter(table_id=table_id, operation="VACUUM").first()
    assert plan.status == Status.SUCCEEDED, plan.outcome
    assert plan.after["files_deleted"] == 1
    assert not old_orphan.exists() and fresh_orphan.exists()
    assert parquet_files(root) == written | compacted | {fresh_orphan.name}
    assert rows_at(duck(), root, table_id, version_before) == before

    # Past the retention, the removed small files go; only the live file (and the fresh one) stay.
    set_properties(table_id, **{"delta.deletedFileRetentionDuration": "interval 0 hours"})
    fresh_orphan.unlink()
    call_command("run_maintenance", "unity.default.events", "--operation", "VACUUM")
    plan = MaintenancePlan.objects.filter(table_id=table_id, operation="VACUUM").first()
    assert plan.status == Status.SUCCEEDED, plan.outcome
    assert plan.after["files_deleted"] == COMMITS
    assert parquet_files(root) == compacted
    assert sorted(duck().execute(QUERY).fetchall()) == before

    # DuckDB commits on top of the catalog's version; every row is still there.
    duck().execute("INSERT INTO lake.default.events VALUES (-1, 'late')")
    assert Table.objects.get(id=table_id).latest_version == version_before + 2
    assert sorted(duck().execute(QUERY).fetchall()) == sorted([*before, (-1, "late")])
