from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from catalog.choices import AuditAction
from catalog.api.base import CatalogAPIView
from catalog.api.uc import serializers as wire
from catalog.api.uc.resources import CATALOG_AND_SCHEMA, DELETED, Resource, views
from catalog.models import Metastore
from catalog.services import catalogs, permissions, schemas, tables
from ucweb.errors import MetastoreDoesNotExist

CatalogsView, CatalogView = views(Resource(
    noun="Catalog", tag="Catalogs", info_type=wire.CatalogInfo, visible=catalogs.visible_catalogs,
    create=catalogs.create_catalog, create_request=wire.CreateCatalog, get=catalogs.get_catalog,
    update=catalogs.update_catalog, update_request=wire.UpdateSecurable,
    delete=catalogs.delete_catalog, delete_takes_force=True, delete_response=DELETED, name_argument="name",
    render=wire.catalog_info,
), module=__name__)
SchemasView, SchemaView = views(Resource(
    noun="Schema", tag="Schemas", info_type=wire.SchemaInfo, visible=schemas.visible_schemas,
    filters=(OpenApiParameter("catalog_name", str, required=True),), create=schemas.create_schema, create_request=wire.CreateSchema,
    get=schemas.get_schema, update=schemas.update_schema, update_request=wire.UpdateSecurable,
    delete=schemas.delete_schema, delete_takes_force=True, delete_response=DELETED,
), module=__name__)
# No PATCH: what a table's format owns changes through its protocol, and the console renames
# tables and changes their owner (tables.update_table).
TablesView, TableView = views(Resource(
    noun="Table", tag="Tables", info_type=wire.TableInfo, visible=tables.visible_tables, filters=CATALOG_AND_SCHEMA,
    create=tables.create_table, create_request=wire.CreateTable, get=tables.get_table,
    delete=tables.delete_table, delete_response=DELETED, render=wire.table_info,
), module=__name__)


class PermissionsView(CatalogAPIView):
    audit_securable_type = "permissions"
    audit_actions = {"PATCH": AuditAction.UPDATE_PERMISSIONS}

    @extend_schema(
        operation_id="getPermissions", tags=["Grants"], responses=wire.PermissionsList,
        parameters=[OpenApiParameter("principal", str, description="Only this principal's privileges.")],
    )
    def get(self, request, securable_type, full_name):
        assignments = permissions.get_permissions(
            caller=request.user, securable_type=securable_type, full_name=full_name,
            principal=request.query_params.get("principal") or None,
        )
        return Response({"privilege_assignments": assignments})

    @extend_schema(operation_id="updatePermissions", tags=["Grants"], request=wire.UpdatePermissions,
                   responses=wire.PermissionsList)
    def patch(self, request, securable_type, full_name):
        body = self.body(request)
        assignments = permissions.update_permissions(
            caller=request.user, securable_type=securable_type, full_name=full_name,
            changes=body.get("changes", []),
        )
        return Response({"privilege_assignments": assignments})


class MetastoreSummaryView(CatalogAPIView):
    @extend_schema(operation_id="getMetastoreSummary", tags=["Metastores"], responses=wire.MetastoreSummary)
    def get(self, request):
        metastore = Metastore.objects.first()
        if metastore is None:
            raise MetastoreDoesNotExist("No metastore has been created; run `manage.py bootstrap`.")
        return Response({"metastore_id": str(metastore.id), "name": metastore.name})


class DefaultNamespaceSettingView(CatalogAPIView):
    @extend_schema(
        operation_id="getDefaultNamespaceSetting", tags=["Workspace settings"],
        responses=wire.DefaultNamespaceSetting,
        parameters=[OpenApiParameter("etag", str, description=(
            "Databricks' version of the setting to read at least; accepted and not needed: the value "
            "changes only with the server's configuration."))],
        description=(
            "Databricks' workspace setting `default_namespace_ws`: the default catalog "
            "(`UCWEB_DEFAULT_WAREHOUSE`); the schema `default` of a catalog is always assumed. "
            "The answer is the same for every caller, whether that catalog exists or not and "
            "whether the caller may see it or not. Read-only: the value is configuration. "
            "DuckDB's unity_catalog extension asks it on ATTACH without DEFAULT_SCHEMA and takes "
            "`setting_name` (\"default\") as the attached catalog's default schema."
        ),
    )
    def get(self, request):
        return Response(catalogs.default_namespace_setting())
