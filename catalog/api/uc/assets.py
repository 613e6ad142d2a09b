"""Unity Catalog API for volumes, functions, registered models and model versions, credentials,
external locations and temporary credentials: wire types and thin views over the services."""

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from catalog import asset_selectors, selectors
from catalog.api.base import CatalogAPIView
from catalog.api.uc.serializers import EpochMillisField
from catalog.api.uc.views import FORCE, PAGE_PARAMETERS, _required_query, page
from catalog.choices import (
    ColumnTypeName,
    CredentialPurpose,
    FunctionParameterMode,
    FunctionParameterType,
    ModelVersionOperation,
    ModelVersionStatus,
    PathOperation,
    RoutineBody,
    SqlDataAccess,
    TableOperation,
    VolumeOperation,
    VolumeType,
)
from catalog.services import (
    credentials,
    external_locations,
    functions,
    registered_models,
    temporary_credentials,
    volumes,
)
from catalog.services.common import validate_optional_bool


# == wire types ====================================================================================
class VolumeInfo(serializers.Serializer):
    catalog_name = serializers.CharField(source="schema.catalog.name")
    schema_name = serializers.CharField(source="schema.name")
    name = serializers.CharField()
    full_name = serializers.CharField()
    volume_id = serializers.CharField(source="id")
    volume_type = serializers.ChoiceField(choices=VolumeType.choices)
    storage_location = serializers.CharField()
    comment = serializers.CharField(allow_null=True)
    owner = serializers.CharField()
    created_at = EpochMillisField()
    created_by = serializers.CharField()
    updated_at = EpochMillisField(allow_null=True)
    updated_by = serializers.CharField(allow_null=True)


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


class FunctionParameterInfo(serializers.Serializer):
    name = serializers.CharField()
    type_text = serializers.CharField()
    type_json = serializers.CharField()
    type_name = serializers.ChoiceField(choices=ColumnTypeName.choices)
    type_precision = serializers.IntegerField(required=False, allow_null=True)
    type_scale = serializers.IntegerField(required=False, allow_null=True)
    type_interval_type = serializers.CharField(required=False, allow_null=True)
    position = serializers.IntegerField()
    parameter_mode = serializers.ChoiceField(choices=FunctionParameterMode.choices, required=False, allow_null=True)
    parameter_type = serializers.ChoiceField(choices=FunctionParameterType.choices, required=False, allow_null=True)
    parameter_default = serializers.CharField(required=False, allow_null=True)
    comment = serializers.CharField(required=False, allow_null=True)


class FunctionParameterInfos(serializers.Serializer):
    parameters = FunctionParameterInfo(many=True)


@extend_schema_field(FunctionParameterInfos)
class ParametersField(serializers.Field):
    """Stored as a list of FunctionParameterInfo dicts; on the wire {"parameters": [...]}. Fields
    the client did not send are left out rather than sent as null."""

    def to_representation(self, value):
        if value is None:
            return None
        return {"parameters": [{k: v for k, v in p.items() if v is not None} for p in value]}


class FunctionInfo(serializers.Serializer):
    name = serializers.CharField()
    catalog_name = serializers.CharField(source="schema.catalog.name")
    schema_name = serializers.CharField(source="schema.name")
    full_name = serializers.CharField()
    function_id = serializers.CharField(source="id")
    input_params = ParametersField()
    return_params = ParametersField(allow_null=True)
    data_type = serializers.ChoiceField(choices=ColumnTypeName.choices)
    full_data_type = serializers.CharField()
    routine_body = serializers.ChoiceField(choices=RoutineBody.choices)
    routine_definition = serializers.CharField()
    routine_dependencies = serializers.JSONField(allow_null=True)
    parameter_style = serializers.CharField()
    is_deterministic = serializers.BooleanField()
    sql_data_access = serializers.ChoiceField(choices=SqlDataAccess.choices)
    is_null_call = serializers.BooleanField()
    security_type = serializers.CharField()
    specific_name = serializers.CharField()
    external_language = serializers.CharField(allow_null=True)
    properties = serializers.CharField(source="properties_text", allow_null=True)
    comment = serializers.CharField(allow_null=True)
    owner = serializers.CharField()
    created_at = EpochMillisField()
    created_by = serializers.CharField()
    updated_at = EpochMillisField(allow_null=True)
    updated_by = serializers.CharField(allow_null=True)


