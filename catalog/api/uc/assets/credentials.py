"""Unity Catalog API: storage credentials and the external locations they unlock."""

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema_field
from rest_framework import serializers

from catalog.api.uc.resources import Resource, views
from catalog.api.uc.serializers import OwnedInfo
from catalog.choices import CredentialPurpose
from catalog.services import credentials, external_locations


class AwsIamRoleInfo(serializers.Serializer):
    role_arn = serializers.CharField(source="aws_role_arn")
    unity_catalog_iam_arn = serializers.SerializerMethodField()
    external_id = serializers.CharField(source="aws_external_id", allow_null=True)

    def get_unity_catalog_iam_arn(self, credential) -> str | None:
        return settings.UCWEB_IAM_ARN


class AwsStaticKeysInfo(serializers.Serializer):
    access_key_id = serializers.CharField(source="aws_access_key_id")


class CredentialInfo(OwnedInfo):
    """The spec's CredentialInfo plus `aws_static_keys` (the access key id only: secrets are never
    returned), `endpoint_url` and `region`."""

    name = serializers.CharField()
    full_name = serializers.CharField()
    id = serializers.CharField()
    purpose = serializers.ChoiceField(choices=CredentialPurpose.choices)
    aws_iam_role = serializers.SerializerMethodField()
    aws_static_keys = serializers.SerializerMethodField()
    endpoint_url = serializers.CharField(allow_null=True)
    region = serializers.CharField(allow_null=True)

    @extend_schema_field(AwsIamRoleInfo(allow_null=True))
    def get_aws_iam_role(self, credential):
        return AwsIamRoleInfo(credential).data if credential.aws_role_arn else None

    @extend_schema_field(AwsStaticKeysInfo(allow_null=True))
    def get_aws_static_keys(self, credential):
        return AwsStaticKeysInfo(credential).data if credential.aws_access_key_id else None


class AwsIamRoleRequest(serializers.Serializer):
    role_arn = serializers.CharField()


class AwsStaticKeysRequest(serializers.Serializer):
    access_key_id = serializers.CharField()
    secret_access_key = serializers.CharField()


class CreateCredentialRequest(serializers.Serializer):
    name = serializers.CharField()
    purpose = serializers.ChoiceField(choices=CredentialPurpose.choices, required=False)
    comment = serializers.CharField(required=False)
    aws_iam_role = AwsIamRoleRequest(required=False)
    aws_static_keys = AwsStaticKeysRequest(required=False)
    endpoint_url = serializers.CharField(required=False)
    region = serializers.CharField(required=False)


class UpdateCredentialRequest(serializers.Serializer):
    comment = serializers.CharField(required=False)
    owner = serializers.CharField(required=False)
    new_name = serializers.CharField(required=False)
    aws_iam_role = AwsIamRoleRequest(required=False, allow_null=True)
    aws_static_keys = AwsStaticKeysRequest(required=False, allow_null=True)
    endpoint_url = serializers.CharField(required=False, allow_null=True)
    region = serializers.CharField(required=False, allow_null=True)


class ExternalLocationInfo(OwnedInfo):
    name = serializers.CharField()
    id = serializers.CharField()
    url = serializers.CharField()
    credential_name = serializers.CharField(source="credential.name")
    credential_id = serializers.CharField(source="credential.id")


class CreateExternalLocation(serializers.Serializer):
    name = serializers.CharField()
    url = serializers.CharField()
    credential_name = serializers.CharField()
    comment = serializers.CharField(required=False)


class UpdateExternalLocation(serializers.Serializer):
    url = serializers.CharField(required=False)
    credential_name = serializers.CharField(required=False)
    comment = serializers.CharField(required=False)
    owner = serializers.CharField(required=False)
    new_name = serializers.CharField(required=False)


CredentialsView, CredentialView = views(Resource(
    noun="Credential", tag="Credentials", info_type=CredentialInfo, visible=credentials.visible_credentials,
    filters=(OpenApiParameter("purpose", str, enum=CredentialPurpose.values),),
    create=credentials.create_credential, create_request=CreateCredentialRequest, get=credentials.get_credential,
    update=credentials.update_credential, update_request=UpdateCredentialRequest,
    delete=credentials.delete_credential, delete_takes_force=True, name_argument="name",
), module=__name__)
ExternalLocationsView, ExternalLocationView = views(Resource(
    noun="ExternalLocation", tag="External Locations", info_type=ExternalLocationInfo,
    visible=external_locations.visible_external_locations, create=external_locations.create_external_location,
    create_request=CreateExternalLocation, get=external_locations.get_external_location,
    update=external_locations.update_external_location, update_request=UpdateExternalLocation,
    delete=external_locations.delete_external_location, delete_takes_force=True, name_argument="name",
), module=__name__)
