"""Volumes, functions, registered models and versions, credentials, external locations, grants
and (file://) temporary credentials, driven by the official `unitycatalog-client` SDK against a
live server; bad input to each of those endpoints; the rules of the services underneath."""

from __future__ import annotations

import json
import threading
import uuid

import pytest
from django.db import connection
from unitycatalog.client import (
    CredentialsApi,
    ExternalLocationsApi,
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
    AwsIamRoleRequest,
    ColumnTypeName,
    CreateCredentialRequest,
    CreateExternalLocation,
    CreateFunction,
    CreateFunctionRequest,
    CreateModelVersion,
    CreateRegisteredModel,
    CreateSchema,
    CreateVolumeRequestContent,
    CredentialPurpose,
    Dependency,
    DependencyList,
    FinalizeModelVersion,
    FunctionParameterInfo,
    FunctionParameterInfos,
    FunctionParameterMode,
    FunctionParameterType,
    GenerateTemporaryModelVersionCredential,
    GenerateTemporaryPathCredential,
    GenerateTemporaryVolumeCredential,
    ModelVersionOperation,
    ModelVersionStatus,
    PathOperation,
    PermissionsChange,
    Privilege,
    SecurableType,
    TableDependency,
    UpdateCredentialRequest,
    UpdateExternalLocation,
    UpdateModelVersion,
    UpdatePermissions,
    UpdateRegisteredModel,
    UpdateVolumeRequestContent,
    VolumeOperation,
    VolumeType,
)

from catalog.choices import ModelVersionStatus as Status
from catalog.choices import Privilege as P
from catalog.models import (
    AuditEvent,
    Credential,
    ExternalLocation,
    Function,
    Grant,
    ModelVersion,
    Principal,
    RegisteredModel,
    Volume,
)
from catalog import locations
from catalog.services import principals, registered_models, secrets
from maintenance.models import PurgeRequest
from ucweb.errors import InvalidParameter, PermissionDenied
from tests.helpers import UC, grant, rows

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(bootstrap, uc_sdk, storage_root):
    """The SDK runner, with catalog shop and schema shop.sales created by the admin."""
    from unitycatalog.client import CatalogsApi
    from unitycatalog.client.models import CreateCatalog

    uc_sdk.run(CatalogsApi, "admin", lambda api: api.create_catalog(CreateCatalog(name="shop")))
    uc_sdk.run(SchemasApi, "admin", lambda api: api.create_schema(CreateSchema(name="sales", catalog_name="shop")))
    return uc_sdk


def assert_missing(sdk, api_class, read, error_code: str) -> None:
    """`read` (a call of `api_class` as the admin) finds nothing: a 404 with `error_code`."""
    with pytest.raises(NotFoundException) as gone:
        sdk.run(api_class, "admin", read)
    assert error_code in gone.value.body


@pytest.fixture
def external_root(tmp_path):
    """A folder outside managed storage for external locations."""
    root = tmp_path / "external"
    root.mkdir()
    return root


def use_schema(sdk, principal, *extra):
    grant(principal, SecurableType.CATALOG, "shop", Privilege.USE_CATALOG)
    grant(principal, SecurableType.SCHEMA, "shop.sales", Privilege.USE_SCHEMA, *extra)


