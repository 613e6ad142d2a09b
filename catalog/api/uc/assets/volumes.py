"""Unity Catalog API: volumes (folders of files governed like tables)."""

from rest_framework import serializers

from catalog.api.uc.resources import CATALOG_AND_SCHEMA, Resource, views
from catalog.api.uc.serializers import OwnedInfo, UpdateOwned
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


class UpdateVolume(UpdateOwned):
    pass


VolumesView, VolumeView = views(Resource(
    noun="Volume", tag="Volumes", info_type=VolumeInfo, visible=volumes.visible_volumes, filters=CATALOG_AND_SCHEMA,
    create=volumes.create_volume, create_request=CreateVolume, get=volumes.get_volume,
    update=volumes.update_volume, update_request=UpdateVolume, delete=volumes.delete_volume,
), module=__name__)