class CreateFunctionBody(serializers.Serializer):
    name = serializers.CharField()
    catalog_name = serializers.CharField()
    schema_name = serializers.CharField()
    input_params = FunctionParameterInfos()
    data_type = serializers.ChoiceField(choices=ColumnTypeName.choices)
    full_data_type = serializers.CharField()
    return_params = FunctionParameterInfos(required=False)
    routine_body = serializers.ChoiceField(choices=RoutineBody.choices)
    routine_definition = serializers.CharField()
    routine_dependencies = serializers.JSONField(required=False)
    parameter_style = serializers.CharField()
    is_deterministic = serializers.BooleanField()
    sql_data_access = serializers.ChoiceField(choices=SqlDataAccess.choices)
    is_null_call = serializers.BooleanField()
    security_type = serializers.CharField()
    specific_name = serializers.CharField()
    comment = serializers.CharField(required=False)
    properties = serializers.CharField(required=False)
    external_language = serializers.CharField(required=False)


class CreateFunctionRequest(serializers.Serializer):
    function_info = CreateFunctionBody()


class ListFunctionsResponse(serializers.Serializer):
    functions = FunctionInfo(many=True)
    next_page_token = serializers.CharField(required=False)


class RegisteredModelInfo(serializers.Serializer):
    name = serializers.CharField()
    catalog_name = serializers.CharField(source="schema.catalog.name")
    schema_name = serializers.CharField(source="schema.name")
    full_name = serializers.CharField()
    id = serializers.CharField()
    storage_location = serializers.CharField()
    comment = serializers.CharField(allow_null=True)
    owner = serializers.CharField()
    created_at = EpochMillisField()
    created_by = serializers.CharField()
    updated_at = EpochMillisField(allow_null=True)
    updated_by = serializers.CharField(allow_null=True)


class CreateRegisteredModel(serializers.Serializer):
    name = serializers.CharField()
    catalog_name = serializers.CharField()
    schema_name = serializers.CharField()
    comment = serializers.CharField(required=False)


class UpdateRegisteredModel(serializers.Serializer):
    comment = serializers.CharField(required=False)
    new_name = serializers.CharField(required=False)
    owner = serializers.CharField(required=False)


class ListRegisteredModelsResponse(serializers.Serializer):
    registered_models = RegisteredModelInfo(many=True)
    next_page_token = serializers.CharField(required=False)


class ModelVersionInfo(serializers.Serializer):
    model_name = serializers.CharField(source="model.name")
    catalog_name = serializers.CharField(source="model.schema.catalog.name")
    schema_name = serializers.CharField(source="model.schema.name")
    version = serializers.IntegerField()
    source = serializers.CharField()
    run_id = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=ModelVersionStatus.choices)
    storage_location = serializers.CharField()
    comment = serializers.CharField(allow_null=True)
    id = serializers.CharField()
    created_at = EpochMillisField()
    created_by = serializers.CharField()
    updated_at = EpochMillisField(allow_null=True)
    updated_by = serializers.CharField(allow_null=True)


class CreateModelVersion(serializers.Serializer):
    model_name = serializers.CharField()
    catalog_name = serializers.CharField()
    schema_name = serializers.CharField()
    source = serializers.CharField()
    run_id = serializers.CharField(required=False)
    comment = serializers.CharField(required=False)


class UpdateModelVersion(serializers.Serializer):
    comment = serializers.CharField(required=False)


class FinalizeModelVersion(serializers.Serializer):
    full_name = serializers.CharField()
    version = serializers.IntegerField()


class ListModelVersionsResponse(serializers.Serializer):
    model_versions = ModelVersionInfo(many=True)
    next_page_token = serializers.CharField(required=False)


class AwsIamRoleInfo(serializers.Serializer):
    role_arn = serializers.CharField(source="aws_role_arn")
    unity_catalog_iam_arn = serializers.SerializerMethodField()
    external_id = serializers.CharField(source="aws_external_id", allow_null=True)

    def get_unity_catalog_iam_arn(self, credential) -> str | None:
        return settings.UCWEB_IAM_ARN