def make_location(sdk, root, name="landing", credential="files"):
    existing = {c.name for c in sdk.run(CredentialsApi, "admin", lambda api: api.list_credentials()).credentials}
    if credential not in existing:
        sdk.run(CredentialsApi, "admin", lambda api: api.create_credential(CreateCredentialRequest(
            name=credential, aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::123456789012:role/files"))))
    return sdk.run(ExternalLocationsApi, "admin", lambda api: api.create_external_location(
        CreateExternalLocation(name=name, url=root.as_uri(), credential_name=credential)))


# == volumes =======================================================================================
def test_managed_volume_lifecycle(sdk, storage_root):
    created = sdk.run(VolumesApi, "admin", lambda api: api.create_volume(CreateVolumeRequestContent(
        catalog_name="shop", schema_name="sales", name="raw", volume_type=VolumeType.MANAGED, comment="landing")))
    assert created.full_name == "shop.sales.raw" and created.volume_type == VolumeType.MANAGED
    assert created.storage_location == f"{storage_root.as_uri()}/volumes/{created.volume_id}"
    assert created.owner == "admin" and created.created_at > 0 and created.updated_at >= created.created_at

    fetched = sdk.run(VolumesApi, "admin", lambda api: api.get_volume("shop.sales.raw"))
    assert fetched.volume_id == created.volume_id and fetched.comment == "landing"

    renamed = sdk.run(VolumesApi, "admin", lambda api: api.update_volume(
        "shop.sales.raw", UpdateVolumeRequestContent(new_name="bronze", comment="renamed")))
    assert renamed.full_name == "shop.sales.bronze" and renamed.comment == "renamed"
    assert_missing(sdk, VolumesApi, lambda api: api.get_volume("shop.sales.raw"), "VOLUME_DOES_NOT_EXIST")

    with pytest.raises(ApiException) as duplicate:
        sdk.run(VolumesApi, "admin", lambda api: api.create_volume(CreateVolumeRequestContent(
            catalog_name="shop", schema_name="sales", name="bronze", volume_type=VolumeType.MANAGED)))
    assert duplicate.value.status == 409 and "ALREADY_EXISTS" in duplicate.value.body

    credentials = sdk.run(TemporaryCredentialsApi, "admin", lambda api: api.generate_temporary_volume_credentials(
        GenerateTemporaryVolumeCredential(volume_id=created.volume_id, operation=VolumeOperation.WRITE_VOLUME)))
    assert credentials.url == created.storage_location and credentials.aws_temp_credentials is None
    assert credentials.expiration_time > 0

    sdk.run(VolumesApi, "admin", lambda api: api.delete_volume("shop.sales.bronze"))
    assert not Volume.objects.exists()
    purge = PurgeRequest.objects.get(url=created.storage_location)
    assert purge.done_at is not None  # Celery runs eagerly in tests
    assert AuditEvent.objects.filter(action="deleteVolume", securable_name="shop.sales.bronze").exists()


def test_volume_pagination_and_visibility(sdk):
    for index in range(5):
        sdk.run(VolumesApi, "admin", lambda api, i=index: api.create_volume(CreateVolumeRequestContent(
            catalog_name="shop", schema_name="sales", name=f"v{i}", volume_type=VolumeType.MANAGED)))
    seen, token = [], None
    while True:
        page = sdk.run(VolumesApi, "admin", lambda api: api.list_volumes(
            catalog_name="shop", schema_name="sales", max_results=2, page_token=token))
        assert len(page.volumes) <= 2
        seen += [v.name for v in page.volumes]
        token = page.next_page_token
        if not token:
            break
    assert seen == [f"v{i}" for i in range(5)]

    # What bob may not see does not exist for him (no existence oracle).
    with pytest.raises(NotFoundException):
        sdk.run(VolumesApi, "bob", lambda api: api.list_volumes(catalog_name="shop", schema_name="sales"))
    use_schema(sdk, "bob")
    assert sdk.run(VolumesApi, "bob", lambda api: api.list_volumes(catalog_name="shop", schema_name="sales")).volumes == []
    with pytest.raises(NotFoundException):
        sdk.run(VolumesApi, "bob", lambda api: api.get_volume("shop.sales.v1"))
    grant("bob", SecurableType.VOLUME, "shop.sales.v1", Privilege.READ_VOLUME)
    listed = sdk.run(VolumesApi, "bob", lambda api: api.list_volumes(catalog_name="shop", schema_name="sales"))
    assert [v.name for v in listed.volumes] == ["v1"]
    assert sdk.run(VolumesApi, "bob", lambda api: api.get_volume("shop.sales.v1")).name == "v1"
    permissions = sdk.run(GrantsApi, "admin", lambda api: api.get(SecurableType.VOLUME, "shop.sales.v1"))
    assert [(a.principal, a.privileges) for a in permissions.privilege_assignments] == [
        ("bob", [Privilege.READ_VOLUME])]

    # Reading is not owning: bob may not rename, write or delete it.
    with pytest.raises(ForbiddenException):
        sdk.run(VolumesApi, "bob", lambda api: api.update_volume("shop.sales.v1", UpdateVolumeRequestContent(
            new_name="mine")))
    volume_id = Volume.objects.get(name="v1").id
    with pytest.raises(ForbiddenException):
        sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_volume_credentials(
            GenerateTemporaryVolumeCredential(volume_id=str(volume_id), operation=VolumeOperation.WRITE_VOLUME)))
    read = sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_volume_credentials(
        GenerateTemporaryVolumeCredential(volume_id=str(volume_id), operation=VolumeOperation.READ_VOLUME)))
    assert read.url.endswith(f"/volumes/{volume_id}")
    with pytest.raises(ForbiddenException):
        sdk.run(VolumesApi, "bob", lambda api: api.delete_volume("shop.sales.v1"))

    # With CREATE VOLUME bob creates his own, which he owns.
    grant("bob", SecurableType.SCHEMA, "shop.sales", Privilege.CREATE_VOLUME)
    mine = sdk.run(VolumesApi, "bob", lambda api: api.create_volume(CreateVolumeRequestContent(
        catalog_name="shop", schema_name="sales", name="bobs", volume_type=VolumeType.MANAGED)))
    assert mine.owner == "bob"
    sdk.run(VolumesApi, "bob", lambda api: api.delete_volume("shop.sales.bobs"))
    # The grant on v1 goes with the volume.
    sdk.run(VolumesApi, "admin", lambda api: api.delete_volume("shop.sales.v1"))
    assert not Grant.objects.filter(securable_id=volume_id).exists()


def test_external_volume_needs_an_external_location(sdk, external_root, storage_root):
    path = (external_root / "drop").as_uri()
    body = CreateVolumeRequestContent(catalog_name="shop", schema_name="sales", name="drop",
                                      volume_type=VolumeType.EXTERNAL, storage_location=path)
    use_schema(sdk, "bob", Privilege.CREATE_VOLUME)
    with pytest.raises(ForbiddenException) as uncovered:
        sdk.run(VolumesApi, "bob", lambda api: api.create_volume(body))
    assert "No external location contains" in uncovered.value.body

    make_location(sdk, external_root)
    with pytest.raises(ForbiddenException) as missing:
        sdk.run(VolumesApi, "bob", lambda api: api.create_volume(body))
    assert "CREATE EXTERNAL VOLUME" in missing.value.body
    grant("bob", SecurableType.EXTERNAL_LOCATION, "landing", Privilege.CREATE_EXTERNAL_VOLUME)
    volume = sdk.run(VolumesApi, "bob", lambda api: api.create_volume(body))
    assert volume.volume_type == VolumeType.EXTERNAL and volume.storage_location == path

    # Nothing else may share its files, and managed storage is never external.
    for location in (path, f"{path}/inner", external_root.as_uri()):
        with pytest.raises(BadRequestException):
            sdk.run(VolumesApi, "admin", lambda api, url=location: api.create_volume(CreateVolumeRequestContent(
                catalog_name="shop", schema_name="sales", name="other", volume_type=VolumeType.EXTERNAL,
                storage_location=url)))
    with pytest.raises(BadRequestException) as managed:
        sdk.run(VolumesApi, "admin", lambda api: api.create_volume(CreateVolumeRequestContent(
            catalog_name="shop", schema_name="sales", name="other", volume_type=VolumeType.EXTERNAL,
            storage_location=(storage_root / "x").as_uri())))
    assert "managed storage" in managed.value.body

    # An external volume's files stay when it is dropped.
    sdk.run(VolumesApi, "bob", lambda api: api.delete_volume("shop.sales.drop"))
    assert not PurgeRequest.objects.filter(url=path).exists()


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


# == credentials and external locations ===========================================================
def test_credentials(sdk, admin_client):
    created = sdk.run(CredentialsApi, "admin", lambda api: api.create_credential(CreateCredentialRequest(
        name="lake", comment="the lake", purpose=CredentialPurpose.STORAGE,
        aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::123456789012:role/lake"))))
    assert created.aws_iam_role.role_arn == "arn:aws:iam::123456789012:role/lake"
    assert created.aws_iam_role.external_id == created.id and created.full_name == "lake"
    assert created.purpose == CredentialPurpose.STORAGE and created.owner == "admin"

    # Static keys (beyond the spec, for S3-compatible servers) are stored encrypted, never shown.
    response = admin_client.post(f"{UC}/credentials", {
        "name": "minio", "aws_static_keys": {"access_key_id": "AKIAEXAMPLE", "secret_access_key": "s3cr3t-value"},
        "endpoint_url": "http://127.0.0.1:9000", "purpose": "SERVICE"}, format="json")
    assert response.status_code == 200, response.content
    assert "s3cr3t-value" not in response.content.decode()
    assert response.json()["aws_static_keys"] == {"access_key_id": "AKIAEXAMPLE"}
    row = Credential.objects.get(name="minio")
    assert "s3cr3t-value" not in row.aws_secret_access_key_encrypted
    assert secrets.decrypt(row.aws_secret_access_key_encrypted) == "s3cr3t-value"
    for path in (f"{UC}/credentials", f"{UC}/credentials/minio"):
        assert "s3cr3t-value" not in admin_client.get(path).content.decode()
    assert "s3cr3t-value" not in json.dumps(list(AuditEvent.objects.values_list("details", flat=True)))

    storage = sdk.run(CredentialsApi, "admin", lambda api: api.list_credentials(purpose=CredentialPurpose.STORAGE))
    assert [c.name for c in storage.credentials] == ["lake"]

    updated = sdk.run(CredentialsApi, "admin", lambda api: api.update_credential("lake", UpdateCredentialRequest(
        new_name="warehouse", comment="renamed", aws_iam_role=AwsIamRoleRequest(
            role_arn="arn:aws:iam::123456789012:role/warehouse"))))
    assert updated.name == "warehouse" and updated.aws_iam_role.role_arn.endswith("/warehouse")

    # Only those with CREATE STORAGE CREDENTIAL create them; only grantees see them.
    with pytest.raises(ForbiddenException):
        sdk.run(CredentialsApi, "bob", lambda api: api.create_credential(CreateCredentialRequest(
            name="bobs", aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::123456789012:role/b"))))
    grant("bob", SecurableType.METASTORE, "ucweb", Privilege.CREATE_STORAGE_CREDENTIAL)
    mine = sdk.run(CredentialsApi, "bob", lambda api: api.create_credential(CreateCredentialRequest(
        name="bobs", aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::123456789012:role/b"))))
    assert mine.owner == "bob"
    assert [c.name for c in sdk.run(CredentialsApi, "bob", lambda api: api.list_credentials()).credentials] == ["bobs"]
    with pytest.raises(NotFoundException):
        sdk.run(CredentialsApi, "bob", lambda api: api.get_credential("warehouse"))
    grant("bob", SecurableType.CREDENTIAL, "warehouse", Privilege.CREATE_EXTERNAL_LOCATION)
    assert sdk.run(CredentialsApi, "bob", lambda api: api.get_credential("warehouse")).name == "warehouse"
    with pytest.raises(ForbiddenException):
        sdk.run(CredentialsApi, "bob", lambda api: api.delete_credential("warehouse"))

    sdk.run(CredentialsApi, "admin", lambda api: api.delete_credential("warehouse"))
    assert_missing(sdk, CredentialsApi, lambda api: api.get_credential("warehouse"), "CREDENTIAL_DOES_NOT_EXIST")
    assert not Grant.objects.filter(securable_name="warehouse").exists()


def test_external_locations(sdk, external_root, storage_root):
    (external_root / "a").mkdir()
    location = make_location(sdk, external_root / "a")
    assert location.url == (external_root / "a").as_uri() and location.credential_name == "files"
    assert location.credential_id == str(Credential.objects.get(name="files").id)

    def create(name, url):
        return sdk.run(ExternalLocationsApi, "admin", lambda api: api.create_external_location(
            CreateExternalLocation(name=name, url=url, credential_name="files")))

    # No overlap: not the same URL, not above it, not below it, not managed storage.
    for url in ((external_root / "a").as_uri(), external_root.as_uri(), (external_root / "a" / "b").as_uri(),
                storage_root.as_uri(), (storage_root / "x").as_uri(), "file:///"):
        with pytest.raises(BadRequestException) as overlap:
            create("other", url)
        assert "overlaps" in overlap.value.body
    sibling = create("sibling", (external_root / "ab").as_uri())
    assert sibling.url.endswith("/ab")

    with pytest.raises(ApiException) as duplicate:
        create("sibling", (external_root / "c").as_uri())
    assert duplicate.value.status == 409

    listed = sdk.run(ExternalLocationsApi, "admin", lambda api: api.list_external_locations(max_results=1))
    assert [loc.name for loc in listed.external_locations] == ["landing"] and listed.next_page_token

    updated = sdk.run(ExternalLocationsApi, "admin", lambda api: api.update_external_location(
        "sibling", UpdateExternalLocation(new_name="archive", comment="cold", url=(external_root / "d").as_uri())))
    assert (updated.name, updated.comment) == ("archive", "cold") and updated.url.endswith("/d")

    # Creating one needs CREATE EXTERNAL LOCATION on the metastore and on the credential.
    use = CreateExternalLocation(name="bobs", url=(external_root / "e").as_uri(), credential_name="files")
    with pytest.raises(ForbiddenException):
        sdk.run(ExternalLocationsApi, "bob", lambda api: api.create_external_location(use))
    grant("bob", SecurableType.METASTORE, "ucweb", Privilege.CREATE_EXTERNAL_LOCATION)
    # A credential bob holds nothing on does not exist for him.
    with pytest.raises(NotFoundException) as on_credential:
        sdk.run(ExternalLocationsApi, "bob", lambda api: api.create_external_location(use))
    assert "CREDENTIAL_DOES_NOT_EXIST" in on_credential.value.body
    grant("bob", SecurableType.CREDENTIAL, "files", Privilege.CREATE_EXTERNAL_LOCATION)
    assert sdk.run(ExternalLocationsApi, "bob", lambda api: api.create_external_location(use)).owner == "bob"
    assert [loc.name for loc in sdk.run(ExternalLocationsApi, "bob",
                                        lambda api: api.list_external_locations()).external_locations] == ["bobs"]
    with pytest.raises(NotFoundException):
        sdk.run(ExternalLocationsApi, "bob", lambda api: api.get_external_location("landing"))

    # A credential in use stays unless forced; forced, its locations go with it.
    with pytest.raises(BadRequestException):
        sdk.run(CredentialsApi, "admin", lambda api: api.delete_credential("files"))
    sdk.run(ExternalLocationsApi, "admin", lambda api: api.delete_external_location("archive"))
    assert_missing(sdk, ExternalLocationsApi, lambda api: api.get_external_location("archive"),
                   "EXTERNAL_LOCATION_DOES_NOT_EXIST")
    sdk.run(CredentialsApi, "admin", lambda api: api.delete_credential("files", force=True))
    assert not ExternalLocation.objects.exists()


def test_require_external_location(sdk, external_root, storage_root):
    make_location(sdk, external_root)
    bob = principals.ensure_principal(name="bob")
    admin = Principal.objects.get(name="admin")
    inside = (external_root / "t" / "x").as_uri()
    with pytest.raises(PermissionDenied):
        locations.require_external_location(bob, inside, P.CREATE_EXTERNAL_TABLE)
    grant("bob", SecurableType.EXTERNAL_LOCATION, "landing", Privilege.CREATE_EXTERNAL_TABLE)
    assert locations.require_external_location(bob, inside, P.CREATE_EXTERNAL_TABLE).name == "landing"
    assert locations.require_external_location(bob, inside.replace("file:///", "/"),
                                                        P.CREATE_EXTERNAL_TABLE).name == "landing"
    with pytest.raises(PermissionDenied):
        locations.require_external_location(bob, inside, P.WRITE_FILES)
    with pytest.raises(PermissionDenied):
        locations.require_external_location(bob, "file:///elsewhere/t", P.CREATE_EXTERNAL_TABLE)
    # Admins may name paths outside every external location, but never managed storage.
    assert locations.require_external_location(admin, "file:///elsewhere/t", P.READ_FILES) is None
    with pytest.raises(InvalidParameter):
        locations.require_external_location(admin, (storage_root / "tables" / "x").as_uri(), P.READ_FILES)
    with pytest.raises(PermissionDenied):
        locations.require_external_location(bob, "gs://bucket/x", P.CREATE_EXTERNAL_TABLE)
    assert locations.require_external_location(admin, "gs://bucket/x", P.CREATE_EXTERNAL_TABLE) is None
    with pytest.raises(InvalidParameter):
        locations.require_external_location(bob, "not a url", P.READ_FILES)


def test_path_credentials_on_files(sdk, external_root):
    make_location(sdk, external_root)
    url = (external_root / "raw" / "2024").as_uri()
    body = GenerateTemporaryPathCredential(url=url, operation=PathOperation.PATH_READ)
    principals.ensure_principal(name="bob")
    with pytest.raises(ForbiddenException):
        sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_path_credentials(body))
    grant("bob", SecurableType.EXTERNAL_LOCATION, "landing", Privilege.READ_FILES)
    answer = sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_path_credentials(body))
    assert answer.url == url and answer.aws_temp_credentials is None and answer.expiration_time > 0
    with pytest.raises(ForbiddenException):
        sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_path_credentials(
            GenerateTemporaryPathCredential(url=url, operation=PathOperation.PATH_READ_WRITE)))
    assert AuditEvent.objects.filter(action="generateTemporaryPathCredentials", principal="bob").count() == 1


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


def test_admin_pages_never_show_secrets(admin_client, bootstrap, client, django_user_model):
    from catalog.services import credentials

    admin = Principal.objects.get(name="admin")
    credentials.create_credential(caller=admin, name="minio", aws_static_keys={
        "access_key_id": "AKIAEXAMPLE", "secret_access_key": "very-secret-value"})
    user = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(user)
    credential = Credential.objects.get(name="minio")
    for url in ("/admin/catalog/credential/", f"/admin/catalog/credential/{credential.id}/change/",
                "/admin/catalog/credential/?q=minio"):
        page = client.get(url)
        assert page.status_code == 200, url
        text = page.content.decode()
        assert "very-secret-value" not in text and credential.aws_secret_access_key_encrypted not in text
    for url in ("/admin/catalog/volume/", "/admin/catalog/function/", "/admin/catalog/registeredmodel/",
                "/admin/catalog/modelversion/", "/admin/catalog/externallocation/?q=x"):
        assert client.get(url).status_code == 200, url


# == bad input =====================================================================================
def _parameter(**overrides):
    return {"name": "x", "type_text": "int", "type_json": '{"type":"int"}', "type_name": "INT", "position": 0,
            **overrides}


def _function(**overrides):
    info = {
        "name": "f2", "catalog_name": "shop", "schema_name": "sales",
        "input_params": {"parameters": [_parameter()]}, "data_type": "INT", "full_data_type": "int",
        "routine_body": "SQL", "routine_definition": "x + 1", "parameter_style": "S", "is_deterministic": True,
        "sql_data_access": "CONTAINS_SQL", "is_null_call": False, "security_type": "DEFINER", "specific_name": "f2",
    }
    info.update(overrides)
    return {"function_info": info}


V = "/models/shop.sales.m/versions"
BAD_REQUESTS = [
    # volumes
    ("post", "/volumes", {}, 400),
    ("post", "/volumes", [], 400),
    ("post", "/volumes", {"name": "a.b", "catalog_name": "shop", "schema_name": "sales", "volume_type": "MANAGED"}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "BOGUS"}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "MANAGED",
                          "storage_location": "file:///tmp/x"}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "EXTERNAL"}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "EXTERNAL",
                          "storage_location": "http://example.com/x"}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "MANAGED",
                          "comment": 5}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "sales", "volume_type": "MANAGED",
                          "comment": "x" * 70000}, 400),
    ("post", "/volumes", {"name": "v", "catalog_name": "shop", "schema_name": "nope", "volume_type": "MANAGED"}, 404),
    ("get", "/volumes", None, 400),
    ("get", "/volumes?catalog_name=shop&schema_name=sales&max_results=-1", None, 400),
    ("get", "/volumes?catalog_name=shop&schema_name=sales&page_token=%21%21", None, 400),
    ("get", "/volumes/shop.sales", None, 400),
    ("get", "/volumes/shop.sales.nope", None, 404),
    ("patch", "/volumes/shop.sales.raw", {"new_name": "a.b"}, 400),
    ("patch", "/volumes/shop.sales.raw", {"owner": "nobody"}, 404),
    ("patch", "/volumes/shop.sales.raw", {"comment": 5}, 400),
    ("patch", "/volumes/shop.sales.raw", "not an object", 400),
    ("delete", "/volumes/shop.sales.nope", None, 404),
    # functions
    ("post", "/functions", {}, 400),
    ("post", "/functions", {"function_info": "x"}, 400),
    ("post", "/functions", _function(data_type=None), 400),
    ("post", "/functions", _function(data_type="BOGUS"), 400),
    ("post", "/functions", _function(input_params=None), 400),
    ("post", "/functions", _function(input_params={"parameters": "x"}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(type_json=None)]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(position=-1)]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(position=2**40)]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(type_name="NOPE")]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(parameter_mode="OUT")]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(), _parameter(position=1)]}), 400),
    ("post", "/functions", _function(input_params={"parameters": [_parameter(name="y"), _parameter()]}), 400),
    ("post", "/functions", _function(routine_body="EXTERNAL", sql_data_access="NO_SQL"), 400),
    ("post", "/functions", _function(routine_body="EXTERNAL", external_language="PYTHON"), 400),
    ("post", "/functions", _function(data_type="TABLE_TYPE"), 400),
    ("post", "/functions", _function(return_params={"parameters": [_parameter()]}), 400),
    ("post", "/functions", _function(is_deterministic="yes"), 400),
    ("post", "/functions", _function(parameter_style="X"), 400),
    ("post", "/functions", _function(security_type="INVOKER"), 400),
    ("post", "/functions", _function(specific_name=None), 400),
    ("post", "/functions", _function(routine_dependencies={"dependencies": [{}]}), 400),
    ("post", "/functions", _function(routine_dependencies={"dependencies": [{"table": {"table_full_name": "a"}}]}),
     400),
    ("post", "/functions", _function(properties={"a": "b"}), 400),
    ("post", "/functions", _function(name="f"), 409),
    ("post", "/functions", _function(schema_name="nope"), 404),
    ("get", "/functions/x", None, 400),
    ("get", "/functions?catalog_name=shop", None, 400),
    ("delete", "/functions/shop.sales.nope", None, 404),
    # registered models and versions
    ("post", "/models", {}, 400),
    ("post", "/models", {"name": "a b", "catalog_name": "shop", "schema_name": "sales"}, 400),
    ("post", "/models", {"name": "m", "catalog_name": "shop", "schema_name": "sales"}, 409),
    ("get", "/models?catalog_name=shop", None, 400),
    ("get", "/models?max_results=abc", None, 400),
    ("get", "/models/shop.sales", None, 400),
    ("patch", "/models/shop.sales.m", {"new_name": ""}, 400),
    ("patch", "/models/shop.sales.m", {"comment": ["x"]}, 400),
    ("delete", "/models/shop.sales.m?force=maybe", None, 400),
    ("delete", "/models/shop.sales.m", None, 400),
    ("post", "/models/versions", {}, 400),
    ("post", "/models/versions", {"model_name": "m", "catalog_name": "shop", "schema_name": "sales", "source": 5}, 400),
    ("post", "/models/versions", {"model_name": "m", "catalog_name": "shop", "schema_name": "sales"}, 400),
    ("post", "/models/versions", {"model_name": "nope", "catalog_name": "shop", "schema_name": "sales",
                                  "source": "s"}, 404),
    ("get", f"{V}/abc", None, 400),
    ("get", f"{V}/0", None, 400),
    ("get", f"{V}/-1", None, 400),
    ("get", f"{V}/99999999999999999999999", None, 400),
    ("get", f"{V}/99", None, 404),
    ("get", f"{V}?page_token=%21", None, 400),
    ("patch", f"{V}/1", {"comment": 3}, 400),
    ("patch", f"{V}/1/finalize", {"full_name": "shop.sales.m", "version": 2}, 400),
    ("patch", f"{V}/1/finalize", {"full_name": "shop.sales.other", "version": 1}, 400),
    ("patch", f"{V}/1/finalize", {"full_name": 5, "version": 1}, 400),
    ("patch", f"{V}/x/finalize", {}, 400),
    ("delete", f"{V}/7", None, 404),
    # credentials
    ("post", "/credentials", {}, 400),
    ("post", "/credentials", {"name": "c2"}, 400),
    ("post", "/credentials", {"name": "c2", "aws_iam_role": {"role_arn": "nope"}}, 400),
    ("post", "/credentials", {"name": "c2", "aws_iam_role": "arn"}, 400),
    ("post", "/credentials", {"name": "c2", "purpose": "X", "aws_iam_role": {"role_arn": "arn:aws:iam::1:role/r"}},
     400),
    ("post", "/credentials", {"name": "c2", "aws_static_keys": {"access_key_id": "AKIA"}}, 400),
    ("post", "/credentials", {"name": "c2", "aws_static_keys": {"access_key_id": "A K", "secret_access_key": "s"}},
     400),
    ("post", "/credentials", {"name": "c2", "aws_iam_role": {"role_arn": "arn:aws:iam::123456789012:role/r"},
                              "endpoint_url": "ftp://x"}, 400),
    ("post", "/credentials", {"name": "c2", "aws_iam_role": {"role_arn": "arn:aws:iam::123456789012:role/r"},
                              "region": "US EAST"}, 400),
    ("post", "/credentials", {"name": "c", "aws_iam_role": {"role_arn": "arn:aws:iam::123456789012:role/r"}}, 409),
    ("get", "/credentials?purpose=NOPE", None, 400),
    ("get", "/credentials/nope", None, 404),
    ("patch", "/credentials/c", {"aws_iam_role": {"role_arn": 5}}, 400),
    ("patch", "/credentials/c", {"aws_iam_role": None}, 400),
    ("patch", "/credentials/c", {"new_name": "s"}, 409),
    ("delete", "/credentials/c?force=x", None, 400),
    ("delete", "/credentials/c", None, 400),
    # external locations
    ("post", "/external-locations", {}, 400),
    ("post", "/external-locations", {"name": "l2", "url": "gs://b/x", "credential_name": "c"}, 400),
    ("post", "/external-locations", {"name": "l2", "url": "not a url", "credential_name": "c"}, 400),
    ("post", "/external-locations", {"name": "l2", "url": "s3://b/x", "credential_name": "nope"}, 404),
    ("post", "/external-locations", {"name": "l2", "url": "s3://b/x", "credential_name": "s"}, 400),
    ("post", "/external-locations", {"name": "l2", "url": "s3://lake/landing/x", "credential_name": "c"}, 400),
    ("post", "/external-locations", {"name": "l2", "url": "s3://lake", "credential_name": "c"}, 400),
    ("post", "/external-locations", {"name": "l", "url": "s3://other", "credential_name": "c"}, 409),
    ("patch", "/external-locations/l", {"url": "file:///"}, 400),
    ("patch", "/external-locations/l", {"credential_name": "nope"}, 404),
    ("patch", "/external-locations/l", {"new_name": "x y"}, 400),
    ("delete", "/external-locations/nope", None, 404),
    ("delete", "/external-locations/l?force=2", None, 400),
    # temporary credentials
    ("post", "/temporary-table-credentials", {}, 400),
    ("post", "/temporary-table-credentials", {"table_id": "nope", "operation": "READ"}, 400),
    ("post", "/temporary-table-credentials", {"table_id": str(uuid.UUID(int=1)), "operation": "READ"}, 404),
    ("post", "/temporary-table-credentials", {"table_id": str(uuid.UUID(int=1)), "operation": "WRITE"}, 400),
    ("post", "/temporary-table-credentials", {"table_id": str(uuid.UUID(int=1)),
                                              "operation": "UNKNOWN_TABLE_OPERATION"}, 400),
    ("post", "/temporary-volume-credentials", {"volume_id": 5, "operation": "READ_VOLUME"}, 400),
    ("post", "/temporary-volume-credentials", {"volume_id": str(uuid.UUID(int=1)), "operation": "READ_VOLUME"},
     404),
    ("post", "/temporary-volume-credentials", {"volume_id": str(uuid.UUID(int=1)), "operation": "READ"}, 400),
    ("post", "/temporary-path-credentials", {"operation": "PATH_READ"}, 400),
    ("post", "/temporary-path-credentials", {"url": "s3://lake/landing/x"}, 400),
    ("post", "/temporary-path-credentials", {"url": "ftp://x/y", "operation": "PATH_READ"}, 400),
    ("post", "/temporary-model-version-credentials", {"catalog_name": "shop", "schema_name": "sales",
                                                      "model_name": "m", "version": "x",
                                                      "operation": "READ_MODEL_VERSION"}, 400),
    ("post", "/temporary-model-version-credentials", {"catalog_name": "shop", "schema_name": "sales",
                                                      "model_name": "m", "version": 1, "operation": "READ"}, 400),
    ("post", "/temporary-model-version-credentials", {"catalog_name": "shop", "schema_name": "sales",
                                                      "model_name": "nope", "version": 1,
                                                      "operation": "READ_MODEL_VERSION"}, 404),
    # permissions on the new securables
    ("patch", "/permissions/volume/shop.sales.raw", {"changes": [{"principal": "admin", "add": ["SELECT"]}]}, 400),
    ("patch", "/permissions/function/shop.sales.f", {"changes": [{"principal": "admin", "add": ["READ VOLUME"]}]},
     400),
    ("get", "/permissions/registered_model/shop.sales.nope", None, 404),
    ("get", "/permissions/credential/nope", None, 404),
    ("get", "/permissions/external_location/nope", None, 404),
]


