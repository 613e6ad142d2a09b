"""Unity Catalog API: functions (SQL and external routines registered in a schema)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from catalog.api.uc.resources import CATALOG_AND_SCHEMA, Resource, views
from catalog.api.uc.serializers import OwnedInfo
from catalog.choices import ColumnTypeName, FunctionParameterMode, FunctionParameterType, RoutineBody, SqlDataAccess
from catalog.services import functions


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


# What the function returns and how it runs, declared once for its create request and its info
# (which the spec gives the same fields). A comment, not a docstring: a docstring would become
# the description of both components in the OpenAPI document.
class FunctionRoutine(serializers.Serializer):
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


class FunctionInfo(OwnedInfo, FunctionRoutine):
    name = serializers.CharField()
    catalog_name = serializers.CharField(source="schema.catalog.name")
    schema_name = serializers.CharField(source="schema.uc_name")
    full_name = serializers.CharField()
    function_id = serializers.CharField(source="id")
    input_params = ParametersField()
    return_params = ParametersField(allow_null=True)
    external_language = serializers.CharField(allow_null=True)
    properties = serializers.CharField(source="properties_text", allow_null=True)


class CreateFunctionBody(FunctionRoutine):
    name = serializers.CharField()
    catalog_name = serializers.CharField()
    schema_name = serializers.CharField()
    input_params = FunctionParameterInfos()
    return_params = FunctionParameterInfos(required=False)
    routine_dependencies = serializers.JSONField(required=False)  # a request may leave it out
    comment = serializers.CharField(required=False)
    properties = serializers.CharField(required=False)
    external_language = serializers.CharField(required=False)


class CreateFunctionRequest(serializers.Serializer):
    function_info = CreateFunctionBody()


# Functions are immutable once created: no PATCH.
FunctionsView, FunctionView = views(Resource(
    noun="Function", tag="Functions", info_type=FunctionInfo, visible=functions.visible_functions,
    filters=CATALOG_AND_SCHEMA, create=functions.create_function, create_request=CreateFunctionRequest,
    get=functions.get_function, delete=functions.delete_function,
), module=__name__)
