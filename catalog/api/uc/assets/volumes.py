"""Unity Catalog API: volumes (folders of files governed like tables)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from catalog import pagination
from catalog.api.base import CatalogAPIView
from catalog.api.uc.assets.common import CATALOG_AND_SCHEMA, query
from catalog.api.uc.serializers import Empty, OwnedInfo, arguments, changes
from catalog.api.uc.views import PAGE_PARAMETERS, _required_query, page
from catalog.choices import VolumeType
from catalog.services import volumes


class VolumeInfo(OwnedInfo):
    catalog_name = serializers.CharField(source="schema.catalog.name")
    schema_name = serializers.CharField(source="schema.uc_name")
    name = serializers.CharField()
    full_name = serializers.CharField()
    volume_id = serializers.CharField(source="id")
    volume_type = serializers.ChoiceField(choices=VolumeType.choices)
    storage_location = serializers.CharField()


class CreateVolume(serializers.Serializer):
    catalog_name = serializers.CharField()
    schema_name = serializers.CharField()
    name = serializers.CharField()
    volume_type = serializers.ChoiceField(choices=VolumeType.choices)
    comment = serializers.CharField(required=False)
    storage_location = serializers.CharField(required=False)


class UpdateVolume(serializers.Serializer):
    comment = serializers.CharField(required=False)
    new_name = serializers.CharField(required=False)
    owner = serializers.CharField(required=False)


class ListVolumesResponse(serializers.Serializer):
    volumes = VolumeInfo(many=True)
    next_page_token = serializers.CharField(required=False)


class VolumesView(CatalogAPIView):
    audit_securable_type = "volume"

    @extend_schema(operation_id="listVolumes", tags=["Volumes"], parameters=[*CATALOG_AND_SCHEMA, *PAGE_PARAMETERS],
                   responses=ListVolumesResponse)
    def get(self, request):
        queryset = volumes.visible_volumes(
            caller=request.user, catalog_name=_required_query(request, "catalog_name"),
            schema_name=_required_query(request, "schema_name"),
        )
        items, token = pagination.paginate(queryset, max_results=query(request, "max_results"),
                                          page_token=query(request, "page_token"))
        return Response(page(items, token, "volumes", VolumeInfo))

    @extend_schema(operation_id="createVolume", tags=["Volumes"], request=CreateVolume, responses=VolumeInfo)
    def post(self, request):
        volume = volumes.create_volume(caller=request.user, **arguments(self.body(request), CreateVolume))
        return Response(VolumeInfo(volume).data)


class VolumeView(CatalogAPIView):
    audit_securable_type = "volume"

    @extend_schema(operation_id="getVolume", tags=["Volumes"], responses=VolumeInfo)
    def get(self, request, name):
        return Response(VolumeInfo(volumes.get_volume(caller=request.user, full_name=name)).data)

    @extend_schema(operation_id="updateVolume", tags=["Volumes"], request=UpdateVolume, responses=VolumeInfo)
    def patch(self, request, name):
        fields = changes(self.body(request), UpdateVolume)
        return Response(VolumeInfo(volumes.update_volume(caller=request.user, full_name=name, fields=fields)).data)

    @extend_schema(operation_id="deleteVolume", tags=["Volumes"], responses=Empty)
    def delete(self, request, name):
        volumes.delete_volume(caller=request.user, full_name=name)
        return Response({})
