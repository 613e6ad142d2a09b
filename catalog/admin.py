"""The governance view: browse the namespace, grants, principals and the audit trail."""

from django.contrib import admin

from catalog.models import (
    AuditEvent,
    Catalog,
    Column,
    Credential,
    ExternalLocation,
    Function,
    Grant,
    Metastore,
    ModelVersion,
    Principal,
    RegisteredModel,
    Schema,
    StagingTable,
    Table,
    Token,
    Volume,
)
from commits.models import CommitReport, DeltaCommit


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Metastore)
class MetastoreAdmin(admin.ModelAdmin):
    list_display = ("name", "id", "created_at")


class SchemaInline(admin.TabularInline):
    model = Schema
    fields = ("name", "owner", "comment")
    extra = 0
    show_change_link = True


@admin.register(Catalog)
class CatalogAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "comment", "storage_root", "created_at")
    search_fields = ("name", "owner", "comment")
    list_filter = ("owner",)
    readonly_fields = ("id", "created_at", "created_by", "updated_at", "updated_by")
    inlines = [SchemaInline]


class TableInline(admin.TabularInline):
    model = Table
    fields = ("name", "table_type", "data_source_format", "owner")
    extra = 0
    show_change_link = True


@admin.register(Schema)
class SchemaAdmin(admin.ModelAdmin):
    list_display = ("name", "catalog", "owner", "comment", "created_at")
    search_fields = ("name", "catalog__name", "owner", "comment")
    list_filter = ("catalog", "owner")
    list_select_related = ("catalog",)
    readonly_fields = ("id", "created_at", "created_by", "updated_at", "updated_by")
    inlines = [TableInline]


class ColumnInline(admin.TabularInline):
    model = Column
    fields = ("position", "name", "type_name", "type_text", "nullable", "partition_index", "comment")
    extra = 0


