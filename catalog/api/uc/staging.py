from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from catalog.choices import AuditAction
from catalog.api.base import CatalogAPIView
from catalog.api.uc.serializers import arguments
from catalog.services import managed_tables


class CreateStagingTable(serializers.Serializer):
    name = serializers.CharField()
    catalog_name = serializers.CharField()
    schema_name = serializers.CharField()


class StagingTableInfo(serializers.Serializer):
    name = serializers.CharField()
    catalog_name = serializers.CharField(source="schema.catalog.name")
    schema_name = serializers.CharField(source="schema.uc_name")
    id = serializers.CharField()
    staging_location = serializers.CharField()


class StagingTablesView(CatalogAPIView):
    audit_securable_type = "table"
    audit_actions = {"POST": AuditAction.CREATE_STAGING_TABLE}

    @extend_schema(
        operation_id="createStagingTable", tags=["Tables"], request=CreateStagingTable,
        responses=StagingTableInfo,
        description="Allocates a table id and a storage location for a managed Delta table. Write "
        "`_delta_log/00000000000000000000.json` there, then POST /tables with "
        "table_type MANAGED and storage_location = staging_location.",
    )
    def post(self, request):
        staging = managed_tables.create_staging_table(
            caller=request.user, **arguments(self.body(request), CreateStagingTable))
        return Response(StagingTableInfo(staging).data)
