"""Unity Catalog API: registered models and their versions (the MLflow registry's)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from catalog import pagination
from catalog.api.base import CatalogAPIView
from catalog.api.uc.resources import PAGE_PARAMETERS, Resource, listed, page_response, views
from catalog.api.uc.serializers import Empty, EpochMillisField, OwnedInfo, UpdateOwned, arguments, changes
from catalog.choices import AuditAction, ModelVersionStatus
from catalog.services import registered_models


class RegisteredModelInfo(OwnedInfo):
    name = serializers.CharField()
    catalog_name = serializers.CharField(source="schema.catalog.name")
    schema_name = serializers.CharField(source="schema.uc_name")
    full_name = serializers.CharField()
    id = serializers.CharField()
    storage_location = serializers.CharField()


class CreateRegisteredModel(serializers.Serializer):
    name = serializers.CharField()
    catalog_name = serializers.CharField()
    schema_name = serializers.CharField()
    comment = serializers.CharField(required=False)


class UpdateRegisteredModel(UpdateOwned):
    pass


class ModelVersionInfo(serializers.Serializer):
    model_name = serializers.CharField(source="model.name")
    catalog_name = serializers.CharField(source="model.schema.catalog.name")
    schema_name = serializers.CharField(source="model.schema.uc_name")
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


RegisteredModelsView, RegisteredModelView = views(Resource(
    noun="RegisteredModel", tag="RegisteredModels", info_type=RegisteredModelInfo,
    visible=registered_models.visible_models, paginate=registered_models.paginate_models, filters=(
        OpenApiParameter("catalog_name", str, description="With schema_name: the models of one schema."),
        OpenApiParameter("schema_name", str),
    ),
    create=registered_models.create_model, create_request=CreateRegisteredModel, get=registered_models.get_model,
    update=registered_models.update_model, update_request=UpdateRegisteredModel,
    delete=registered_models.delete_model, delete_takes_force=True,
), module=__name__)
VERSION = OpenApiParameter("version", OpenApiTypes.INT64, OpenApiParameter.PATH)


class ModelVersionsCreateView(CatalogAPIView):
    """POST /models/versions creates a version (the path is routed before /models/{full_name}; no
    model has the one-part name "versions", so nothing else is hidden by it)."""

    audit_securable_type = "registered_model"
    audit_actions = {"POST": AuditAction.CREATE_MODEL_VERSION}

    @extend_schema(operation_id="createModelVersion", tags=["ModelVersions"], request=CreateModelVersion,
                   responses=ModelVersionInfo)
    def post(self, request):
        version = registered_models.create_version(caller=request.user,
                                                   **arguments(self.body(request), CreateModelVersion))
        return Response(ModelVersionInfo(version).data)


class ModelVersionsView(CatalogAPIView):
    audit_securable_type = "registered_model"

    @extend_schema(operation_id="listModelVersions", tags=["ModelVersions"], parameters=PAGE_PARAMETERS,
                   responses=page_response("ModelVersions", "model_versions", ModelVersionInfo))
    def get(self, request, full_name):
        queryset = registered_models.visible_versions(caller=request.user, full_name=full_name)
        return listed(request, queryset, "model_versions", ModelVersionInfo, paginate=pagination.paginate_versions)


class ModelVersionView(CatalogAPIView):
    audit_securable_type = "registered_model"
    audit_actions = {"PATCH": AuditAction.UPDATE_MODEL_VERSION, "DELETE": AuditAction.DELETE_MODEL_VERSION}

    @extend_schema(operation_id="getModelVersion", tags=["ModelVersions"], responses=ModelVersionInfo, parameters=[VERSION])
    def get(self, request, full_name, version):
        row = registered_models.get_version(caller=request.user, full_name=full_name, version=version)
        return Response(ModelVersionInfo(row).data)

    @extend_schema(operation_id="updateModelVersion", tags=["ModelVersions"], request=UpdateModelVersion,
                   responses=ModelVersionInfo, parameters=[VERSION])
    def patch(self, request, full_name, version):
        fields = changes(self.body(request), UpdateModelVersion)
        row = registered_models.update_version(caller=request.user, full_name=full_name, version=version,
                                               fields=fields)
        return Response(ModelVersionInfo(row).data)

    @extend_schema(operation_id="deleteModelVersion", tags=["ModelVersions"], responses=Empty, parameters=[VERSION])
    def delete(self, request, full_name, version):
        registered_models.delete_version(caller=request.user, full_name=full_name, version=version)
        return Response({})


class FinalizeModelVersionView(CatalogAPIView):
    audit_securable_type = "registered_model"
    audit_actions = {"PATCH": AuditAction.FINALIZE_MODEL_VERSION}

    @extend_schema(operation_id="finalizeModelVersion", tags=["ModelVersions"], request=FinalizeModelVersion,
                   responses=ModelVersionInfo, parameters=[VERSION])
    def patch(self, request, full_name, version):
        row = registered_models.finalize_version(caller=request.user, full_name=full_name, version=version,
                                                 body=self.body(request))
        return Response(ModelVersionInfo(row).data)
