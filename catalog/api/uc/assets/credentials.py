"""Unity Catalog API: storage credentials and the external locations they unlock."""

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from catalog import pagination
from catalog.api.base import CatalogAPIView
from catalog.api.uc.assets.common import query
from catalog.api.uc.serializers import Empty, OwnedInfo, arguments, changes
from catalog.api.uc.views import FORCE, PAGE_PARAMETERS, page
from catalog.choices import CredentialPurpose
from catalog.services import credentials, external_locations
from catalog.services.common import validate_optional_bool


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


class ListCredentialsResponse(serializers.Serializer):
    credentials = CredentialInfo(many=True)
    next_page_token = serializers.CharField(required=False)


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


class ListExternalLocationsResponse(serializers.Serializer):
    external_locations = ExternalLocationInfo(many=True)
    next_page_token = serializers.CharField(required=False)


class CredentialsView(CatalogAPIView):
    audit_securable_type = "credential"

    @extend_schema(
        operation_id="listCredentials", tags=["Credentials"], responses=ListCredentialsResponse,
        parameters=[*PAGE_PARAMETERS, OpenApiParameter("purpose", str, enum=CredentialPurpose.values)],
    )
    def get(self, request):
        queryset = credentials.visible_credentials(caller=request.user, purpose=query(request, "purpose"))
        items, token = pagination.paginate(queryset, max_results=query(request, "max_results"),
                                          page_token=query(request, "page_token"))
        return Response(page(items, token, "credentials", CredentialInfo))

    @extend_schema(operation_id="createCredential", tags=["Credentials"], request=CreateCredentialRequest,
                   responses=CredentialInfo)
    def post(self, request):
        credential = credentials.create_credential(caller=request.user,
                                                   **arguments(self.body(request), CreateCredentialRequest))
        return Response(CredentialInfo(credential).data)


class CredentialView(CatalogAPIView):
    audit_securable_type = "credential"

    @extend_schema(operation_id="getCredential", tags=["Credentials"], responses=CredentialInfo)
    def get(self, request, name):
        return Response(CredentialInfo(credentials.get_credential(caller=request.user, name=name)).data)

    @extend_schema(operation_id="updateCredential", tags=["Credentials"], request=UpdateCredentialRequest,
                   responses=CredentialInfo)
    def patch(self, request, name):
        fields = changes(self.body(request), UpdateCredentialRequest)
        credential = credentials.update_credential(caller=request.user, name=name, fields=fields)
        return Response(CredentialInfo(credential).data)

    @extend_schema(operation_id="deleteCredential", tags=["Credentials"], parameters=[FORCE], responses=Empty)
    def delete(self, request, name):
        force = validate_optional_bool(query(request, "force"), field="force")
        credentials.delete_credential(caller=request.user, name=name, force=force)
        return Response({})


class ExternalLocationsView(CatalogAPIView):
    audit_securable_type = "external_location"

    @extend_schema(operation_id="listExternalLocations", tags=["External Locations"], parameters=PAGE_PARAMETERS,
                   responses=ListExternalLocationsResponse)
    def get(self, request):
        queryset = external_locations.visible_external_locations(caller=request.user)
        items, token = pagination.paginate(queryset, max_results=query(request, "max_results"),
                                          page_token=query(request, "page_token"))
        return Response(page(items, token, "external_locations", ExternalLocationInfo))

    @extend_schema(operation_id="createExternalLocation", tags=["External Locations"],
                   request=CreateExternalLocation, responses=ExternalLocationInfo)
    def post(self, request):
        location = external_locations.create_external_location(
            caller=request.user, **arguments(self.body(request), CreateExternalLocation))
        return Response(ExternalLocationInfo(location).data)


class ExternalLocationView(CatalogAPIView):
    audit_securable_type = "external_location"

    @extend_schema(operation_id="getExternalLocation", tags=["External Locations"], responses=ExternalLocationInfo)
    def get(self, request, name):
        location = external_locations.get_external_location(caller=request.user, name=name)
        return Response(ExternalLocationInfo(location).data)

    @extend_schema(operation_id="updateExternalLocation", tags=["External Locations"],
                   request=UpdateExternalLocation, responses=ExternalLocationInfo)
    def patch(self, request, name):
        fields = changes(self.body(request), UpdateExternalLocation)
        location = external_locations.update_external_location(caller=request.user, name=name, fields=fields)
        return Response(ExternalLocationInfo(location).data)

    @extend_schema(operation_id="deleteExternalLocation", tags=["External Locations"], parameters=[FORCE],
                   responses=Empty)
    def delete(self, request, name):
        force = validate_optional_bool(query(request, "force"), field="force")
        external_locations.delete_external_location(caller=request.user, name=name, force=force)
        return Response({})
