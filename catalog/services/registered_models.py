"""Registered models and their versions (what MLflow's `uc:` registry talks to).

A model's files live under `<schema or catalog managed location, else UCWEB_STORAGE_ROOT>/models/<id>`
and version n's under `<model location>/versions/<n>`. The life of a version, as MLflow drives it:

    POST  /models/versions                       → version 1, PENDING_REGISTRATION
    POST  /temporary-model-version-credentials   → write access to .../versions/1 (pending only)
          (the client uploads the artifacts)
    PATCH /models/{name}/versions/1/finalize     → READY; finalizing again (or a FAILED one) is 400

Numbers are 1, 2, 3... per model without gaps: creating a version locks the model row and takes
the next number from it, so concurrent creations get consecutive numbers; a number is never given
twice, even after its version was deleted. Creating, finalizing and writing a version needs
ownership of the model or CREATE MODEL on its schema; reading needs EXECUTE; renaming, updating and
deleting need ownership.
"""

from __future__ import annotations

import uuid

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Concat
from django.utils import timezone

from catalog import authz, pagination, resolve
from catalog.authz import Action
from catalog.choices import ModelVersionStatus, SecurableType
from catalog.models import ModelVersion, Principal, RegisteredModel
from catalog.services import audit, recipes, schema_assets
from catalog.names import split_full_name, validate_name
from catalog.storage import join
from ucweb.errors import AlreadyExists, InvalidParameter


# -- registered models ----------------------------------------------------------------------------
def visible_models(*, caller: Principal, catalog_name=None, schema_name=None):
    """The models of one schema, or (neither name given) of every schema the caller can use.
    Ordered and paginated by `sort_key` (catalog.schema.name)."""
    queryset = RegisteredModel.objects.select_related("schema__catalog").annotate(
        sort_key=Concat(F("schema__catalog__name"), Value("."), F("schema__name"), Value("."), F("name"))
    )
    if catalog_name in (None, "") and schema_name in (None, ""):
        return authz.visible(queryset, caller)
    if catalog_name in (None, "") or schema_name in (None, ""):
        raise InvalidParameter("Pass both catalog_name and schema_name, or neither to list every model.")
    return schema_assets.visible_in_schema(
        queryset, caller=caller, catalog_name=catalog_name, schema_name=schema_name)


def paginate_models(queryset, *, max_results, page_token):
    return pagination.paginate(queryset, max_results=max_results, page_token=page_token, key="sort_key",
                               maximum=pagination.SPEC_MAXIMUM["registered_models"])


def get_model(*, caller: Principal, full_name: str) -> RegisteredModel:
    return recipes.readable(resolve.registered_model, caller=caller, full_name=full_name)


@transaction.atomic
def create_model(*, caller: Principal, name, catalog_name, schema_name, comment=None) -> RegisteredModel:
    validate_name(name)
    comment = schema_assets.reject_nul(schema_assets.validate_long_comment(comment), field="comment")
    schema, access = schema_assets.schema_access(caller, catalog_name, schema_name)
    authz.require(caller, schema, Action.CREATE_MODEL, access=access)
    if RegisteredModel.objects.filter(schema=schema, name=name).exists():
        raise AlreadyExists(f"Registered model '{schema.full_name}.{name}' already exists.")
    model_id = uuid.uuid4()
    now = timezone.now()
    model = RegisteredModel.objects.create(
        id=model_id, schema=schema, name=name, comment=comment,
        storage_location=schema_assets.managed_location(schema, "models", model_id),
        owner=caller.name, created_by=caller.name, updated_at=now, updated_by=caller.name,
    )
    return recipes.audited(model, caller=caller, action="createRegisteredModel",
                           securable_type=SecurableType.REGISTERED_MODEL)


UPDATABLE = recipes.Updatable.in_a_schema(
    SecurableType.REGISTERED_MODEL,
    comment=lambda value: schema_assets.reject_nul(schema_assets.validate_long_comment(value), field="comment"),
)


@transaction.atomic
def update_model(*, caller: Principal, full_name: str, fields: dict) -> RegisteredModel:
    model, access = resolve.registered_model(caller, full_name, for_update=True)
    return recipes.update(model, fields, UPDATABLE, caller=caller, access=access)


@transaction.atomic
def delete_model(*, caller: Principal, full_name: str, force: bool) -> None:
    """All versions must be deleted first unless `force`; files are purged after commit."""
    model, access = resolve.registered_model(caller, full_name, for_update=True)
    with recipes.dropping(model, caller=caller, access=access,
                          securable_type=SecurableType.REGISTERED_MODEL, details={"force": force}) as details:
        versions = details["versions"] = model.versions.count()
        if versions and not force:
            raise InvalidParameter(
                f"Registered model {model.full_name} has {versions} version(s); delete them first or pass force=true."
            )
        model.delete()


# -- model versions ------------------------------------------------------------------------------
def can_write_versions(access: authz.Access) -> bool:
    """Owners of the model (or above), and holders of CREATE MODEL on its schema or catalog."""
    return authz.allows(access.principal, access.chain[0], Action.WRITE, access=access)


