from django.contrib import admin
from django.http import Http404, HttpResponseRedirect
from django.urls import reverse
from django.utils.safestring import mark_safe

from catalog import authz
from catalog.admin import charts, console
from catalog.admin.securables import OfVisible, ReadOnlyAdmin
from catalog.templatetags.console_format import duration
from catalog.models import Table

from maintenance import nudges
from maintenance.models import MaintenancePlan, PurgeRequest, TableAlert, TableHealth


# Every page here is read-only (ReadOnlyAdmin): the rows are the workers' and the services'. A
# maintenance plan is asked for through the service, from its list or a table's page.
@admin.register(PurgeRequest)
class PurgeRequestAdmin(ReadOnlyAdmin):
    count_fields = ("attempts", "files_deleted")
    list_display = ("url", "reason", "requested_at", "attempts", "files_deleted", "done_at", "last_error")
    list_filter = (("done_at", admin.EmptyFieldListFilter),)
    search_fields = ("url", "reason", "requested_by")
    readonly_fields = ("url", "reason", "requested_at", "requested_by", "attempts", "files_deleted", "done_at",
                       "last_error")


class OfVisibleTables(OfVisible):
    """Rows about tables: only those of tables the console user's principal may see."""

    visible_through = ("table", Table)


@admin.register(TableAlert)
class TableAlertAdmin(OfVisibleTables, ReadOnlyAdmin):
    list_display = ("table", "version", "kind", "created_at", "resolved_at")
    list_filter = ("kind", ("resolved_at", admin.EmptyFieldListFilter))
    search_fields = ("table__name", "message")
    readonly_fields = ("table", "version", "kind", "message", "created_at", "resolved_at")
    list_select_related = ("table__schema__catalog",)


