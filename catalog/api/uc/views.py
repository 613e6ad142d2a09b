from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from catalog import pagination
from catalog.api.base import CatalogAPIView
from catalog.api.uc import serializers as wire
from catalog.models import Metastore
from catalog.services import catalogs, permissions, schemas, tables
from catalog.services.common import validate_optional_bool
from ucweb.errors import MetastoreDoesNotExist

PAGE_PARAMETERS = [
    OpenApiParameter("max_results", int, description="Page size; 0 or absent: the server default."),
    OpenApiParameter("page_token", str, description="Token from the previous page's next_page_token."),
]
FORCE = OpenApiParameter("force", bool, description="Delete everything inside too.")
UPDATE_FIELDS = ("comment", "properties", "new_name", "owner")
# The deletes answer 200 with an empty JSON object, as the Unity Catalog spec says.
DELETED = {200: OpenApiResponse(OpenApiTypes.OBJECT, description="An empty object.")}


def page(items, next_token, key: str, serializer) -> dict:
    body = {key: serializer(items, many=True).data}
    if next_token:
        body["next_page_token"] = next_token
    return body


def listed(request, queryset, key: str, serializer) -> Response:
    """One page of a Unity Catalog list, `key` naming the list in the answer."""
    items, token = pagination.paginate(
        queryset, max_results=request.query_params.get("max_results"),
        page_token=request.query_params.get("page_token"), maximum=pagination.SPEC_MAXIMUM.get(key),
    )
    return Response(page(items, token, key, serializer))


class CatalogsView(CatalogAPIView):
    audit_securable_type = "catalog"

    @extend_schema(operation_id="listCatalogs", tags=["Catalogs"], parameters=PAGE_PARAMETERS,
                   responses=wire.ListCatalogsResponse)
    def get(self, request):
        return listed(request, catalogs.visible_catalogs(caller=request.user), "catalogs", wire.CatalogInfo)

    @extend_schema(operation_id="createCatalog", tags=["Catalogs"], request=wire.CreateCatalog,
                   responses=wire.CatalogInfo)
    def post(self, request):
        body = self.body(request)
        catalog = catalogs.create_catalog(
            caller=request.user,
            name=body.get("name"),
            comment=body.get("comment"),
            properties=body.get("properties"),
            storage_root=body.get("storage_root"),
        )
        return Response(wire.CatalogInfo(catalog).data)


class CatalogView(CatalogAPIView):
    audit_securable_type = "catalog"

    @extend_schema(operation_id="getCatalog", tags=["Catalogs"], responses=wire.CatalogInfo)
    def get(self, request, name):
        return Response(wire.CatalogInfo(catalogs.get_catalog(caller=request.user, name=name)).data)

    @extend_schema(operation_id="updateCatalog", tags=["Catalogs"], request=wire.UpdateSecurable,
                   responses=wire.CatalogInfo)
    def patch(self, request, name):
        body = self.body(request)
        fields = {key: body[key] for key in UPDATE_FIELDS if key in body}
        catalog = catalogs.update_catalog(caller=request.user, name=name, fields=fields)
        return Response(wire.CatalogInfo(catalog).data)

    @extend_schema(operation_id="deleteCatalog", tags=["Catalogs"], parameters=[FORCE], responses=DELETED)
    def delete(self, request, name):
        force = validate_optional_bool(request.query_params.get("force"), field="force")
        catalogs.delete_catalog(caller=request.user, name=name, force=force)
        return Response({})


class SchemasView(CatalogAPIView):
    audit_securable_type = "schema"

    @extend_schema(
        operation_id="listSchemas", tags=["Schemas"], responses=wire.ListSchemasResponse,
        parameters=[OpenApiParameter("catalog_name", str, required=True), *PAGE_PARAMETERS],
    )
    def get(self, request):
        queryset = schemas.visible_schemas(caller=request.user, catalog_name=_required_query(request, "catalog_name"))
        return listed(request, queryset, "schemas", wire.SchemaInfo)

    @extend_schema(operation_id="createSchema", tags=["Schemas"], request=wire.CreateSchema,
                   responses=wire.SchemaInfo)
    def post(self, request):
        body = self.body(request)
        schema = schemas.create_schema(
            caller=request.user,
            name=body.get("name"),
            catalog_name=body.get("catalog_name"),
            comment=body.get("comment"),
            properties=body.get("properties"),
            storage_root=body.get("storage_root"),
        )
        return Response(wire.SchemaInfo(schema).data)


class SchemaView(CatalogAPIView):
    audit_securable_type = "schema"

    @extend_schema(operation_id="getSchema", tags=["Schemas"], responses=wire.SchemaInfo)
    def get(self, request, full_name):
        return Response(wire.SchemaInfo(schemas.get_schema(caller=request.user, full_name=full_name)).data)

    @extend_schema(operation_id="updateSchema", tags=["Schemas"], request=wire.UpdateSecurable,
                   responses=wire.SchemaInfo)
    def patch(self, request, full_name):
        body = self.body(request)
        fields = {key: body[key] for key in UPDATE_FIELDS if key in body}
        schema = schemas.update_schema(caller=request.user, full_name=full_name, fields=fields)
        return Response(wire.SchemaInfo(schema).data)

    @extend_schema(operation_id="deleteSchema", tags=["Schemas"], parameters=[FORCE], responses=DELETED)
    def delete(self, request, full_name):
        force = validate_optional_bool(request.query_params.get("force"), field="force")
        schemas.delete_schema(caller=request.user, full_name=full_name, force=force)
        return Response({})


class TablesView(CatalogAPIView):
    audit_securable_type = "table"

    @extend_schema(
        operation_id="listTables", tags=["Tables"], responses=wire.ListTablesResponse,
        parameters=[
            OpenApiParameter("catalog_name", str, required=True),
            OpenApiParameter("schema_name", str, required=True),
            *PAGE_PARAMETERS,
        ],
    )
    def get(self, request):
        queryset = tables.visible_tables(
            caller=request.user,
            catalog_name=_required_query(request, "catalog_name"),
            schema_name=_required_query(request, "schema_name"),
        )
        return listed(request, queryset, "tables", wire.TableInfo)

    @extend_schema(operation_id="createTable", tags=["Tables"], request=wire.CreateTable, responses=wire.TableInfo)
    def post(self, request):
        body = self.body(request)
        table = tables.create_table(
            caller=request.user,
            name=body.get("name"),
            catalog_name=body.get("catalog_name"),
            schema_name=body.get("schema_name"),
            table_type=body.get("table_type"),
            data_source_format=body.get("data_source_format"),
            columns=body.get("columns"),
            storage_location=body.get("storage_location"),
            comment=body.get("comment"),
            properties=body.get("properties"),
            view_definition=body.get("view_definition"),
            view_dependencies=body.get("view_dependencies"),
        )
        return Response(wire.TableInfo(table).data)


class TableView(CatalogAPIView):
    audit_securable_type = "table"

    @extend_schema(operation_id="getTable", tags=["Tables"], responses=wire.TableInfo)
    def get(self, request, full_name):
        return Response(wire.TableInfo(tables.get_table(caller=request.user, full_name=full_name)).data)

    @extend_schema(operation_id="deleteTable", tags=["Tables"], responses=DELETED)
    def delete(self, request, full_name):
        tables.delete_table(caller=request.user, full_name=full_name)
        return Response({})


class PermissionsView(CatalogAPIView):
    audit_securable_type = "permissions"

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


def _required_query(request, name: str) -> str:
    from ucweb.errors import InvalidParameter

    value = request.query_params.get(name)
    if not value:
        raise InvalidParameter(f"Query parameter {name} is required.")
    return value
