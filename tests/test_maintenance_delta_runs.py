"""How the catalog's maintenance runs on a managed Delta table go: the command's refusals, a
worker killed while its commit waits for the table's row lock, a failing run retried with backoff
until it fails, and a run started from the admin and shown with its chart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from catalog.models import AuditEvent, Table
from catalog.storage import join, storage_for
from maintenance import runs
from maintenance.models import MaintenancePlan
from tests.helpers import wait_for
from tests.maintenance_delta_support import live_files, read_rows
from tests.maintenance_delta_support import table_of_20  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parent.parent
Status = MaintenancePlan.Status


def test_bad_operation_and_unknown_table(delta, table_of_20):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="Table not found: unity.default.nope"):
        call_command("run_maintenance", "unity.default.nope", "--operation", "OPTIMIZE")
    with pytest.raises(CommandError, match="does not apply"):
        call_command("run_maintenance", "unity.default.events", "--operation", "EXPIRE_SNAPSHOTS")
    assert not MaintenancePlan.objects.exists()


def test_a_killed_worker_leaves_the_table_unchanged_and_the_run_is_retried(delta, table_of_20, settings):
    """The run is killed (SIGKILL) while its commit waits for the table's row lock, which a
    long user transaction holds: the table is unchanged and readable; once the lease expires
    the run is taken again and succeeds."""
    if connection.vendor != "postgresql":
        pytest.skip("the subprocess shares the test database, which needs PostgreSQL")
    table_id, location = table_of_20
    before = read_rows(delta, table_id, location)
    settings.UCWEB_MAINTENANCE_BACKOFF_SECONDS = 0
    database = connection.settings_dict
    dsn = f"postgres://{database.get('USER') or 'postgres'}@{database.get('HOST') or '127.0.0.1'}:" \
          f"{database.get('PORT') or 5432}/{database['NAME']}"
    runs.request_run(table=Table.objects.get(id=table_id), operation="OPTIMIZE", requested_by="test")
    holder = psycopg.connect(dsn)
    holder.execute("SELECT id FROM catalog_table WHERE id = %s FOR UPDATE", [table_id])
    env = {**os.environ, "DATABASE_URL": dsn, "DJANGO_SETTINGS_MODULE": "ucweb.settings",
           "UCWEB_STORAGE_ROOT": settings.UCWEB_STORAGE_ROOT, "UCWEB_MAINTENANCE_LEASE_SECONDS": "2"}
    worker = subprocess.Popen([sys.executable, "manage.py", "run_maintenance", "unity.default.events"],
                              cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        def waiting_on_the_lock():
            plan = MaintenancePlan.objects.filter(table_id=table_id, status=Status.RUNNING).first()
            if plan is None or not plan.progress.startswith("ratifying"):
                return False
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                               "AND datname = current_database()")
                return cursor.fetchone()[0] > 0

        wait_for(waiting_on_the_lock, timeout=120)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    except AssertionError:
        worker.kill()
        print(worker.communicate()[0].decode())
        raise
    finally:
        holder.rollback()
        holder.close()
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == -signal.SIGKILL
    table = Table.objects.get(id=table_id)
    assert table.latest_version == 20
    assert read_rows(delta, table_id, location).equals(before)
    assert len(live_files(delta, table_id, location)) == 20

    wait_for(lambda: runs.reclaim_expired() == 1, timeout=30)
    plan = MaintenancePlan.objects.get(table_id=table_id, operation="OPTIMIZE")
    assert plan.status == Status.PLANNED and "stopped" in plan.outcome
    finished = runs.run_due(table=table)
    assert [p.status for p in finished] == [Status.SUCCEEDED]
    assert finished[0].attempts == 2
    assert read_rows(delta, table_id, location).equals(before)
    assert len(live_files(delta, table_id, location)) == 1


def test_a_failing_run_is_retried_with_backoff_then_fails(delta, table_of_20, settings, capsys):
    """A data file the log names is gone: each attempt fails, waits its backoff, and after the
    last attempt the run is FAILED; the command exits non-zero; the table is unchanged."""
    table_id, location = table_of_20
    settings.UCWEB_MAINTENANCE_MAX_ATTEMPTS = 2
    settings.UCWEB_MAINTENANCE_BACKOFF_SECONDS = 3600
    victim = live_files(delta, table_id, location)[3]["path"]
    storage_for(location).delete(join(location, victim))
    with pytest.raises(SystemExit) as exit_code:
        call_command("run_maintenance", "unity.default.events", "--operation", "OPTIMIZE")
    assert exit_code.value.code == 1
    plan = MaintenancePlan.objects.get(table_id=table_id)
    assert plan.status == Status.PLANNED and plan.attempts == 1 and "StorageObjectNotFound" in plan.outcome
    assert plan.next_attempt_at is not None
    assert runs.run_due(table=Table.objects.get(id=table_id)) == []  # not due before its backoff
    MaintenancePlan.objects.filter(id=plan.id).update(next_attempt_at=None)  # the backoff has passed
    finished = runs.run_due(table=Table.objects.get(id=table_id))
    assert [(p.status, p.attempts) for p in finished] == [(Status.FAILED, 2)]
    assert Table.objects.get(id=table_id).latest_version == 20
    assert AuditEvent.objects.filter(action="maintenanceOptimize", outcome="FAILED").count() == 2
    root = Path(location.removeprefix("file://"))
    assert len(list(root.glob("*.parquet"))) == 19  # nothing half-written is left behind


def test_admin_run_now_shows_the_run_and_its_chart(delta, table_of_20, client):
    from django.contrib.auth import get_user_model

    table_id, location = table_of_20
    user = get_user_model().objects.create_superuser("governance", "gov@example.com", "pw")
    client.force_login(user)
    response = client.post("/admin/maintenance/maintenanceplan/add/", {
        "table": table_id, "operation": "OPTIMIZE", "reason": "too many small files"})
    assert response.status_code == 302
    plan = MaintenancePlan.objects.get(table_id=table_id)
    assert plan.status == Status.PLANNED and plan.requested_by == "governance"
    response = client.post("/admin/maintenance/maintenanceplan/", {
        "action": "run_now", "_selected_action": [plan.id]})
    assert response.status_code == 302
    plan.refresh_from_db()
    assert plan.status == Status.SUCCEEDED and plan.before["files"] == 20 and plan.after["files"] == 1
    page = client.get(f"/admin/maintenance/maintenanceplan/{plan.id}/change/").content.decode()
    assert "<svg" in page and "before and after each maintenance run" in page and "unity.default." in page
    listing = client.get("/admin/maintenance/maintenanceplan/").content.decode()
    assert "20 → 1" in listing


def test_run_maintenance_waits_for_the_run_a_worker_holds(delta, table_of_20, capsys):  # noqa: F811
    """One run per table at a time: the command waits for the run a worker holds (here one whose
    worker died: its lease runs out a few seconds later), then runs what it was asked."""
    from datetime import timedelta

    from django.utils import timezone

    table = Table.objects.get(id=table_of_20[0])
    held = runs.request_run(table=table, operation="VACUUM")
    assert runs.claim(held.id, "gone-worker") is not None
    MaintenancePlan.objects.filter(id=held.id).update(lease_expires_at=timezone.now() + timedelta(seconds=5))
    call_command("run_maintenance", "unity.default.events", "--operation", "OPTIMIZE")
    out = capsys.readouterr().out
    assert "waiting for VACUUM of unity.default.events, which gone-worker is running, to end" in out
    assert MaintenancePlan.objects.get(operation="OPTIMIZE").status == "SUCCEEDED"
    assert len(live_files(delta, *table_of_20)) < 20
