"""Functions: SQL routines and external (for example Python) ones, immutable once created.

The request is checked field by field against CreateFunction and FunctionParameterInfo: an
EXTERNAL routine names its `external_language`, has no `return_params` and must be NO_SQL; a
table function (`data_type` TABLE_TYPE) describes its columns in `return_params` and nothing else
may. Creating needs CREATE FUNCTION on the schema, reading EXECUTE, deleting ownership.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from catalog import authz, resolve
from catalog.authz import Action
from catalog.choices import (
    ColumnTypeName,
    FunctionParameterMode,
    FunctionParameterType,
    FunctionSecurityType,
    ParameterStyle,
    RoutineBody,
    SecurableType,
    SqlDataAccess,
)
from catalog.models import Function, Principal
from catalog.services import recipes
from catalog.names import split_full_name, validate_name
from catalog.services.schema_assets import (
    reject_nul,
    schema_access,
    visible_in_schema,
    validate_long_comment,
    validate_optional_string,
    validate_required_string,
)
from ucweb.errors import AlreadyExists, InvalidParameter

INT32 = range(-(2**31), 2**31)
MAX_PARAMETERS = 1024
DEFAULT_DECIMAL_PRECISION, DEFAULT_DECIMAL_SCALE = 10, 0


def _properties_text(value):
    """FunctionInfo.properties is a JSON object serialized as a string. Clients that have none
    send the string "null" (the UC Python client does): that is no properties, as Unity Catalog
    OSS answers it."""
    value = validate_optional_string(value, field="properties")
    return None if value is not None and value.strip() in ("", "null") else value


def _choice(value, choices, *, field: str) -> str:
    if value not in choices.values:
        raise InvalidParameter(f"{field} must be one of {', '.join(choices.values)}.")
    return value


def _bool(value, *, field: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidParameter(f"{field} is required and must be true or false.")
    return value


def _int(value, *, field: str, minimum: int | None = None):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value not in INT32:
        raise InvalidParameter(f"{field} must be a 32-bit integer.")
    if minimum is not None and value < minimum:
        raise InvalidParameter(f"{field} must be at least {minimum}.")
    return value


def validate_parameters(value, *, field: str) -> list[dict]:
    """FunctionParameterInfos ({"parameters": [FunctionParameterInfo, ...]}) → clean parameter dicts."""
    if value is None:
        return []
    if not isinstance(value, dict):
        raise InvalidParameter(f"{field} must be an object with a parameters array.")
    parameters = value.get("parameters")
    if parameters is None:
        return []
    if not isinstance(parameters, list) or len(parameters) > MAX_PARAMETERS:
        raise InvalidParameter(f"{field}.parameters must be an array of at most {MAX_PARAMETERS} parameters.")
    clean = []
    for index, parameter in enumerate(parameters):
        where = f"{field}.parameters[{index}]"
        if not isinstance(parameter, dict):
            raise InvalidParameter(f"{where} must be an object.")
        item = {
            "name": validate_required_string(parameter.get("name"), field=f"{where}.name", max_length=255),
            "type_text": validate_required_string(parameter.get("type_text"), field=f"{where}.type_text"),
            "type_json": validate_required_string(parameter.get("type_json"), field=f"{where}.type_json"),
            "type_name": _choice(parameter.get("type_name"), ColumnTypeName, field=f"{where}.type_name"),
            "position": _int(parameter.get("position"), field=f"{where}.position", minimum=0),
            "type_precision": _int(parameter.get("type_precision"), field=f"{where}.type_precision", minimum=0),
            "type_scale": _int(parameter.get("type_scale"), field=f"{where}.type_scale", minimum=0),
            "type_interval_type": validate_optional_string(
                parameter.get("type_interval_type"), field=f"{where}.type_interval_type", max_length=255),
            "parameter_default": validate_optional_string(
                parameter.get("parameter_default"), field=f"{where}.parameter_default"),
            "comment": validate_optional_string(parameter.get("comment"), field=f"{where}.comment"),
        }
        if item["position"] is None:
            raise InvalidParameter(f"{where}.position is required.")
        mode, kind = parameter.get("parameter_mode"), parameter.get("parameter_type")
        item["parameter_mode"] = None if mode is None else _choice(mode, FunctionParameterMode,
                                                                    field=f"{where}.parameter_mode")
        item["parameter_type"] = None if kind is None else _choice(kind, FunctionParameterType,
                                                                    field=f"{where}.parameter_type")
        if item["type_name"] == ColumnTypeName.DECIMAL:
            # Spark's DECIMAL without precision and scale is decimal(10,0); Unity Catalog OSS
            # stores that default too.
            if item["type_precision"] is None:
                item["type_precision"] = DEFAULT_DECIMAL_PRECISION
                if item["type_scale"] is None:
                    item["type_scale"] = DEFAULT_DECIMAL_SCALE
            elif item["type_scale"] is None:
                item["type_scale"] = DEFAULT_DECIMAL_SCALE
            if item["type_scale"] > item["type_precision"]:
                raise InvalidParameter(f"{where}.type_scale must not exceed type_precision.")
        reject_nul(item, field=where)
        clean.append(item)
    names = [p["name"].lower() for p in clean]
    if len(set(names)) != len(names):
        raise InvalidParameter(f"{field}: parameter names must be unique.")
    positions = [p["position"] for p in clean]
    if len(set(positions)) != len(positions):
        raise InvalidParameter(f"{field}: parameter positions must be unique.")
    return sorted(clean, key=lambda p: p["position"])


def validate_dependencies(value):
    """DependencyList: {"dependencies": [{"table": {"table_full_name"}} | {"function": {...}}]}."""
    if value is None:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("dependencies", []), list):
        raise InvalidParameter("routine_dependencies must be an object with a dependencies array.")
    clean = []
    for index, dependency in enumerate(value.get("dependencies") or []):
        where = f"routine_dependencies.dependencies[{index}]"
        if not isinstance(dependency, dict):
            raise InvalidParameter(f"{where} must be an object.")
        kinds = [key for key in ("table", "function") if dependency.get(key) is not None]
        if len(kinds) != 1:
            raise InvalidParameter(f"{where} must name exactly one of table or function.")
        kind = kinds[0]
        target = dependency[kind]
        key = f"{kind}_full_name"
        if not isinstance(target, dict) or not isinstance(target.get(key), str):
            raise InvalidParameter(f"{where}.{kind}.{key} is required.")
        split_full_name(target[key], 3, what=kind)
        clean.append({kind: {key: target[key]}})
    return {"dependencies": clean}


def visible_functions(*, caller: Principal, catalog_name, schema_name):
    return visible_in_schema(Function.objects.all(), caller=caller, catalog_name=catalog_name, schema_name=schema_name)


def get_function(*, caller: Principal, full_name: str) -> Function:
    return recipes.readable(resolve.function, caller=caller, full_name=full_name)


@transaction.atomic
def create_function(*, caller: Principal, function_info) -> Function:
    if not isinstance(function_info, dict):
        raise InvalidParameter("function_info is required and must be a CreateFunction object.")
    info = function_info
    name = validate_name(info.get("name"))
    catalog_name = validate_name(info.get("catalog_name"), field="catalog_name")
    schema_name = validate_name(info.get("schema_name"), field="schema_name")
    if info.get("input_params") is None:
        raise InvalidParameter("input_params is required (use {\"parameters\": []} for none).")
    input_params = validate_parameters(info.get("input_params"), field="input_params")
    return_params = validate_parameters(info.get("return_params"), field="return_params")
    data_type = _choice(info.get("data_type"), ColumnTypeName, field="data_type")
    routine_body = _choice(info.get("routine_body"), RoutineBody, field="routine_body")
    fields = {
        "full_data_type": validate_required_string(info.get("full_data_type"), field="full_data_type"),
        "routine_definition": validate_optional_string(info.get("routine_definition"), field="routine_definition"),
        "parameter_style": _choice(info.get("parameter_style"), ParameterStyle, field="parameter_style"),
        "is_deterministic": _bool(info.get("is_deterministic"), field="is_deterministic"),
        "sql_data_access": _choice(info.get("sql_data_access"), SqlDataAccess, field="sql_data_access"),
        "is_null_call": _bool(info.get("is_null_call"), field="is_null_call"),
        "security_type": _choice(info.get("security_type"), FunctionSecurityType, field="security_type"),
        "specific_name": validate_required_string(info.get("specific_name"), field="specific_name"),
        "external_language": validate_optional_string(
            info.get("external_language"), field="external_language", max_length=255),
        "properties_text": _properties_text(info.get("properties")),
        "routine_dependencies": validate_dependencies(info.get("routine_dependencies")),
    }
    if fields["routine_definition"] is None:
        raise InvalidParameter("routine_definition is required and must be a string.")
    comment = validate_long_comment(info.get("comment"))
    if routine_body == RoutineBody.EXTERNAL:
        if not fields["external_language"]:
            raise InvalidParameter("An EXTERNAL function must name its external_language (for example PYTHON).")
        if return_params:
            raise InvalidParameter("An EXTERNAL function cannot have return_params (TABLE return types).")
        if fields["sql_data_access"] != SqlDataAccess.NO_SQL:
            raise InvalidParameter("An EXTERNAL function must have sql_data_access NO_SQL.")
    if data_type == ColumnTypeName.TABLE_TYPE and not return_params:
        raise InvalidParameter("A table function (data_type TABLE_TYPE) must describe its columns in return_params.")
    if data_type != ColumnTypeName.TABLE_TYPE and return_params:
        raise InvalidParameter("return_params describe the columns of a table function (data_type TABLE_TYPE).")
    reject_nul(fields, field="function_info")
    reject_nul(comment, field="comment")

    schema, access = schema_access(caller, catalog_name, schema_name)
    authz.require(caller, schema, Action.CREATE_FUNCTION, access=access)
    if Function.objects.filter(schema=schema, name=name).exists():
        raise AlreadyExists(f"Function '{schema.full_name}.{name}' already exists.")
    now = timezone.now()
    function = Function.objects.create(
        schema=schema, name=name, input_params=input_params, return_params=return_params or None,
        data_type=data_type, routine_body=routine_body, comment=comment, owner=caller.name,
        created_by=caller.name, updated_at=now, updated_by=caller.name, **fields,
    )
    return recipes.audited(function, caller=caller, action="createFunction", securable_type=SecurableType.FUNCTION,
                           details={"routine_body": routine_body, "external_language": fields["external_language"]})


@transaction.atomic
def delete_function(*, caller: Principal, full_name: str) -> None:
    function, access = resolve.function(caller, full_name, for_update=True)
    with recipes.dropping(function, caller=caller, access=access, securable_type=SecurableType.FUNCTION):
        function.delete()
