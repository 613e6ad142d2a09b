"""Functions, registered models and their versions, driven by the official `unitycatalog-client`
SDK against a live server: SQL, Python and table functions, versions from creation to
READY and their numbering under concurrency, who sees and may do what, and a schema dropped
with force taking its volumes, functions and models along."""

from __future__ import annotations

import json
import threading
import uuid

import pytest
from django.db import connection
from unitycatalog.client import (
    FunctionsApi,
    GrantsApi,
    ModelVersionsApi,
    RegisteredModelsApi,
    SchemasApi,
    TemporaryCredentialsApi,
    VolumesApi,
)
from unitycatalog.client.exceptions import (
    ApiException,
    BadRequestException,
    ForbiddenException,
    NotFoundException,
)
from unitycatalog.client.models import (
    ColumnTypeName,
    CreateFunction,
    CreateFunctionRequest,
    CreateModelVersion,
    CreateRegisteredModel,
    CreateVolumeRequestContent,
    Dependency,
    DependencyList,
    FinalizeModelVersion,
    FunctionParameterInfo,
    FunctionParameterInfos,
    FunctionParameterMode,
    FunctionParameterType,
    GenerateTemporaryModelVersionCredential,
    ModelVersionOperation,
    ModelVersionStatus,
    PermissionsChange,
    Privilege,
    SecurableType,
    TableDependency,
    UpdateModelVersion,
    UpdatePermissions,
    UpdateRegisteredModel,
    VolumeType,
)

from catalog.choices import ModelVersionStatus as Status
from catalog.models import Function, Grant, ModelVersion, RegisteredModel, Volume
from catalog.services import principals, registered_models
from maintenance.models import PurgeRequest
from tests.helpers import grant
from tests.uc_assets_support import assert_missing, use_schema
from tests.uc_assets_support import sdk  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)


# == functions =====================================================================================
def parameter(name, position, type_name=ColumnTypeName.INT, type_text="int", **extra):
    return FunctionParameterInfo(
        name=name, type_text=type_text, type_name=type_name, position=position,
        type_json=json.dumps({"name": name, "type": type_text, "nullable": True, "metadata": {}}), **extra)


def sql_function(name="add_tax", **overrides):
    fields = dict(
        name=name, catalog_name="shop", schema_name="sales",
        input_params=FunctionParameterInfos(parameters=[
            parameter("amount", 0, ColumnTypeName.DECIMAL, "decimal(10,2)", type_precision=10, type_scale=2,
                      parameter_mode=FunctionParameterMode.IN, parameter_type=FunctionParameterType.PARAM,
                      comment="net amount"),
            parameter("rate", 1, ColumnTypeName.DOUBLE, "double", parameter_default="0.2"),
            parameter("unit", 2, ColumnTypeName.INTERVAL, "interval day", type_interval_type="DAY"),
        ]),
        data_type=ColumnTypeName.DECIMAL, full_data_type="decimal(10,2)",
        routine_body="SQL", routine_definition="amount * (1 + rate)",
        routine_dependencies=DependencyList(dependencies=[
            Dependency(table=TableDependency(table_full_name="shop.sales.rates"))]),
        parameter_style="S", is_deterministic=True, sql_data_access="CONTAINS_SQL", is_null_call=False,
        security_type="DEFINER", specific_name=name, comment="gross amount",
        properties=json.dumps({"owner.team": "finance"}),
    )
    fields.update(overrides)
    return CreateFunctionRequest(function_info=CreateFunction(**fields))


