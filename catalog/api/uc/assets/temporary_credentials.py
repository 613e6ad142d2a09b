"""Unity Catalog API: temporary credentials for a table, volume, path or model version. The grants
are checked in catalog.services.temporary_credentials; the keys come from the one vendor,
catalog.services.vendor."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from catalog.api.base import CatalogAPIView
from catalog.api.uc.serializers import arguments
from catalog.choices import AuditAction, ModelVersionOperation, PathOperation, TableOperation, VolumeOperation
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


def _vending_view(noun: str, securable_type: str, request_type, vend):
    """The view `Temporary<noun>CredentialsView`: POST the request, answer the keys `vend` gives.
    `noun` names what the keys are for (a table, a path) and `securable_type` the securable the
    audit records (a path's is its external location)."""

    @extend_schema(operation_id=f"generateTemporary{noun}Credentials", tags=["TemporaryCredentials"],
                   request=request_type, responses=TemporaryCredentials,
                   description="The request is the JSON body or, when there is none, the same fields as "
                               "query parameters (Polars sends them so).")
    def post(self, request):
        fields = self.body(request) or request.query_params.dict()
        return Response(vend(caller=request.user, **arguments(fields, request_type)))

    return type(f"Temporary{noun}CredentialsView", (CatalogAPIView,),
                {"audit_securable_type": securable_type, "post": post,
                 "audit_actions": {"POST": AuditAction(f"generateTemporary{noun}Credentials")}})


TemporaryTableCredentialsView = _vending_view(
    "Table", "table", GenerateTemporaryTableCredential, temporary_credentials.for_table)
TemporaryVolumeCredentialsView = _vending_view(
    "Volume", "volume", GenerateTemporaryVolumeCredential, temporary_credentials.for_volume)
TemporaryPathCredentialsView = _vending_view(
    "Path", "external_location", GenerateTemporaryPathCredential, temporary_credentials.for_path)
TemporaryModelVersionCredentialsView = _vending_view(
    "ModelVersion", "registered_model", GenerateTemporaryModelVersionCredential,
    temporary_credentials.for_model_version)
