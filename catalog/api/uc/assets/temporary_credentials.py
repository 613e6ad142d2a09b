"""Unity Catalog API: temporary credentials for a table, volume, path or model version. The grants
are checked in catalog.services.temporary_credentials; the keys come from the one vendor,
catalog.storage.credentials."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from catalog.api.base import CatalogAPIView
from catalog.api.uc.serializers import arguments
from catalog.choices import ModelVersionOperation, PathOperation, TableOperation, VolumeOperation
from catalog.services import temporary_credentials


class AwsCredentials(serializers.Serializer):
    access_key_id = serializers.CharField()
    secret_access_key = serializers.CharField()
    session_token = serializers.CharField()


class TemporaryCredentials(serializers.Serializer):
    aws_temp_credentials = AwsCredentials(required=False)
    expiration_time = serializers.IntegerField()
    url = serializers.CharField()


class GenerateTemporaryTableCredential(serializers.Serializer):
    table_id = serializers.CharField()
    operation = serializers.ChoiceField(choices=TableOperation.choices)


class GenerateTemporaryVolumeCredential(serializers.Serializer):
    volume_id = serializers.CharField()
    operation = serializers.ChoiceField(choices=VolumeOperation.choices)


class GenerateTemporaryPathCredential(serializers.Serializer):
    url = serializers.CharField()
    operation = serializers.ChoiceField(choices=PathOperation.choices)


class GenerateTemporaryModelVersionCredential(serializers.Serializer):
    catalog_name = serializers.CharField()
    schema_name = serializers.CharField()
    model_name = serializers.CharField()
    version = serializers.IntegerField()
    operation = serializers.ChoiceField(choices=ModelVersionOperation.choices)


class TemporaryTableCredentialsView(CatalogAPIView):
    audit_securable_type = "table"

    @extend_schema(operation_id="generateTemporaryTableCredentials", tags=["TemporaryCredentials"],
                   request=GenerateTemporaryTableCredential, responses=TemporaryCredentials)
    def post(self, request):
        wire = arguments(self.body(request), GenerateTemporaryTableCredential)
        return Response(temporary_credentials.for_table(caller=request.user, **wire))


class TemporaryVolumeCredentialsView(CatalogAPIView):
    audit_securable_type = "volume"

    @extend_schema(operation_id="generateTemporaryVolumeCredentials", tags=["TemporaryCredentials"],
                   request=GenerateTemporaryVolumeCredential, responses=TemporaryCredentials)
    def post(self, request):
        wire = arguments(self.body(request), GenerateTemporaryVolumeCredential)
        return Response(temporary_credentials.for_volume(caller=request.user, **wire))


class TemporaryPathCredentialsView(CatalogAPIView):
    audit_securable_type = "external_location"

    @extend_schema(operation_id="generateTemporaryPathCredentials", tags=["TemporaryCredentials"],
                   request=GenerateTemporaryPathCredential, responses=TemporaryCredentials)
    def post(self, request):
        wire = arguments(self.body(request), GenerateTemporaryPathCredential)
        return Response(temporary_credentials.for_path(caller=request.user, **wire))


class TemporaryModelVersionCredentialsView(CatalogAPIView):
    audit_securable_type = "registered_model"

    @extend_schema(operation_id="generateTemporaryModelVersionCredentials", tags=["TemporaryCredentials"],
                   request=GenerateTemporaryModelVersionCredential, responses=TemporaryCredentials)
    def post(self, request):
        wire = arguments(self.body(request), GenerateTemporaryModelVersionCredential)
        return Response(temporary_credentials.for_model_version(caller=request.user, **wire))