def test_sql_and_python_functions(sdk):
    created = sdk.run(FunctionsApi, "admin", lambda api: api.create_function(sql_function()))
    assert created.full_name == "shop.sales.add_tax" and created.function_id
    params = created.input_params.parameters
    assert [p.name for p in params] == ["amount", "rate", "unit"]
    assert (params[0].type_precision, params[0].type_scale, params[0].comment) == (10, 2, "net amount")
    assert params[0].parameter_mode == FunctionParameterMode.IN
    assert params[0].parameter_type == FunctionParameterType.PARAM
    assert params[1].parameter_default == "0.2" and params[2].type_interval_type == "DAY"
    assert json.loads(params[0].type_json)["type"] == "decimal(10,2)"
    assert created.routine_dependencies.dependencies[0].table.table_full_name == "shop.sales.rates"
    assert (created.is_deterministic, created.is_null_call, created.sql_data_access) == (True, False, "CONTAINS_SQL")
    assert json.loads(created.properties) == {"owner.team": "finance"} and created.comment == "gross amount"
    assert created.return_params is None and created.specific_name == "add_tax"

    python = sdk.run(FunctionsApi, "admin", lambda api: api.create_function(sql_function(
        name="score", routine_body="EXTERNAL", external_language="PYTHON", sql_data_access="NO_SQL",
        routine_definition="return amount * 2", routine_dependencies=None,
        data_type=ColumnTypeName.DOUBLE, full_data_type="double",
        input_params=FunctionParameterInfos(parameters=[parameter("amount", 0, ColumnTypeName.DOUBLE, "double")]),
    )))
    assert python.routine_body == "EXTERNAL" and python.external_language == "PYTHON"

    table_function = sdk.run(FunctionsApi, "admin", lambda api: api.create_function(sql_function(
        name="explode_rates", data_type=ColumnTypeName.TABLE_TYPE, full_data_type="table<rate double>",
        routine_definition="SELECT rate FROM shop.sales.rates",
        return_params=FunctionParameterInfos(parameters=[
            parameter("rate", 0, ColumnTypeName.DOUBLE, "double", parameter_type=FunctionParameterType.COLUMN)]),
    )))
    assert table_function.return_params.parameters[0].parameter_type == FunctionParameterType.COLUMN

    listed = sdk.run(FunctionsApi, "admin", lambda api: api.list_functions(catalog_name="shop", schema_name="sales",
                                                                            max_results=2))
    assert [f.name for f in listed.functions] == ["add_tax", "explode_rates"] and listed.next_page_token
    rest = sdk.run(FunctionsApi, "admin", lambda api: api.list_functions(
        catalog_name="shop", schema_name="sales", page_token=listed.next_page_token))
    assert [f.name for f in rest.functions] == ["score"]

    with pytest.raises(ApiException) as duplicate:
        sdk.run(FunctionsApi, "admin", lambda api: api.create_function(sql_function()))
    assert duplicate.value.status == 409

    # EXECUTE lets bob read one function; he sees no other.
    use_schema(sdk, "bob")
    with pytest.raises(NotFoundException):
        sdk.run(FunctionsApi, "bob", lambda api: api.get_function("shop.sales.score"))
    grant("bob", SecurableType.FUNCTION, "shop.sales.score", Privilege.EXECUTE)
    assert sdk.run(FunctionsApi, "bob", lambda api: api.get_function("shop.sales.score")).name == "score"
    assert [f.name for f in sdk.run(FunctionsApi, "bob", lambda api: api.list_functions(
        catalog_name="shop", schema_name="sales")).functions] == ["score"]
    with pytest.raises(ForbiddenException):
        sdk.run(FunctionsApi, "bob", lambda api: api.delete_function("shop.sales.score"))

    sdk.run(FunctionsApi, "admin", lambda api: api.delete_function("shop.sales.score"))
    assert_missing(sdk, FunctionsApi, lambda api: api.get_function("shop.sales.score"), "FUNCTION_DOES_NOT_EXIST")
    assert not Grant.objects.filter(securable_type="function").exists()