class AwsStaticKeysInfo(serializers.Serializer):
    access_key_id = serializers.CharField(source="aws_access_key_id")


class CredentialInfo(serializers.Serializer):
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
    comment = serializers.CharField(allow_null=True)
    owner = serializers.CharField()
    created_at = EpochMillisField()
    created_by = serializers.CharField()
    updated_at = EpochMillisField(allow_null=True)
    updated_by = serializers.CharField(allow_null=True)

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


class ExternalLocationInfo(serializers.Serializer):
    name = serializers.CharField()
    id = serializers.CharField()
    url = serializers.CharField()
    credential_name = serializers.CharField(source="credential.name")
    credential_id = serializers.CharField(source="credential.id")
    comment = serializers.CharField(allow_null=True)
    owner = serializers.CharField()
    created_at = EpochMillisField()
    created_by = serializers.CharField()
    updated_at = EpochMillisField(allow_null=True)
    updated_by = serializers.CharField(allow_null=True)


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


class Empty(serializers.Serializer):
    pass


CATALOG_AND_SCHEMA = [
    OpenApiParameter("catalog_name", str, required=True),
    OpenApiParameter("schema_name", str, required=True),
]


def _fields(body: dict, names) -> dict:
    return {key: body[key] for key in names if key in body}


def _query(request, name):
    return request.query_params.get(name)


# == volumes =======================================================================================
class VolumesView(CatalogAPIView):
    audit_securable_type = "volume"

    @extend_schema(operation_id="listVolumes", tags=["Volumes"], parameters=[*CATALOG_AND_SCHEMA, *PAGE_PARAMETERS],
                   responses=ListVolumesResponse)
    def get(self, request):
        queryset = volumes.visible_volumes(
            caller=request.user, catalog_name=_required_query(request, "catalog_name"),
            schema_name=_required_query(request, "schema_name"),
        )
        items, token = selectors.paginate(queryset, max_results=_query(request, "max_results"),
                                          page_token=_query(request, "page_token"), ceiling=10000)
        return Response(page(items, token, "volumes", VolumeInfo))

    @extend_schema(operation_id="createVolume", tags=["Volumes"], request=CreateVolume, responses=VolumeInfo)
    def post(self, request):
        body = self.body(request)
        volume = volumes.create_volume(
            caller=request.user, name=body.get("name"), catalog_name=body.get("catalog_name"),
            schema_name=body.get("schema_name"), volume_type=body.get("volume_type"),
            comment=body.get("comment"), storage_location=body.get("storage_location"),
        )
        return Response(VolumeInfo(volume).data)


class VolumeView(CatalogAPIView):
    audit_securable_type = "volume"

    @extend_schema(operation_id="getVolume", tags=["Volumes"], responses=VolumeInfo)
    def get(self, request, name):
        return Response(VolumeInfo(volumes.get_volume(caller=request.user, full_name=name)).data)

    @extend_schema(operation_id="updateVolume", tags=["Volumes"], request=UpdateVolume, responses=VolumeInfo)
    def patch(self, request, name):
        fields = _fields(self.body(request), ("comment", "new_name", "owner"))
        return Response(VolumeInfo(volumes.update_volume(caller=request.user, full_name=name, fields=fields)).data)

    @extend_schema(operation_id="deleteVolume", tags=["Volumes"], responses=Empty)
    def delete(self, request, name):
        volumes.delete_volume(caller=request.user, full_name=name)
        return Response({})


# == functions =====================================================================================
class FunctionsView(CatalogAPIView):
    audit_securable_type = "function"

    @extend_schema(operation_id="listFunctions", tags=["Functions"],
                   parameters=[*CATALOG_AND_SCHEMA, *PAGE_PARAMETERS], responses=ListFunctionsResponse)
    def get(self, request):
        queryset = functions.visible_functions(
            caller=request.user, catalog_name=_required_query(request, "catalog_name"),
            schema_name=_required_query(request, "schema_name"),
        )
        items, token = selectors.paginate(queryset, max_results=_query(request, "max_results"),
                                          page_token=_query(request, "page_token"), ceiling=1000)
        return Response(page(items, token, "functions", FunctionInfo))

    @extend_schema(operation_id="createFunction", tags=["Functions"], request=CreateFunctionRequest,
                   responses=FunctionInfo)
    def post(self, request):
        body = self.body(request)
        function = functions.create_function(caller=request.user, function_info=body.get("function_info"))
        return Response(FunctionInfo(function).data)


