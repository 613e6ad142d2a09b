from django.contrib import admin
from django.utils.safestring import mark_safe

from maintenance.models import MaintenancePlan, PurgeRequest, TableAlert, TableHealth


@admin.register(PurgeRequest)
class PurgeRequestAdmin(admin.ModelAdmin):
    list_display = ("url", "reason", "requested_at", "attempts", "files_deleted", "done_at", "last_error")
    list_filter = (("done_at", admin.EmptyFieldListFilter),)
    search_fields = ("url", "reason", "requested_by")
    readonly_fields = ("url", "reason", "requested_at", "requested_by", "attempts", "files_deleted", "done_at",
                       "last_error")

    def has_add_permission(self, request):
        return False


@admin.register(TableAlert)
class TableAlertAdmin(admin.ModelAdmin):
    list_display = ("table", "version", "kind", "created_at", "resolved_at")
    list_filter = ("kind", ("resolved_at", admin.EmptyFieldListFilter))
    search_fields = ("table__name", "message")
    readonly_fields = ("table", "version", "kind", "message", "created_at")
    list_select_related = ("table__schema__catalog",)

    def has_add_permission(self, request):
        return False


@admin.register(MaintenancePlan)
class MaintenancePlanAdmin(admin.ModelAdmin):
    list_display = ("table", "operation", "status", "reason", "created_at")
    list_filter = ("operation", "status")
    list_editable = ("status",)
    search_fields = ("table__name", "reason")
    readonly_fields = ("table", "operation", "reason", "created_at")
    list_select_related = ("table__schema__catalog",)

    def has_add_permission(self, request):
        return False


@admin.register(TableHealth)
class TableHealthAdmin(admin.ModelAdmin):
    list_display = ("table", "files_live", "bytes_live", "small_file_share", "commits_last_day", "updated_at")
    search_fields = ("table__name",)
    readonly_fields = ("table", "files_live", "bytes_live", "small_file_share", "rows_inserted", "rows_removed",
                       "rows_updated", "commits_last_day", "last_report_version", "charts", "updated_at")
    exclude = ("histogram", "commit_rate")
    list_select_related = ("table__schema__catalog",)

    def has_add_permission(self, request):
        return False

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
