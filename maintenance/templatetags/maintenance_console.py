"""The maintenance block of a table's console page: its runs (what each did, or why it was
skipped or failed), the figures its maintenance runs with, and "Run now" for those who may ask
for a run (MODIFY on the table, as the service checks)."""

from __future__ import annotations

from django import template
from django.urls import reverse

from catalog import authz
from catalog.admin import console
from catalog.policy_properties import policy_properties
from maintenance import policy as policies
from maintenance import policy_changes, runs
from maintenance.models import MaintenancePlan

register = template.Library()

RUNS_SHOWN = 20


def run_row(plan: MaintenancePlan) -> dict:
    """One run as the page shows it: what it did, in files and bytes, before and after."""
    before, after = plan.before or {}, plan.after or {}
    return {
        "plan": plan, "operation": plan.operation, "status": plan.status, "reason": plan.reason,
        "outcome": plan.outcome or plan.progress or "", "requested_by": plan.requested_by or "the catalog",
        "files_before": before.get("files"), "files_after": after.get("files"),
        "bytes_before": before.get("bytes"), "bytes_after": after.get("bytes"),
        "files_deleted": after.get("files_deleted"), "bytes_deleted": after.get("bytes_deleted"),
        "duration": plan.duration_seconds,
    }


@register.inclusion_tag("admin/maintenance/_table_maintenance.html", takes_context=True)
def table_maintenance(context, table):
    request = context.get("request")
    if table is None or request is None:
        return {"table": None}
    caller = console.console_principal(request)
    plans = MaintenancePlan.objects.filter(table=table).order_by("-created_at", "-id")[:RUNS_SHOWN]
    policy = policies.for_table(table)
    operations = sorted(runs.operations_for(table))
    access = authz.Access.load(caller, table)
    return {
        "table": table,
        "runs": [run_row(plan) for plan in plans],
        "total": MaintenancePlan.objects.filter(table=table).count(),
        "policy": policy.shown(),
        "disabled": sorted(policy.disabled_operations),
        "operations": operations,
        "may_run": bool(operations) and authz.allows(caller, table, authz.Action.WRITE, access=access),
        "own_policy": sorted(policy_properties(table.properties).items()),
        "schema_policy": sorted(policy_properties(table.schema.properties).items()),
        "may_edit": policy_changes.editable(table) and access.owns(),
        "editable": policy_changes.editable(table),
        "policy_keys": sorted(policy_changes.KEYS.items()),
        "policy_url": reverse("admin:maintenance_maintenanceplan_policy", args=[table.pk]),
        "run_url": reverse("admin:maintenance_maintenanceplan_run", args=[table.pk]),
        "plans_url": reverse("admin:maintenance_maintenanceplan_changelist") + f"?q={table.name}",
        "csrf_token": context.get("csrf_token"),
    }