# == registered models and versions ================================================================
def test_models_and_versions(sdk, storage_root):
    model = sdk.run(RegisteredModelsApi, "admin", lambda api: api.create_registered_model(CreateRegisteredModel(
        name="churn", catalog_name="shop", schema_name="sales", comment="churn model")))
    assert model.full_name == "shop.sales.churn" and model.storage_location == (
        f"{storage_root.as_uri()}/models/{model.id}")

    def new_version(source, model_name="churn"):
        return sdk.run(ModelVersionsApi, "admin", lambda api: api.create_model_version(CreateModelVersion(
            model_name=model_name, catalog_name="shop", schema_name="sales", source=source, run_id="run-1")))

    first = new_version("file:///tmp/mlruns/1")
    assert (first.version, first.status) == (1, ModelVersionStatus.PENDING_REGISTRATION)
    assert first.storage_location == f"{model.storage_location}/versions/1"
    second = new_version("file:///tmp/mlruns/2")
    assert second.version == 2

    write = sdk.run(TemporaryCredentialsApi, "admin", lambda api: api.generate_temporary_model_version_credentials(
        GenerateTemporaryModelVersionCredential(catalog_name="shop", schema_name="sales", model_name="churn",
                                                version=1, operation=ModelVersionOperation.READ_WRITE_MODEL_VERSION)))
    assert write.url == first.storage_location

    ready = sdk.run(ModelVersionsApi, "admin", lambda api: api.finalize_model_version(
        "shop.sales.churn", 1, FinalizeModelVersion(full_name="shop.sales.churn", version=1)))
    assert ready.status == ModelVersionStatus.READY
    with pytest.raises(BadRequestException) as again:
        sdk.run(ModelVersionsApi, "admin", lambda api: api.finalize_model_version(
            "shop.sales.churn", 1, FinalizeModelVersion(full_name="shop.sales.churn", version=1)))
    assert "PENDING_REGISTRATION" in again.value.body
    # A READY version is not written any more.
    with pytest.raises(BadRequestException):
        sdk.run(TemporaryCredentialsApi, "admin", lambda api: api.generate_temporary_model_version_credentials(
            GenerateTemporaryModelVersionCredential(
                catalog_name="shop", schema_name="sales", model_name="churn", version=1,
                operation=ModelVersionOperation.READ_WRITE_MODEL_VERSION)))
    ModelVersion.objects.filter(version=2).update(status=Status.FAILED_REGISTRATION)
    with pytest.raises(BadRequestException):
        sdk.run(ModelVersionsApi, "admin", lambda api: api.finalize_model_version(
            "shop.sales.churn", 2, FinalizeModelVersion(full_name="shop.sales.churn", version=2)))

    updated = sdk.run(ModelVersionsApi, "admin", lambda api: api.update_model_version(
        "shop.sales.churn", 1, UpdateModelVersion(comment="champion")))
    assert updated.comment == "champion" and updated.status == ModelVersionStatus.READY
    fetched = sdk.run(ModelVersionsApi, "admin", lambda api: api.get_model_version("shop.sales.churn", 1))
    assert (fetched.run_id, fetched.source) == ("run-1", "file:///tmp/mlruns/1")
    listed = sdk.run(ModelVersionsApi, "admin", lambda api: api.list_model_versions("shop.sales.churn", max_results=1))
    assert [v.version for v in listed.model_versions] == [1] and listed.next_page_token
    rest = sdk.run(ModelVersionsApi, "admin", lambda api: api.list_model_versions(
        "shop.sales.churn", page_token=listed.next_page_token))
    assert [v.version for v in rest.model_versions] == [2]

    renamed = sdk.run(RegisteredModelsApi, "admin", lambda api: api.update_registered_model(
        "shop.sales.churn", UpdateRegisteredModel(new_name="attrition", comment="renamed")))
    assert renamed.full_name == "shop.sales.attrition" and renamed.comment == "renamed"
    everything = sdk.run(RegisteredModelsApi, "admin", lambda api: api.list_registered_models())
    assert [m.full_name for m in everything.registered_models] == ["shop.sales.attrition"]

    with pytest.raises(BadRequestException):
        sdk.run(RegisteredModelsApi, "admin", lambda api: api.delete_registered_model("shop.sales.attrition"))
    sdk.run(ModelVersionsApi, "admin", lambda api: api.delete_model_version("shop.sales.attrition", 2))
    assert_missing(sdk, ModelVersionsApi, lambda api: api.get_model_version("shop.sales.attrition", 2),
                   "RESOURCE_DOES_NOT_EXIST")
    # A deleted version's number is not given again (its files may still be being purged).
    assert new_version("file:///tmp/mlruns/3", "attrition").version == 3
    sdk.run(RegisteredModelsApi, "admin", lambda api: api.delete_registered_model("shop.sales.attrition", force=True))
    assert not RegisteredModel.objects.exists() and not ModelVersion.objects.exists()
    assert PurgeRequest.objects.filter(url=model.storage_location).exists()