class FunctionView(CatalogAPIView):
    audit_securable_type = "function"

    @extend_schema(operation_id="getFunction", tags=["Functions"], responses=FunctionInfo)
    def get(self, request, name):
        return Response(FunctionInfo(functions.get_function(caller=request.user, full_name=name)).data)

    @extend_schema(operation_id="deleteFunction", tags=["Functions"], responses=Empty)
    def delete(self, request, name):
        functions.delete_function(caller=request.user, full_name=name)
        return Response({})


# == registered models and versions ================================================================
class RegisteredModelsView(CatalogAPIView):
    audit_securable_type = "registered_model"

    @extend_schema(
        operation_id="listRegisteredModels", tags=["RegisteredModels"], responses=ListRegisteredModelsResponse,
        parameters=[
            OpenApiParameter("catalog_name", str, description="With schema_name: the models of one schema."),
            OpenApiParameter("schema_name", str),
            *PAGE_PARAMETERS,
        ],
    )
    def get(self, request):
        queryset = registered_models.visible_models(
            caller=request.user, catalog_name=_query(request, "catalog_name"),
            schema_name=_query(request, "schema_name"),
        )
        items, token = registered_models.paginate_models(
            queryset, max_results=_query(request, "max_results"), page_token=_query(request, "page_token"))
        return Response(page(items, token, "registered_models", RegisteredModelInfo))

    @extend_schema(operation_id="createRegisteredModel", tags=["RegisteredModels"], request=CreateRegisteredModel,
                   responses=RegisteredModelInfo)
    def post(self, request):
        body = self.body(request)
        model = registered_models.create_model(
            caller=request.user, name=body.get("name"), catalog_name=body.get("catalog_name"),
            schema_name=body.get("schema_name"), comment=body.get("comment"),
        )
        return Response(RegisteredModelInfo(model).data)


class RegisteredModelView(CatalogAPIView):
    audit_securable_type = "registered_model"

    @extend_schema(operation_id="getRegisteredModel", tags=["RegisteredModels"], responses=RegisteredModelInfo)
    def get(self, request, full_name):
        return Response(RegisteredModelInfo(registered_models.get_model(caller=request.user, full_name=full_name)).data)

    @extend_schema(operation_id="updateRegisteredModel", tags=["RegisteredModels"], request=UpdateRegisteredModel,
                   responses=RegisteredModelInfo)
    def patch(self, request, full_name):
        fields = _fields(self.body(request), ("comment", "new_name", "owner"))
        model = registered_models.update_model(caller=request.user, full_name=full_name, fields=fields)
        return Response(RegisteredModelInfo(model).data)

    @extend_schema(operation_id="deleteRegisteredModel", tags=["RegisteredModels"], parameters=[FORCE],
                   responses=Empty)
    def delete(self, request, full_name):
        force = validate_optional_bool(_query(request, "force"), field="force")
        registered_models.delete_model(caller=request.user, full_name=full_name, force=force)
        return Response({})


class ModelVersionsCreateView(CatalogAPIView):
    """POST /models/versions creates a version (the path is routed before /models/{full_name}; no
    model has the one-part name "versions", so nothing else is hidden by it)."""

    audit_securable_type = "registered_model"

    @extend_schema(operation_id="createModelVersion", tags=["ModelVersions"], request=CreateModelVersion,
                   responses=ModelVersionInfo)
    def post(self, request):
        body = self.body(request)
        version = registered_models.create_version(
            caller=request.user, model_name=body.get("model_name"), catalog_name=body.get("catalog_name"),
            schema_name=body.get("schema_name"), source=body.get("source"), run_id=body.get("run_id"),
            comment=body.get("comment"),
        )
        return Response(ModelVersionInfo(version).data)