@pytest.fixture
def assets_world(admin_client, storage_root):
    """shop.sales with volume raw, function f, model m (version 1), STORAGE credential c, SERVICE
    credential s, external location l at s3://lake/landing."""
    role = {"role_arn": "arn:aws:iam::123456789012:role/r"}
    for method, path, body in [
        ("post", "/catalogs", {"name": "shop"}),
        ("post", "/schemas", {"name": "sales", "catalog_name": "shop"}),
        ("post", "/volumes", {"name": "raw", "catalog_name": "shop", "schema_name": "sales",
                              "volume_type": "MANAGED"}),
        ("post", "/functions", _function(name="f", specific_name="f")),
        ("post", "/models", {"name": "m", "catalog_name": "shop", "schema_name": "sales"}),
        ("post", "/models/versions", {"model_name": "m", "catalog_name": "shop", "schema_name": "sales",
                                      "source": "file:///tmp/m"}),
        ("post", "/credentials", {"name": "c", "aws_iam_role": role}),
        ("post", "/credentials", {"name": "s", "purpose": "SERVICE", "aws_iam_role": role}),
        ("post", "/external-locations", {"name": "l", "url": "s3://lake/landing", "credential_name": "c"}),
    ]:
        response = getattr(admin_client, method)(f"{UC}{path}", body, format="json")
        assert response.status_code == 200, (path, response.content)
    return admin_client