def test_model_privileges(sdk):
    sdk.run(RegisteredModelsApi, "admin", lambda api: api.create_registered_model(CreateRegisteredModel(
        name="churn", catalog_name="shop", schema_name="sales")))
    use_schema(sdk, "bob")
    with pytest.raises(NotFoundException):
        sdk.run(RegisteredModelsApi, "bob", lambda api: api.get_registered_model("shop.sales.churn"))
    assert sdk.run(RegisteredModelsApi, "bob", lambda api: api.list_registered_models()).registered_models == []
    grant("bob", SecurableType.REGISTERED_MODEL, "shop.sales.churn", Privilege.EXECUTE)
    assert sdk.run(RegisteredModelsApi, "bob", lambda api: api.get_registered_model("shop.sales.churn")).name == "churn"
    assert [m.name for m in sdk.run(RegisteredModelsApi, "bob", lambda api: api.list_registered_models(
        catalog_name="shop", schema_name="sales")).registered_models] == ["churn"]
    assert [m.name for m in sdk.run(RegisteredModelsApi, "bob",
                                    lambda api: api.list_registered_models()).registered_models] == ["churn"]
    version_body = CreateModelVersion(model_name="churn", catalog_name="shop", schema_name="sales", source="s")
    with pytest.raises(ForbiddenException):
        sdk.run(ModelVersionsApi, "bob", lambda api: api.create_model_version(version_body))
    grant("bob", SecurableType.SCHEMA, "shop.sales", Privilege.CREATE_MODEL)
    version = sdk.run(ModelVersionsApi, "bob", lambda api: api.create_model_version(version_body))
    assert version.created_by == "bob"
    with pytest.raises(ForbiddenException):
        sdk.run(ModelVersionsApi, "bob", lambda api: api.delete_model_version("shop.sales.churn", 1))
    # Without USE SCHEMA nothing inside is reachable, grants or not.
    sdk.run(GrantsApi, "admin", lambda api: api.update(SecurableType.SCHEMA, "shop.sales", UpdatePermissions(
        changes=[PermissionsChange(principal="bob", add=[], remove=[Privilege.USE_SCHEMA])])))
    with pytest.raises(NotFoundException):
        sdk.run(RegisteredModelsApi, "bob", lambda api: api.get_registered_model("shop.sales.churn"))
    assert sdk.run(RegisteredModelsApi, "bob", lambda api: api.list_registered_models()).registered_models == []


def test_concurrent_versions_are_numbered_without_gaps(bootstrap, storage_root):
    """Eight threads create versions of one model at once: they get 1..8, each once."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (set DATABASE_URL, as `make test` does)")
    admin = principals.ensure_principal(name="admin", admin=True)
    from catalog.services import catalogs, schemas

    catalogs.create_catalog(caller=admin, name="shop")
    schemas.create_schema(caller=admin, name="sales", catalog_name="shop")
    registered_models.create_model(caller=admin, name="churn", catalog_name="shop", schema_name="sales")
    barrier, numbers, errors = threading.Barrier(8), [], []

    def create():
        from django.db import connections

        try:
            barrier.wait()
            numbers.append(registered_models.create_version(
                caller=admin, model_name="churn", catalog_name="shop", schema_name="sales", source="s").version)
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sorted(numbers) == list(range(1, 9))


def test_schema_drop_takes_its_assets(sdk, storage_root):
    volume = sdk.run(VolumesApi, "admin", lambda api: api.create_volume(CreateVolumeRequestContent(
        catalog_name="shop", schema_name="sales", name="raw", volume_type=VolumeType.MANAGED)))
    sdk.run(FunctionsApi, "admin", lambda api: api.create_function(sql_function()))
    model = sdk.run(RegisteredModelsApi, "admin", lambda api: api.create_registered_model(CreateRegisteredModel(
        name="churn", catalog_name="shop", schema_name="sales")))
    grant("bob", SecurableType.VOLUME, "shop.sales.raw", Privilege.READ_VOLUME)
    sdk.run(SchemasApi, "admin", lambda api: api.delete_schema("shop.sales", force=True))
    assert not Volume.objects.exists() and not Function.objects.exists() and not RegisteredModel.objects.exists()
    assert not Grant.objects.filter(securable_id=uuid.UUID(volume.volume_id)).exists()
    assert {volume.storage_location, model.storage_location} <= set(PurgeRequest.objects.values_list("url", flat=True))