class ModelVersionsView(CatalogAPIView):
    audit_securable_type = "registered_model"

    @extend_schema(operation_id="listModelVersions", tags=["ModelVersions"], parameters=PAGE_PARAMETERS,
                   responses=ListModelVersionsResponse)
    def get(self, request, full_name):
        queryset = registered_models.visible_versions(caller=request.user, full_name=full_name)
        items, token = asset_selectors.paginate_versions(
            queryset, max_results=_query(request, "max_results"), page_token=_query(request, "page_token"))
        return Response(page(items, token, "model_versions", ModelVersionInfo))


class ModelVersionView(CatalogAPIView):
    audit_securable_type = "registered_model"

    @extend_schema(operation_id="getModelVersion", tags=["ModelVersions"], responses=ModelVersionInfo,
                   parameters=[OpenApiParameter("version", OpenApiTypes.INT64, OpenApiParameter.PATH)])
    def get(self, request, full_name, version):
        row = registered_models.get_version(caller=request.user, full_name=full_name, version=version)
        return Response(ModelVersionInfo(row).data)

    @extend_schema(operation_id="updateModelVersion", tags=["ModelVersions"], request=UpdateModelVersion,
                   responses=ModelVersionInfo,
                   parameters=[OpenApiParameter("version", OpenApiTypes.INT64, OpenApiParameter.PATH)])
    def patch(self, request, full_name, version):
        fields = _fields(self.body(request), ("comment",))
        row = registered_models.update_version(caller=request.user, full_name=full_name, version=version,
                                               fields=fields)
        return Response(ModelVersionInfo(row).data)

    @extend_schema(operation_id="deleteModelVersion", tags=["ModelVersions"], responses=Empty,
                   parameters=[OpenApiParameter("version", OpenApiTypes.INT64, OpenApiParameter.PATH)])
    def delete(self, request, full_name, version):
        registered_models.delete_version(caller=request.user, full_name=full_name, version=version)
        return Response({})


class FinalizeModelVersionView(CatalogAPIView):
    audit_securable_type = "registered_model"

    @extend_schema(operation_id="finalizeModelVersion", tags=["ModelVersions"], request=FinalizeModelVersion,
                   responses=ModelVersionInfo,
                   parameters=[OpenApiParameter("version", OpenApiTypes.INT64, OpenApiParameter.PATH)])
    def patch(self, request, full_name, version):
        row = registered_models.finalize_version(caller=request.user, full_name=full_name, version=version,
                                                 body=self.body(request))
        return Response(ModelVersionInfo(row).data)


# == credentials and external locations ===========================================================
CREDENTIAL_UPDATE_FIELDS = ("comment", "owner", "new_name", "aws_iam_role", "aws_static_keys", "endpoint_url",
                            "region")


class CredentialsView(CatalogAPIView):
    audit_securable_type = "credential"

    @extend_schema(
        operation_id="listCredentials", tags=["Credentials"], responses=ListCredentialsResponse,
        parameters=[*PAGE_PARAMETERS, OpenApiParameter("purpose", str, enum=CredentialPurpose.values)],
    )
    def get(self, request):
        queryset = credentials.visible_credentials(caller=request.user, purpose=_query(request, "purpose"))
        items, token = selectors.paginate(queryset, max_results=_query(request, "max_results"),
                                          page_token=_query(request, "page_token"))
        return Response(page(items, token, "credentials", CredentialInfo))

    @extend_schema(operation_id="createCredential", tags=["Credentials"], request=CreateCredentialRequest,
                   responses=CredentialInfo)
    def post(self, request):
        body = self.body(request)
        credential = credentials.create_credential(
            caller=request.user, name=body.get("name"), purpose=body.get("purpose"), comment=body.get("comment"),
            aws_iam_role=body.get("aws_iam_role"), aws_static_keys=body.get("aws_static_keys"),
            endpoint_url=body.get("endpoint_url"), region=body.get("region"),
        )
        return Response(CredentialInfo(credential).data)


