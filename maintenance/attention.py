"""What of the background work needs a person, for the console's home page: maintenance runs that
failed or were skipped, and tables whose health asks for attention (many small files, ratified
commits not published, a checkpoint due and not written, an open alert).

Only tables the viewer's principal may see are counted or listed. Each list costs a fixed number
of queries (the rows, capped at LIMIT, and their count), whatever the number of tables."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Min
from django.urls import reverse
from django.utils import timezone

from catalog import authz
from catalog.models import Principal, Table
from commits.models import DeltaCommit
from maintenance.models import MaintenancePlan, TableAlert, TableHealth

LIMIT = 20
# The server publishes a ratified commit itself within seconds; one still unpublished after this
# long means publication is stuck (storage refused the write, or no worker verifies).
UNPUBLISHED_AFTER = timedelta(minutes=10)
RUNS_WITHIN = timedelta(days=7)


def _section(rows: list[dict], total: int) -> dict:
    return {"rows": rows, "total": total, "more": max(total - len(rows), 0)}


def _table_url(table_id) -> str:
    return reverse("admin:catalog_table_change", args=[table_id])


def failed_runs(caller: Principal, visible, now) -> dict:
    """Runs of the last week that FAILED or were SKIPPED, newest first; each links to its run."""
    runs = MaintenancePlan.objects.filter(
        status__in=(MaintenancePlan.Status.FAILED, MaintenancePlan.Status.SKIPPED),
        created_at__gte=now - RUNS_WITHIN, table_id__in=visible)
    rows = [{
        "table": run.table.full_name, "operation": run.operation, "status": run.status,
        "when": run.finished_at or run.created_at, "why": run.outcome or run.reason,
        "url": reverse("admin:maintenance_maintenanceplan_change", args=[run.pk]),
        "table_url": _table_url(run.table_id),
    } for run in runs.select_related("table__schema__catalog").order_by("-created_at")[:LIMIT]]
    return _section(rows, runs.count())


def _unhealthy_rows(visible, now) -> list[dict]:
    rows = []
    small = TableHealth.objects.filter(
        table_id__in=visible, files_live__gte=settings.UCWEB_OPTIMIZE_MIN_FILES,
        small_file_share__gte=settings.UCWEB_OPTIMIZE_SMALL_FILE_SHARE,
    ).select_related("table__schema__catalog").order_by("-small_file_share", "-files_live")[:LIMIT]
    for health in small:
        rows.append({"table": health.table.full_name, "table_id": health.table_id, "problem": "small files",
                     "detail": f"{health.small_file_share:.0%} of {health.files_live:,} live files are smaller "
                               f"than the small-file size", "when": health.updated_at})
    stuck = list(DeltaCommit.objects.filter(table_id__in=visible, published_at__isnull=True).values("table_id")
                 .annotate(commits=Count("version"), oldest=Min("ratified_at"))
                 .filter(oldest__lte=now - UNPUBLISHED_AFTER).order_by("oldest")[:LIMIT])
    names = {table.id: table.full_name for table in Table.objects.filter(
        id__in=[row["table_id"] for row in stuck]).select_related("schema__catalog")} if stuck else {}
    for row in stuck:
        rows.append({"table": names.get(row["table_id"], ""), "table_id": row["table_id"],
                     "problem": "unpublished commits",
                     "detail": f"{row['commits']:,} ratified commit(s) not published", "when": row["oldest"]})
    due = MaintenancePlan.objects.filter(
        table_id__in=visible, operation=MaintenancePlan.Operation.CHECKPOINT, status=MaintenancePlan.Status.PLANNED,
    ).select_related("table__schema__catalog").order_by("created_at")[:LIMIT]
    for plan in due:
        rows.append({"table": plan.table.full_name, "table_id": plan.table_id, "problem": "checkpoint due",
                     "detail": plan.reason, "when": plan.created_at})
    alerts = TableAlert.objects.filter(table_id__in=visible, resolved_at__isnull=True) \
        .select_related("table__schema__catalog").order_by("-created_at")[:LIMIT]
    for alert in alerts:
        rows.append({"table": alert.table.full_name, "table_id": alert.table_id, "problem": "alert",
                     "detail": f"version {alert.version}: {alert.get_kind_display()}", "when": alert.created_at})
    return rows


def unhealthy_tables(caller: Principal, visible, now) -> dict:
    """Tables with a health problem, one row per table and problem; each links to the table."""
    rows = _unhealthy_rows(visible, now)
    for row in rows:
        row["url"] = _table_url(row["table_id"])
    shown = rows[:LIMIT]
    return _section(shown, len(rows))


def attention(caller: Principal, now=None) -> dict:
    """The background work's sections of the home page, as `caller` may see them."""
    now = now or timezone.now()
    visible = authz.visible(Table.objects.all(), caller).values("id")
    return {"failed_runs": failed_runs(caller, visible, now), "unhealthy_tables": unhealthy_tables(caller, visible, now)}