def assets_snapshot() -> dict:
    from catalog.models import Catalog, Schema

    return rows(Catalog, Schema, Volume, Function, RegisteredModel, ModelVersion, Credential, ExternalLocation,
                Grant)


@pytest.mark.django_db  # no live server: each case rolls back, which is much faster than a flush
@pytest.mark.parametrize("method,path,body,status", BAD_REQUESTS,
                         ids=[f"{m} {p} {i}" for i, (m, p, _, _) in enumerate(BAD_REQUESTS)])
def test_bad_input_is_refused_and_changes_nothing(assets_world, method, path, body, status):
    before = assets_snapshot()
    if body is None:
        response = getattr(assets_world, method)(f"{UC}{path}")
    elif isinstance(body, str):
        response = getattr(assets_world, method)(f"{UC}{path}", body, content_type="application/json")
    else:
        response = getattr(assets_world, method)(f"{UC}{path}", body, format="json")
    assert response.status_code == status, response.content
    payload = response.json()
    assert set(payload) == {"error_code", "message", "details"}, payload
    assert assets_snapshot() == before


@pytest.mark.django_db
def test_openapi_documents_every_new_operation(client):
    import yaml

    schema = yaml.safe_load(client.get("/api/schema/").content)
    operations = {(method.upper(), path) for path, item in schema["paths"].items() for method in item
                  if method in {"get", "post", "patch", "delete"}}
    expected = set()
    for method, path in [
        ("GET", "volumes"), ("POST", "volumes"), ("GET", "volumes/{name}"), ("PATCH", "volumes/{name}"),
        ("DELETE", "volumes/{name}"), ("GET", "functions"), ("POST", "functions"), ("GET", "functions/{name}"),
        ("DELETE", "functions/{name}"), ("GET", "models"), ("POST", "models"), ("GET", "models/{full_name}"),
        ("PATCH", "models/{full_name}"), ("DELETE", "models/{full_name}"), ("POST", "models/versions"),
        ("GET", "models/{full_name}/versions"), ("GET", "models/{full_name}/versions/{version}"),
        ("PATCH", "models/{full_name}/versions/{version}"), ("DELETE", "models/{full_name}/versions/{version}"),
        ("PATCH", "models/{full_name}/versions/{version}/finalize"), ("GET", "credentials"), ("POST", "credentials"),
        ("GET", "credentials/{name}"), ("PATCH", "credentials/{name}"), ("DELETE", "credentials/{name}"),
        ("GET", "external-locations"), ("POST", "external-locations"), ("GET", "external-locations/{name}"),
        ("PATCH", "external-locations/{name}"), ("DELETE", "external-locations/{name}"),
        ("POST", "temporary-table-credentials"), ("POST", "temporary-volume-credentials"),
        ("POST", "temporary-path-credentials"), ("POST", "temporary-model-version-credentials"),
    ]:
        expected.add((method, f"{UC}/{path}"))
    assert expected <= operations, sorted(expected - operations)
    ids = {item[m]["operationId"] for item in schema["paths"].values() for m in item if isinstance(item[m], dict)
           and "operationId" in item[m]}
    assert {"createVolume", "createFunction", "createModelVersion", "finalizeModelVersion", "createCredential",
            "createExternalLocation", "generateTemporaryPathCredentials"} <= ids
