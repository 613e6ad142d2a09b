"""Unity Catalog API: registered models and their versions (the MLflow registry's)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from catalog import pagination
from catalog.api.base import CatalogAPIView
from catalog.api.uc.assets.common import query
from catalog.api.uc.serializers import Empty, EpochMillisField, OwnedInfo, arguments, changes
from catalog.api.uc.views import FORCE, PAGE_PARAMETERS, page
from catalog.choices import ModelVersionStatus
from catalog.services import registered_models
from catalog.services.common import validate_optional_bool


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


class ListModelVersionsResponse(serializers.Serializer):
    model_versions = ModelVersionInfo(many=True)
    next_page_token = serializers.CharField(required=False)


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
            caller=request.user, catalog_name=query(request, "catalog_name"),
            schema_name=query(request, "schema_name"),
        )
        items, token = registered_models.paginate_models(
            queryset, max_results=query(request, "max_results"), page_token=query(request, "page_token"))
        return Response(page(items, token, "registered_models", RegisteredModelInfo))

    @extend_schema(operation_id="createRegisteredModel", tags=["RegisteredModels"], request=CreateRegisteredModel,
                   responses=RegisteredModelInfo)
    def post(self, request):
        model = registered_models.create_model(caller=request.user,
                                               **arguments(self.body(request), CreateRegisteredModel))
        return Response(RegisteredModelInfo(model).data)


class RegisteredModelView(CatalogAPIView):
    audit_securable_type = "registered_model"

    @extend_schema(operation_id="getRegisteredModel", tags=["RegisteredModels"], responses=RegisteredModelInfo)
    def get(self, request, full_name):
        return Response(RegisteredModelInfo(registered_models.get_model(caller=request.user, full_name=full_name)).data)

    @extend_schema(operation_id="updateRegisteredModel", tags=["RegisteredModels"], request=UpdateRegisteredModel,
                   responses=RegisteredModelInfo)
    def patch(self, request, full_name):
        fields = changes(self.body(request), UpdateRegisteredModel)
        model = registered_models.update_model(caller=request.user, full_name=full_name, fields=fields)
        return Response(RegisteredModelInfo(model).data)

    @extend_schema(operation_id="deleteRegisteredModel", tags=["RegisteredModels"], parameters=[FORCE],
                   responses=Empty)
    def delete(self, request, full_name):
        force = validate_optional_bool(query(request, "force"), field="force")
        registered_models.delete_model(caller=request.user, full_name=full_name, force=force)
        return Response({})


class ModelVersionsCreateView(CatalogAPIView):
    """POST /models/versions creates a version (the path is routed before /models/{full_name}; no
    model has the one-part name "versions", so nothing else is hidden by it)."""

    audit_securable_type = "registered_model"

    @extend_schema(operation_id="createModelVersion", tags=["ModelVersions"], request=CreateModelVersion,
                   responses=ModelVersionInfo)
    def post(self, request):
        version = registered_models.create_version(caller=request.user,
                                                   **arguments(self.body(request), CreateModelVersion))
        return Response(ModelVersionInfo(version).data)


class ModelVersionsView(CatalogAPIView):
    audit_securable_type = "registered_model"

    @extend_schema(operation_id="listModelVersions", tags=["ModelVersions"], parameters=PAGE_PARAMETERS,
                   responses=ListModelVersionsResponse)
    def get(self, request, full_name):
        queryset = registered_models.visible_versions(caller=request.user, full_name=full_name)
        items, token = pagination.paginate_versions(
            queryset, max_results=query(request, "max_results"), page_token=query(request, "page_token"))
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
        fields = changes(self.body(request), UpdateModelVersion)
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
