"""The audit trail: every event to the second, filtered by principal, securable, action, outcome
and time; an event's own page with its timestamp and its details in full; and the filtered view
as CSV, streamed, with the same rows the list shows the console user's principal."""

from __future__ import annotations

import csv
import json
import uuid

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.http import HttpResponseRedirect, StreamingHttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from catalog.admin import console
from catalog.admin.securables import ReadOnlyAdmin
from catalog.choices import AuditOutcome
from catalog.models import AuditEvent
from catalog.services import oversight
from catalog.services.effective_access import SECURABLE_MODELS
from catalog.templatetags.console_format import moment, utc_text

CSV_COLUMNS = ("time (UTC)", "principal", "action", "securable type", "securable", "securable id", "outcome",
               "details")


def summary_of(details: dict | None) -> str:
    """What an event's details say, in a line: the error's message, the privileges added and
    removed ("bob: +SELECT −MODIFY"), or its fields."""
    details = details or {}
    text = details.get("message") or details.get("error") or ""
    if isinstance(text, dict):  # an API error body
        text = text.get("message") or (text.get("error") or {}).get("message") or str(text)
    changes = details.get("changes")
    if not text and isinstance(changes, list):
        text = "; ".join(
            f"{c.get('principal')}: " + " ".join([f"+{p}" for p in c.get("add") or []]
                                                 + [f"−{p}" for p in c.get("remove") or []])
            for c in changes if isinstance(c, dict))
    if not text:
        text = ", ".join(f"{k}: {v}" for k, v in details.items() if k not in ("status",))
    return str(text)


def securable_url(securable_type: str, securable_id) -> str:
    """The console page of a securable, by its id (it may be gone: the page then says so)."""
    model = SECURABLE_MODELS.get(securable_type)
    if model is None or securable_id is None:
        return ""
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[securable_id])


class PrincipalFilter(admin.SimpleListFilter):
    title = "principal"
    parameter_name = "principal"

    def lookups(self, request, model_admin):
        names = model_admin.get_queryset(request).order_by().values_list("principal", flat=True).distinct()[:100]
        return [(name, name) for name in sorted(names)]

    def queryset(self, request, queryset):
        return queryset.filter(principal=self.value()) if self.value() else queryset


class SecurableFilter(admin.SimpleListFilter):
    """Every event about one securable, by its id (names change with renames)."""

    title = "securable"
    parameter_name = "securable_id"

    def lookups(self, request, model_admin):
        value = self.value()
        try:
            securable_id = uuid.UUID(value or "")
        except ValueError:
            return []
        event = model_admin.get_queryset(request).filter(securable_id=securable_id).exclude(securable_name="").first()
        return [(value, event.securable_name if event else value)]

    def queryset(self, request, queryset):
        if not self.value():
            return queryset
        try:
            return queryset.filter(securable_id=uuid.UUID(self.value()))
        except ValueError:  # a malformed id matches nothing
            return queryset.none()


def _cell(value) -> str:
    """A CSV cell a spreadsheet shows as text: one starting like a formula is quoted."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


class _Lines:
    """csv.writer's file: hands back each line instead of keeping it."""

    def write(self, line: str) -> str:
        return line


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    change_list_template = "admin/catalog/auditevent_change_list.html"
    list_display = ("created_at", "principal", "action", "on", "outcome_badge", "summary")
    search_fields = ("principal", "action", "securable_name")
    list_filter = ("outcome", PrincipalFilter, "action", "securable_type", SecurableFilter, "created_at")
    date_hierarchy = "created_at"
    list_per_page = 50
    fields = ("time", "principal", "action", "securable_type", "securable", "securable_id", "outcome_badge",
              "details_text")
    readonly_fields = fields

    console_pages = (("export.csv", "export"),)

    def get_queryset(self, request):
        return oversight.audit_seen_by(console.console_principal(request), super().get_queryset(request))

    @admin.display(description="outcome", ordering="outcome")
    def outcome_badge(self, obj):
        css = {AuditOutcome.SUCCESS: "uc-ok", AuditOutcome.DENIED: "uc-denied"}.get(obj.outcome, "uc-failed")
        return format_html('<span class="uc-badge {}">{}</span>', css, obj.outcome)

    @admin.display(description="securable", ordering="securable_name")
    def on(self, obj):
        return f"{obj.securable_type} {obj.securable_name}".strip() or "—"

    @admin.display(description="details")
    def summary(self, obj):
        text = summary_of(obj.details)
        return text if len(text) <= 240 else text[:239] + "…"

    @admin.display(description="time")
    def time(self, obj):
        return moment(obj.created_at)

    @admin.display(description="securable")
    def securable(self, obj):
        url = securable_url(obj.securable_type, obj.securable_id)
        if not url or not obj.securable_name:
            return obj.securable_name or "—"
        return format_html('<a href="{}">{}</a>', url, obj.securable_name)

    @admin.display(description="details")
    def details_text(self, obj):
        return format_html('<p>{}</p><pre class="uc-details" id="event-details">{}</pre>', summary_of(obj.details),
                           json.dumps(obj.details or {}, indent=2, sort_keys=True, ensure_ascii=False))

    def export_view(self, request):
        """The list's current view (its filters, search and order, all pages) as CSV, streamed."""
        if not self.has_view_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            messages.error(request, "Those filters do not apply to the audit trail; nothing was exported.")
            return HttpResponseRedirect(reverse("admin:catalog_auditevent_changelist"))
        rows = changelist.queryset.iterator(chunk_size=2000)
        writer = csv.writer(_Lines())

        def lines():
            yield writer.writerow(CSV_COLUMNS)
            for event in rows:
                yield writer.writerow([_cell(value) for value in (
                    utc_text(event.created_at), event.principal, event.action, event.securable_type,
                    event.securable_name, event.securable_id or "", event.outcome,
                    json.dumps(event.details or {}, sort_keys=True, ensure_ascii=False))])

        response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
        return response
