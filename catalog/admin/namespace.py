"""Catalogs, schemas and tables, and what only the protocols write (staging tables, commits)."""

from django.contrib import admin
from django.urls import reverse

from catalog.admin.dropped import DroppedPage
from catalog.admin.securables import InSchemaAdmin, OfVisible, ReadOnlyAdmin, ReadOnlyInline, SecurableAdmin
from catalog.admin.table_page import declared, page_sections
from catalog.admin.tree import TreePages
from catalog.models import Catalog, Column, Metastore, Schema, StagingTable, Table
from catalog.services import catalogs, schemas, tables
from commits.models import DeltaCommit

AUDIT_FIELDS = ("id", "owner", "created_at", "created_by", "updated_at", "updated_by")


@admin.register(Metastore)
class MetastoreAdmin(SecurableAdmin):
    list_display = ("name", "id", "created_at")


class SchemaInline(ReadOnlyInline):
    model = Schema
    fields = ("name", "owner", "comment")
    show_change_link = True


@admin.register(Catalog)
class CatalogAdmin(TreePages, SecurableAdmin):
    list_display = ("name", "owner", "comment", "storage_root", "created_at")
    search_fields = ("name", "owner", "comment")
    list_filter = ("owner",)
    fields = ("name", "comment", "properties", "storage_root", "storage_location", *AUDIT_FIELDS)
    inlines = [SchemaInline]
    update_service = staticmethod(catalogs.update_catalog)
    delete_service = staticmethod(catalogs.delete_catalog)


class TableInline(ReadOnlyInline):
    model = Table
    fields = ("name", "table_type", "data_source_format", "owner")
    show_change_link = True


@admin.register(Schema)
class SchemaAdmin(SecurableAdmin):
    list_display = ("name", "catalog", "owner", "comment", "created_at")
    search_fields = ("name", "catalog__name", "owner", "comment")
    list_filter = ("catalog", "owner")
    fields = ("catalog", "name", "comment", "properties", "storage_root", "storage_location", *AUDIT_FIELDS)
    inlines = [TableInline]
    update_service = staticmethod(schemas.update_schema)
    delete_service = staticmethod(schemas.delete_schema)


class ColumnInline(ReadOnlyInline):
    model = Column
    fields = ("position", "name", "type_text", "nullable", "partition_index", "comment")
    verbose_name_plural = "columns"


@admin.register(Table)
class TableAdmin(DroppedPage, InSchemaAdmin):
    """One page for a table of any format: its own history (Delta commits, or Iceberg snapshots,
    refs and metadata files), health and maintenance, policies, and who may access it."""

    change_form_template = "admin/catalog/table_change_form.html"
    list_display = (
        "name", "schema", "table_type", "data_source_format", "latest_version", "latest_published_version",
        "owner", "created_at",
    )
    search_fields = (*InSchemaAdmin.search_fields, "storage_location")
    list_filter = ("data_source_format", "table_type", "schema__catalog")
    fieldsets = (
        (None, {"fields": ("schema", "name", "table_type", "data_source_format", "storage_location", "comment")}),
        ("Ownership and history", {"fields": AUDIT_FIELDS}),
        ("Protocol state (changed only by commits)", {
            "classes": ("collapse",),
            "fields": ("latest_version", "latest_published_version", "uniform_iceberg", "properties",
                       "view_definition"),
        }),
    )
    inlines = [ColumnInline]

    def console_context(self, request, obj):
        context = super().console_context(request, obj)
        return {**context, **page_sections(context["console_principal"], obj, request.GET)}

    def history_url(self, obj) -> str:
        """A table's history is its timeline, on its page."""
        return reverse("admin:catalog_table_change", args=[obj.pk]) + "#history"

    update_service = staticmethod(tables.update_table)
    delete_service = staticmethod(tables.delete_table)


@admin.register(DeltaCommit)
class DeltaCommitAdmin(OfVisible, ReadOnlyAdmin):
    visible_through = ("table", Table)
    list_display = ("table", "version", "declared_operation", "declared_engine", "file_name", "ratified_by",
                    "ratified_at", "published_at")
    # What the commit declared is shown as the console says it ("not sent", "not recorded").
    exclude = ("operation", "engine_info")
    readonly_fields = ("declared_operation", "declared_engine")
    list_filter = ("published_at",)
    search_fields = ("table__name", "file_name", "ratified_by")
    list_select_related = ("table__schema__catalog",)

    @admin.display(description="operation")
    def declared_operation(self, commit):
        return declared(commit.operation)

    @admin.display(description="engine")
    def declared_engine(self, commit):
        return declared(commit.engine_info)


@admin.register(StagingTable)
class StagingTableAdmin(OfVisible, ReadOnlyAdmin):
    visible_through = ("schema", Schema)
    list_display = ("name", "schema", "id", "created_by", "created_at", "finalized_at")
    list_filter = ("finalized_at",)
    search_fields = ("name", "id", "created_by")
    list_select_related = ("schema__catalog",)