class CredentialView(CatalogAPIView):
    audit_securable_type = "credential"

    @extend_schema(operation_id="getCredential", tags=["Credentials"], responses=CredentialInfo)
    def get(self, request, name):
        return Response(CredentialInfo(credentials.get_credential(caller=request.user, name=name)).data)

    @extend_schema(operation_id="updateCredential", tags=["Credentials"], request=UpdateCredentialRequest,
                   responses=CredentialInfo)
    def patch(self, request, name):
        fields = _fields(self.body(request), CREDENTIAL_UPDATE_FIELDS)
        credential = credentials.update_credential(caller=request.user, name=name, fields=fields)
        return Response(CredentialInfo(credential).data)

    @extend_schema(operation_id="deleteCredential", tags=["Credentials"], parameters=[FORCE], responses=Empty)
    def delete(self, request, name):
        force = validate_optional_bool(_query(request, "force"), field="force")
        credentials.delete_credential(caller=request.user, name=name, force=force)
        return Response({})


class ExternalLocationsView(CatalogAPIView):
    audit_securable_type = "external_location"

    @extend_schema(operation_id="listExternalLocations", tags=["External Locations"], parameters=PAGE_PARAMETERS,
                   responses=ListExternalLocationsResponse)
    def get(self, request):
        queryset = external_locations.visible_external_locations(caller=request.user)
        items, token = selectors.paginate(queryset, max_results=_query(request, "max_results"),
                                          page_token=_query(request, "page_token"))
        return Response(page(items, token, "external_locations", ExternalLocationInfo))

    @extend_schema(operation_id="createExternalLocation", tags=["External Locations"],
                   request=CreateExternalLocation, responses=ExternalLocationInfo)
    def post(self, request):
        body = self.body(request)
        location = external_locations.create_external_location(
            caller=request.user, name=body.get("name"), url=body.get("url"),
            credential_name=body.get("credential_name"), comment=body.get("comment"),
        )
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
        fields = _fields(self.body(request), ("url", "credential_name", "comment", "owner", "new_name"))
        location = external_locations.update_external_location(caller=request.user, name=name, fields=fields)
        return Response(ExternalLocationInfo(location).data)

    @extend_schema(operation_id="deleteExternalLocation", tags=["External Locations"], parameters=[FORCE],
                   responses=Empty)
    def delete(self, request, name):
        force = validate_optional_bool(_query(request, "force"), field="force")
        external_locations.delete_external_location(caller=request.user, name=name, force=force)
        return Response({})


# == temporary credentials =========================================================================
class TemporaryTableCredentialsView(CatalogAPIView):
    audit_securable_type = "table"

    @extend_schema(operation_id="generateTemporaryTableCredentials", tags=["TemporaryCredentials"],
                   request=GenerateTemporaryTableCredential, responses=TemporaryCredentials)
    def post(self, request):
        body = self.body(request)
        return Response(temporary_credentials.for_table(
            caller=request.user, table_id=body.get("table_id"), operation=body.get("operation")))


class TemporaryVolumeCredentialsView(CatalogAPIView):
    audit_securable_type = "volume"

    @extend_schema(operation_id="generateTemporaryVolumeCredentials", tags=["TemporaryCredentials"],
                   request=GenerateTemporaryVolumeCredential, responses=TemporaryCredentials)
    def post(self, request):
        body = self.body(request)
        return Response(temporary_credentials.for_volume(
            caller=request.user, volume_id=body.get("volume_id"), operation=body.get("operation")))


class TemporaryPathCredentialsView(CatalogAPIView):
    audit_securable_type = "external_location"

    @extend_schema(operation_id="generateTemporaryPathCredentials", tags=["TemporaryCredentials"],
                   request=GenerateTemporaryPathCredential, responses=TemporaryCredentials)
    def post(self, request):
        body = self.body(request)
        return Response(temporary_credentials.for_path(
            caller=request.user, url=body.get("url"), operation=body.get("operation")))


class TemporaryModelVersionCredentialsView(CatalogAPIView):
    audit_securable_type = "registered_model"

    @extend_schema(operation_id="generateTemporaryModelVersionCredentials", tags=["TemporaryCredentials"],
                   request=GenerateTemporaryModelVersionCredential, responses=TemporaryCredentials)
    def post(self, request):
        body = self.body(request)
        return Response(temporary_credentials.for_model_version(
            caller=request.user, catalog_name=body.get("catalog_name"), schema_name=body.get("schema_name"),
            model_name=body.get("model_name"), version=body.get("version"), operation=body.get("operation")))