def _model_for_writing(caller: Principal, full_name: str) -> tuple[RegisteredModel, authz.Access]:
    model, access = resolve.registered_model(caller, full_name)
    authz.require(caller, model, Action.WRITE, access=access)
    return model, access


@transaction.atomic
def create_version(
    *, caller: Principal, model_name, catalog_name, schema_name, source, run_id=None, comment=None,
) -> ModelVersion:
    validate_name(model_name, field="model_name")
    validate_name(catalog_name, field="catalog_name")
    validate_name(schema_name, field="schema_name")
    source = schema_assets.reject_nul(
        schema_assets.validate_required_string(source, field="source", max_length=4096), field="source")
    run_id = schema_assets.reject_nul(
        schema_assets.validate_optional_string(run_id, field="run_id", max_length=255), field="run_id")
    comment = schema_assets.reject_nul(schema_assets.validate_long_comment(comment), field="comment")
    full_name = f"{catalog_name}.{schema_name}.{model_name}"
    model, _ = _model_for_writing(caller, full_name)
    # The model row is the lock that numbers versions: concurrent creators queue here.
    model = resolve.securable_row(SecurableType.REGISTERED_MODEL, full_name, for_update=True)
    model.last_version += 1
    model.save(update_fields=["last_version"])
    number = model.last_version
    now = timezone.now()
    version = ModelVersion.objects.create(
        model=model, version=number, source=source, run_id=run_id or None, comment=comment,
        status=ModelVersionStatus.PENDING_REGISTRATION,
        storage_location=join(model.storage_location, "versions", str(number)),
        created_by=caller.name, updated_at=now, updated_by=caller.name,
    )
    audit.record(
        principal=caller.name, action="createModelVersion", securable_type=SecurableType.REGISTERED_MODEL,
        securable_name=model.full_name, securable_id=model.id, details={"version": number, "source": source},
    )
    return version


def visible_versions(*, caller: Principal, full_name: str):
    model = get_model(caller=caller, full_name=full_name)
    return ModelVersion.objects.filter(model=model).select_related("model__schema__catalog")


def get_version(*, caller: Principal, full_name: str, version) -> ModelVersion:
    model = get_model(caller=caller, full_name=full_name)
    return resolve.get_model_version(model, version)


VERSION_UPDATABLE = recipes.Updatable(
    securable_type=SecurableType.REGISTERED_MODEL, audit_action="updateModelVersion",
    fields=("comment",), comment=UPDATABLE.comment,
)


@transaction.atomic
def update_version(*, caller: Principal, full_name: str, version, fields: dict) -> ModelVersion:
    model, access = resolve.registered_model(caller, full_name)
    authz.require(caller, model, Action.UPDATE, access=access)
    row = resolve.get_model_version(model, version, for_update=True)
    recipes.apply_common_fields(row, fields, VERSION_UPDATABLE, caller=caller, access=access)
    row.save()
    audit.record(
        principal=caller.name, action="updateModelVersion", securable_type=SecurableType.REGISTERED_MODEL,
        securable_name=model.full_name, securable_id=model.id, details={"version": row.version, **fields},
    )
    return row


@transaction.atomic
def finalize_version(*, caller: Principal, full_name: str, version, body: dict) -> ModelVersion:
    """PENDING_REGISTRATION → READY. The body's full_name and version, when given, must name the
    same version as the path."""
    number = resolve.parse_version(version)
    if body.get("full_name") is not None:
        if not isinstance(body["full_name"], str):
            raise InvalidParameter("full_name must be a string.")
        if split_full_name(body["full_name"], 3, what="registered model") != split_full_name(
                full_name, 3, what="registered model"):
            raise InvalidParameter("full_name in the body names another model than the path.")
    if body.get("version") is not None and resolve.parse_version(body["version"]) != number:
        raise InvalidParameter("version in the body differs from the version in the path.")
    model, _ = _model_for_writing(caller, full_name)
    row = resolve.get_model_version(model, number, for_update=True)
    if row.status != ModelVersionStatus.PENDING_REGISTRATION:
        raise InvalidParameter(
            f"Model version {model.full_name}/{number} is {row.status}; only a PENDING_REGISTRATION version "
            "can be finalized."
        )
    row.status = ModelVersionStatus.READY
    row.updated_at, row.updated_by = timezone.now(), caller.name
    row.save(update_fields=["status", "updated_at", "updated_by"])
    audit.record(
        principal=caller.name, action="finalizeModelVersion", securable_type=SecurableType.REGISTERED_MODEL,
        securable_name=model.full_name, securable_id=model.id, details={"version": number},
    )
    return row


@transaction.atomic
def delete_version(*, caller: Principal, full_name: str, version) -> None:
    model, access = resolve.registered_model(caller, full_name)
    authz.require(caller, model, Action.DELETE, access=access)
    row = resolve.get_model_version(model, version, for_update=True)
    number = row.version
    row.delete()
    audit.record(
        principal=caller.name, action="deleteModelVersion", securable_type=SecurableType.REGISTERED_MODEL,
        securable_name=model.full_name, securable_id=model.id, details={"version": number},
    )
