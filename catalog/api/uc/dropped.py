"""Unity Catalog API: dropped tables and volumes, kept for UCWEB_DROP_RETENTION_SECONDS
(catalog.services.dropped). The Unity Catalog spec has no undrop; these routes follow its style
for what Databricks SQL does with SHOW TABLES DROPPED, UNDROP TABLE WITH ID and an early purge:

    GET    /dropped-tables?catalog_name=&schema_name=   the dropped tables the caller may restore
    POST   /dropped-tables/{table_id}/undrop             restore one, under the name it had
    DELETE /dropped-tables/{table_id}                    purge one now

and the same under /dropped-volumes."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from catalog.api.base import CatalogAPIView
from catalog.api.uc.assets.volumes import VolumeInfo
from catalog.api.uc.resources import CATALOG_AND_SCHEMA, DELETED, required_query
from catalog.api.uc.serializers import EpochMillisField, TableInfo
from catalog.choices import AuditAction, SecurableType
from catalog.services import dropped


class Dropped(serializers.Serializer):
    dropped_at = EpochMillisField()
    dropped_by = serializers.CharField()


class DroppedTableInfo(TableInfo, Dropped):
    pass


class DroppedVolumeInfo(VolumeInfo, Dropped):
    pass


def _views(*, noun: str, plural: str, securable_type: str, info_type, id_kwarg: str, undrop_action: str,
           purge_action: str):
    key, tag = plural.lower(), plural

    class DroppedListView(CatalogAPIView):
        @extend_schema(
            operation_id=f"listDropped{plural}", tags=[tag], parameters=list(CATALOG_AND_SCHEMA),
            responses=type(f"ListDropped{plural}Response", (serializers.Serializer,),
                           {key: info_type(many=True)}),
            description=f"The {key} of the schema dropped within UCWEB_DROP_RETENTION_SECONDS that the caller "
                        "may restore (as owner, owner above or metastore admin), last dropped first.",
        )
        def get(self, request):
            rows = dropped.dropped_in_schema(
                caller=request.user, securable_type=securable_type,
                catalog_name=required_query(request, "catalog_name"), schema_name=required_query(request, "schema_name"))
            return Response({key: info_type(rows, many=True).data})

    class OneDroppedView(CatalogAPIView):
        audit_securable_type = securable_type

        def refused_securable(self, request, kwargs):
            return securable_type, str(kwargs[id_kwarg])

    class PurgeView(OneDroppedView):
        audit_actions = {"DELETE": purge_action}

        @extend_schema(operation_id=f"purgeDropped{noun}", tags=[tag], responses=DELETED,
                       description=f"Deletes a dropped {noun.lower()} for good now; a managed one's files are purged.")
        def delete(self, request, **kwargs):
            dropped.purge(caller=request.user, securable_type=securable_type, securable_id=kwargs[id_kwarg])
            return Response({})

    class UndropView(OneDroppedView):
        audit_actions = {"POST": undrop_action}

        @extend_schema(operation_id=f"undrop{noun}", tags=[tag], request=None, responses=info_type,
                       description=f"Restores a dropped {noun.lower()} with its id, grants and history, under "
                                   "the name it had: 409 ALREADY_EXISTS when that name or its location is "
                                   "taken meanwhile.")
        def post(self, request, **kwargs):
            row = dropped.restore(caller=request.user, securable_type=securable_type, securable_id=kwargs[id_kwarg])
            return Response(info_type(row).data)

    names = (f"Dropped{plural}View", f"Dropped{noun}View", f"Undrop{noun}View")
    for view, name in zip((DroppedListView, PurgeView, UndropView), names):
        view.__name__ = view.__qualname__ = name
    return DroppedListView, PurgeView, UndropView


DroppedTablesView, DroppedTableView, UndropTableView = _views(
    noun="Table", plural="Tables", securable_type=SecurableType.TABLE, info_type=DroppedTableInfo,
    id_kwarg="table_id", undrop_action=AuditAction.UNDROP_TABLE, purge_action=AuditAction.PURGE_DROPPED_TABLE)
DroppedVolumesView, DroppedVolumeView, UndropVolumeView = _views(
    noun="Volume", plural="Volumes", securable_type=SecurableType.VOLUME, info_type=DroppedVolumeInfo,
    id_kwarg="volume_id", undrop_action=AuditAction.UNDROP_VOLUME, purge_action=AuditAction.PURGE_DROPPED_VOLUME)
