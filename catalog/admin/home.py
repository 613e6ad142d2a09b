"""The governance half of the console's home page: access refused in the last day (by principal
and securable), privilege changes in the last week, and tables whose owner is no live principal
or group. Each row links to the page that resolves it.

What a section lists follows the audit trail's and the securables' visibility (a principal that
is no metastore admin sees its own refusals and those on what it manages, and the tables it may
see). Each section costs a fixed number of queries (the rows, capped at LIMIT, and their count),
whatever the number of tables or events."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from django.db.models import Count, Max
from django.urls import reverse
from django.utils import timezone

from catalog import authz
from catalog.admin.audit import securable_url, summary_of
from catalog.choices import AuditAction, AuditOutcome
from catalog.models import AuditEvent, Group, Principal, Table
from catalog.services import oversight

LIMIT = 20
REFUSED_WITHIN = timedelta(days=1)
CHANGES_WITHIN = timedelta(days=7)
PRIVILEGE_CHANGES = (AuditAction.UPDATE_PERMISSIONS, AuditAction.SET_METASTORE_ADMIN, AuditAction.UPDATE_GROUP)
# Django's and Celery's own models: one small link for admins, not the home page's list.
INTERNAL_APPS = ("auth", "django_celery_beat", "django_celery_results")


def _audit_url(**filters) -> str:
    return reverse("admin:catalog_auditevent_changelist") + "?" + urlencode(
        {key: value for key, value in filters.items() if value})


def refused_access(caller: Principal, now) -> dict:
    """Refusals of the last day, one row per principal and securable, most recent first."""
    events = oversight.audit_seen_by(caller, AuditEvent.objects.all()).filter(
        outcome=AuditOutcome.DENIED, created_at__gte=now - REFUSED_WITHIN)
    groups = events.values("principal", "securable_type", "securable_name", "securable_id") \
        .annotate(refusals=Count("id"), last=Max("created_at")).order_by("-last")
    rows = list(groups[:LIMIT])
    for row in rows:
        row["url"] = _audit_url(outcome=AuditOutcome.DENIED, principal=row["principal"],
                                securable_id=row["securable_id"] and str(row["securable_id"]),
                                q="" if row["securable_id"] else row["securable_name"])
    return {"rows": rows, "total": groups.count()}


def privilege_changes(caller: Principal, now) -> dict:
    """Grants, revokes, admin flags and group memberships changed in the last week, newest first."""
    events = oversight.audit_seen_by(caller, AuditEvent.objects.all()).filter(
        outcome=AuditOutcome.SUCCESS, action__in=PRIVILEGE_CHANGES, created_at__gte=now - CHANGES_WITHIN)
    rows = [{
        "when": event.created_at, "principal": event.principal, "action": event.action,
        "securable": f"{event.securable_type} {event.securable_name}".strip(), "what": summary_of(event.details),
        "url": reverse("admin:catalog_auditevent_change", args=[event.pk]),
    } for event in events[:LIMIT]]
    return {"rows": rows, "total": events.count()}


def ownerless_tables(caller: Principal) -> dict:
    """Tables the caller may see whose owner is neither an active principal nor a group: its
    principal was deactivated (SCIM) or never existed. The table's page transfers ownership."""
    live = Principal.objects.filter(active=True).values("name")
    tables = authz.visible(Table.objects.all(), caller).exclude(owner__in=live) \
        .exclude(owner__in=Group.objects.values("name"))
    inactive = set(Principal.objects.filter(active=False).values_list("name", flat=True)[:1000])
    rows = [{
        "table": table.full_name, "owner": table.owner or "—",
        "why": "deactivated" if table.owner in inactive else "no such principal or group",
        "url": securable_url("table", table.pk),
    } for table in tables.select_related("schema__catalog").order_by("schema__catalog__name", "schema__name",
                                                                      "name")[:LIMIT]]
    return {"rows": rows, "total": tables.count()}


def attention(caller: Principal, now=None) -> dict:
    now = now or timezone.now()
    return {
        "refused_access": refused_access(caller, now),
        "privilege_changes": privilege_changes(caller, now),
        "ownerless_tables": ownerless_tables(caller),
        "audit_url": reverse("admin:catalog_auditevent_changelist"),
    }


def split_apps(app_list: list[dict]) -> tuple[list[dict], list[dict]]:
    """(the catalog's apps, Django's and Celery's internals)."""
    return ([app for app in app_list if app["app_label"] not in INTERNAL_APPS],
            [app for app in app_list if app["app_label"] in INTERNAL_APPS])