@admin.register(MaintenancePlan)
class MaintenancePlanAdmin(OfVisibleTables, ReadOnlyAdmin):
    """Runs of a table with their before/after figures; "run now" hands the selected plans to a
    worker (the list shows each run's progress while it runs)."""

    list_display = ("table", "operation", "status", "attempts", "progress", "files_before_after", "took",
                    "created_at")
    list_filter = ("operation", "status")
    search_fields = ("table__name", "reason", "outcome")
    readonly_fields = ("status", "requested_by", "attempts", "next_attempt_at", "lease_owner", "lease_expires_at",
                       "started_at", "finished_at", "progress", "outcome", "before", "after", "created_at",
                       "file_count_chart")
    list_select_related = ("table__schema__catalog",)
    actions = ("run_now",)
    console_pages = (("run/<uuid:table_id>/", "run"), ("policy/<uuid:table_id>/", "policy"))

    def has_add_permission(self, request, obj=None):
        return admin.ModelAdmin.has_add_permission(self, request)  # the add view calls the service

    def get_readonly_fields(self, request, obj=None):
        return tuple(super().get_readonly_fields(request, obj)) + (("table", "operation", "reason") if obj else ())

    @staticmethod
    def _visible_table(request, table_id):
        table = authz.visible(Table.objects.select_related("schema__catalog").filter(id=table_id),
                              console.console_principal(request)).first()
        if table is None:  # missing or hidden: the same answer
            raise Http404
        return table, HttpResponseRedirect(reverse("admin:catalog_table_change", args=[table.pk]) + "#maintenance")

    def policy_view(self, request, table_id):
        """A table's maintenance policy property set or removed through the commit path of its
        format (maintenance.policy_changes): the owner's alone, audited as that commit."""
        from maintenance import policy_changes

        table, back = self._visible_table(request, table_id)
        if request.method != "POST":
            return back
        key, value = request.POST.get("key", ""), request.POST.get("value", "")
        name = f"ucweb.maintenance.{key}"
        done = f"Maintenance policy of {table.full_name}: " + (
            f"{name} is now {value.strip()}." if value.strip() else f"{name} was removed.")
        console.run(request, lambda caller: policy_changes.change_policy(caller=caller, table=table, key=key,
                                                                          value=value),
                    success=done, action=policy_changes.audit_action(table), securable_type="table",
                    securable_name=table.full_name, securable_id=table.id)
        return back

    def run_view(self, request, table_id):
        """"Run now" from a table's page: the run asked for through the service (MODIFY, audited
        as requestMaintenance) and handed to a worker; back to the table's page."""
        table, back = self._visible_table(request, table_id)
        operation = request.POST.get("operation", "")
        if request.method != "POST":
            return back
        if operation not in MaintenancePlan.Operation.values:
            self.message_user(request, "Choose an operation from the list; nothing was asked for.", level="error")
            return back
        planned = self._request(request, table, operation, "asked for on the table's page")
        if planned is not None:
            nudges.enqueue("maintenance.run_plan", planned.id)
        return back

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "table":
            kwargs["queryset"] = authz.visible(Table.objects.select_related("schema__catalog"),
                                               console.console_principal(request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def add_view(self, request, form_url="", extra_context=None):
        """A plan is added through the service (outside Django's own transaction, so that a
        refusal stays audited); an invalid form is Django's to show."""
        if request.method != "POST" or not self.has_add_permission(request):
            return super().add_view(request, form_url, extra_context)
        form = self.get_form(request)(request.POST)
        if not form.is_valid():
            return super().add_view(request, form_url, extra_context)
        data = form.cleaned_data
        planned = self._request(request, data["table"], data["operation"], data.get("reason") or "")
        if planned is None:
            return HttpResponseRedirect(reverse("admin:maintenance_maintenanceplan_changelist"))
        return HttpResponseRedirect(reverse("admin:maintenance_maintenanceplan_change", args=[planned.pk]))

    @staticmethod
    def _request(request, table, operation, reason=""):
        """The plan, asked for through the service as the console user's principal; None (with
        the refusal shown and audited) when it may not."""
        from maintenance import runs

        planned = []
        console.run(request, lambda caller: planned.append(runs.request_run_as(
            caller=caller, table=table, operation=operation, reason=reason)),
            success=f"{operation} of {table.full_name} planned.", action="requestMaintenance",
            securable_type="table", securable_name=table.full_name, securable_id=table.id)
        return planned[0] if planned else None

    @admin.display(description="files before → after")
    def files_before_after(self, obj):
        before, after = obj.before or {}, obj.after or {}
        if "files" not in before:
            return "—"
        return f"{before.get('files')} → {after.get('files', '…')}"

    @admin.display(description="took")
    def took(self, obj):
        return duration(obj.duration_seconds)

    @admin.display(description="live files over time (this table's runs)")
    def file_count_chart(self, obj):
        points = []
        for run in MaintenancePlan.objects.filter(table_id=obj.table_id, finished_at__isnull=False) \
                .exclude(before=None).order_by("finished_at")[:50]:
            if "files" in (run.before or {}):
                points.append((f"{run.operation} {run.started_at:%Y-%m-%d %H:%M} (before)", run.before["files"]))
            if "files" in (run.after or {}):
                points.append((f"{run.operation} {run.finished_at:%Y-%m-%d %H:%M} (after)", run.after["files"]))
        return mark_safe(charts.bar_chart(  # noqa: S308
            title=f"Live files of {obj.table.full_name} before and after each maintenance run",
            x_title="run (UTC)", y_title="live files", labels=[p[0] for p in points], values=[p[1] for p in points]))

    @admin.action(description="Run now")
    def run_now(self, request, queryset):
        """Each selected plan's operation asked for again through the service (refusals shown and
        audited one by one) and handed to a worker; a run that is running now is left to end."""
        started = 0
        for plan in queryset.select_related("table__schema__catalog"):
            if plan.status == MaintenancePlan.Status.RUNNING:
                self.message_user(request, f"{plan.operation} of {plan.table.full_name} is running now; "
                                  "it was not asked for again.", level="warning")
                continue
            planned = self._request(request, plan.table, plan.operation,
                                    f"run again from the console (after {plan.status})")
            if planned is None:
                continue
            nudges.enqueue("maintenance.run_plan", planned.id)
            started += 1
        if started:
            self.message_user(request, f"{started} run(s) handed to a worker; their progress shows in the list.")


@admin.register(TableHealth)
class TableHealthAdmin(OfVisibleTables, ReadOnlyAdmin):
    size_fields = ("bytes_live",)
    count_fields = ("files_live", "commits_last_day")
    list_display = ("table", "files_live", "bytes_live", "small_file_share", "commits_last_day", "updated_at")
    search_fields = ("table__name",)
    readonly_fields = ("table", "files_live", "bytes_live", "small_file_share", "rows_inserted", "rows_removed",
                       "rows_updated", "commits_last_day", "last_report_version", "charts", "updated_at")
    exclude = ("histogram", "commit_rate")
    list_select_related = ("table__schema__catalog",)

    @admin.display(description="charts")
    def charts(self, obj):
        from datetime import datetime

        from catalog.admin import charts

        name = obj.table.full_name
        stamps = []
        for row in obj.commit_rate or []:
            hour = int(datetime.fromisoformat(row["hour"]).timestamp() * 1000)
            stamps += [hour] * int(row["commits"])
        return mark_safe(  # noqa: S308 - the charts escape what they print
            charts.file_size_histogram(name, obj.histogram) + charts.commit_rate(name, stamps))