class DeltaCommitInline(admin.TabularInline):
    """The ratified commits of a catalog-managed Delta table, newest first."""

    model = DeltaCommit
    fields = ("version", "file_name", "file_size", "timestamp", "ratified_by", "ratified_at", "published_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    max_num = 0
    ordering = ("-version",)


class CommitReportInline(admin.TabularInline):
    model = CommitReport
    fields = (
        "commit_version", "num_files_added", "num_bytes_added", "num_files_removed", "num_rows_inserted",
        "num_rows_removed", "num_rows_updated", "file_size_histogram", "received_at",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False
    max_num = 0
    ordering = ("-commit_version",)


@admin.register(Table)
class TableAdmin(admin.ModelAdmin):
    list_display = (
        "name", "schema", "table_type", "data_source_format", "latest_version", "latest_published_version",
        "owner", "created_at",
    )
    search_fields = ("name", "schema__name", "schema__catalog__name", "owner", "storage_location")
    list_filter = ("table_type", "data_source_format", "schema__catalog")
    list_select_related = ("schema__catalog",)
    readonly_fields = (
        "id", "created_at", "created_by", "updated_at", "updated_by", "latest_version",
        "latest_published_version", "uniform_iceberg", "maintenance_overview",
    )
    inlines = [ColumnInline, DeltaCommitInline, CommitReportInline]

    @admin.display(description="health and maintenance")
    def maintenance_overview(self, obj):
        from django.utils.html import format_html_join
        from django.utils.safestring import mark_safe

        from maintenance import plots
        from maintenance.models import TableHealth

        health = TableHealth.objects.filter(table=obj).first()
        plans = format_html_join(
            "", "<li>{} ({}): {}</li>",
            ((p.operation, p.status, p.reason) for p in obj.maintenance_plans.all()[:10]),
        )
        alerts = format_html_join(
            "", "<li>version {}: {}</li>", ((a.version, a.message) for a in obj.alerts.filter(resolved_at=None)),
        )
        charts = plots.file_size_histogram(health.histogram if health else None) + plots.commit_rate(
            health.commit_rate if health else [])
        return mark_safe(f"<ul>{plans}</ul><ul>{alerts}</ul>{charts}")  # noqa: S308 - parts are escaped


@admin.register(DeltaCommit)
class DeltaCommitAdmin(ReadOnlyAdmin):
    list_display = ("table", "version", "file_name", "ratified_by", "ratified_at", "published_at")
    list_filter = ("published_at",)
    search_fields = ("table__name", "file_name", "ratified_by")
    list_select_related = ("table__schema__catalog",)


@admin.register(StagingTable)
class StagingTableAdmin(ReadOnlyAdmin):
    list_display = ("name", "schema", "id", "created_by", "created_at", "finalized_at")
    list_filter = ("finalized_at",)
    search_fields = ("name", "id", "created_by")
    list_select_related = ("schema__catalog",)


@admin.register(Principal)
class PrincipalAdmin(admin.ModelAdmin):
    list_display = ("name", "kind", "is_metastore_admin", "client_id", "created_at")
    search_fields = ("name", "client_id")
    list_filter = ("kind", "is_metastore_admin")
    readonly_fields = ("id", "client_id", "client_secret_hash", "created_at")


@admin.register(Token)
class TokenAdmin(ReadOnlyAdmin):
    list_display = ("principal", "description", "created_at", "expires_at")
    search_fields = ("principal__name", "description")
    list_select_related = ("principal",)
    exclude = ("key_hash",)


@admin.register(Grant)
class GrantAdmin(admin.ModelAdmin):
    list_display = ("principal", "privilege", "securable_type", "securable_name", "granted_by", "created_at")
    search_fields = ("principal", "securable_name")
    list_filter = ("securable_type", "privilege")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "principal", "action", "securable_type", "securable_name", "outcome")
    search_fields = ("principal", "action", "securable_name")
    list_filter = ("outcome", "securable_type", "action")
    date_hierarchy = "created_at"

    def has_delete_permission(self, request, obj=None):
        return False


# -- volumes, functions, registered models, credentials, external locations ---------------------
@admin.register(Volume)
class VolumeAdmin(admin.ModelAdmin):
    list_display = ("name", "schema", "volume_type", "storage_location", "owner", "created_at")
    search_fields = ("name", "schema__name", "schema__catalog__name", "owner", "storage_location")
    list_filter = ("volume_type", "schema__catalog", "owner")
    list_select_related = ("schema__catalog",)
    readonly_fields = ("id", "created_at", "created_by", "updated_at", "updated_by")


@admin.register(Function)
class FunctionAdmin(admin.ModelAdmin):
    list_display = ("name", "schema", "routine_body", "external_language", "data_type", "owner", "created_at")
    search_fields = ("name", "schema__name", "schema__catalog__name", "owner", "routine_definition")
    list_filter = ("routine_body", "external_language", "sql_data_access", "schema__catalog")
    list_select_related = ("schema__catalog",)
    readonly_fields = ("id", "created_at", "created_by", "updated_at", "updated_by")


class ModelVersionInline(admin.TabularInline):
    model = ModelVersion
    fields = ("version", "status", "source", "run_id", "storage_location", "created_by", "created_at")
    readonly_fields = ("version", "source", "run_id", "storage_location", "created_by", "created_at")
    extra = 0
    can_delete = False
    ordering = ("-version",)


@admin.register(RegisteredModel)
class RegisteredModelAdmin(admin.ModelAdmin):
    list_display = ("name", "schema", "owner", "storage_location", "created_at")
    search_fields = ("name", "schema__name", "schema__catalog__name", "owner")
    list_filter = ("schema__catalog", "owner")
    list_select_related = ("schema__catalog",)
    readonly_fields = ("id", "storage_location", "created_at", "created_by", "updated_at", "updated_by")
    inlines = [ModelVersionInline]


@admin.register(ModelVersion)
class ModelVersionAdmin(admin.ModelAdmin):
    """A version's status may be set here (for example to FAILED_REGISTRATION after a broken
    upload); everything else is read-only."""

    list_display = ("model", "version", "status", "run_id", "created_by", "created_at")
    search_fields = ("model__name", "model__schema__name", "run_id", "source")
    list_filter = ("status",)
    list_select_related = ("model__schema__catalog",)
    readonly_fields = ("id", "model", "version", "source", "run_id", "storage_location", "created_at",
                       "created_by", "updated_at", "updated_by")


@admin.register(Credential)
class CredentialAdmin(admin.ModelAdmin):
    """Secrets are never shown: the encrypted secret key is not a field of this page, and keys are
    changed through the API (PATCH /credentials/{name}), which encrypts them."""

    list_display = ("name", "purpose", "aws_role_arn", "aws_access_key_id", "endpoint_url", "owner", "created_at")
    search_fields = ("name", "owner", "aws_role_arn", "aws_access_key_id", "endpoint_url")
    list_filter = ("purpose", "owner")
    exclude = ("aws_secret_access_key_encrypted",)
    readonly_fields = ("id", "aws_access_key_id", "aws_external_id", "created_at", "created_by", "updated_at",
                       "updated_by")


@admin.register(ExternalLocation)
class ExternalLocationAdmin(admin.ModelAdmin):
    list_display = ("name", "url", "credential", "owner", "created_at")
    search_fields = ("name", "url", "owner", "credential__name")
    list_filter = ("credential", "owner")
    list_select_related = ("credential",)
    readonly_fields = ("id", "url", "created_at", "created_by", "updated_at", "updated_by")
