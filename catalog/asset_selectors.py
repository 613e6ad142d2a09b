"""Reads of volumes, functions, registered models, model versions, credentials and external
locations (the namespace itself is read through catalog.selectors)."""

from __future__ import annotations

import uuid

from catalog import pagination, selectors
from catalog.models import Credential, ExternalLocation, Function, ModelVersion, RegisteredModel, Volume
from catalog.services.names import join_full_name, split_full_name
from ucweb.errors import (
    CredentialDoesNotExist,
    ExternalLocationDoesNotExist,
    FunctionDoesNotExist,
    InvalidParameter,
    ModelVersionDoesNotExist,
    RegisteredModelDoesNotExist,
    VolumeDoesNotExist,
)


def _not_found(error, what: str):
    def make(catalog_name: str, schema_name: str, name: str):
        return error(f"{what} not found: {join_full_name(catalog_name, schema_name, name)}")
    return make


volume_not_found = _not_found(VolumeDoesNotExist, "Volume")
function_not_found = _not_found(FunctionDoesNotExist, "Function")
registered_model_not_found = _not_found(RegisteredModelDoesNotExist, "Registered model")


def volume_id_not_found(volume_id) -> VolumeDoesNotExist:
    return VolumeDoesNotExist(f"Volume not found: {volume_id}")


def credential_not_found(name) -> CredentialDoesNotExist:
    return CredentialDoesNotExist(f"Credential not found: {name}")


def external_location_not_found(name) -> ExternalLocationDoesNotExist:
    return ExternalLocationDoesNotExist(f"External location not found: {name}")


def _in_schema(model, not_found, what: str, full_name: str, *, for_update: bool = False):
    """A securable named `catalog.schema.name`; a missing catalog or schema is reported as such."""
    catalog_name, schema_name, name = split_full_name(full_name, 3, what=what)
    queryset = model.objects.select_related("schema__catalog")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    row = queryset.filter(schema__catalog__name=catalog_name, schema__name=schema_name, name=name).first()
    if row is None:
        selectors.get_schema(catalog_name, schema_name)
        raise not_found(catalog_name, schema_name, name)
    return row


def get_volume(full_name: str, *, for_update: bool = False) -> Volume:
    return _in_schema(Volume, volume_not_found, "volume", full_name, for_update=for_update)


def get_function(full_name: str, *, for_update: bool = False) -> Function:
    return _in_schema(Function, function_not_found, "function", full_name, for_update=for_update)


def get_registered_model(full_name: str, *, for_update: bool = False) -> RegisteredModel:
    return _in_schema(RegisteredModel, registered_model_not_found, "registered model", full_name,
                      for_update=for_update)


def parse_uuid(value, *, field: str) -> uuid.UUID:
    if not isinstance(value, str) or not value:
        raise InvalidParameter(f"{field} is required.")
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidParameter(f"{field} {value!r} is not a valid id.") from None


def get_volume_by_id(volume_id) -> Volume:
    volume = Volume.objects.select_related("schema__catalog").filter(id=parse_uuid(volume_id, field="volume_id")).first()
    if volume is None:
        raise volume_id_not_found(volume_id)
    return volume


def parse_version(value) -> int:
    """A model version number from a path or a body: a positive integer."""
    if isinstance(value, bool):
        raise InvalidParameter("version must be a positive integer.")
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or not 1 <= value < 2**63:
        raise InvalidParameter(f"version must be a positive integer, not {value!r}.")
    return value


def get_model_version(model: RegisteredModel, version, *, for_update: bool = False) -> ModelVersion:
    number = parse_version(version)
    queryset = ModelVersion.objects.select_related("model__schema__catalog")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    row = queryset.filter(model=model, version=number).first()
    if row is None:
        raise ModelVersionDoesNotExist(f"Model version {model.full_name}/{number} does not exist.")
    return row


def find_credential(name, *, for_update: bool = False) -> Credential | None:
    queryset = Credential.objects.select_for_update() if for_update else Credential.objects.all()
    return queryset.filter(name=name).first() if isinstance(name, str) else None


def get_credential(name: str, *, for_update: bool = False) -> Credential:
    credential = find_credential(name, for_update=for_update)
    if credential is None:
        raise credential_not_found(name)
    return credential


def find_external_location(name, *, for_update: bool = False) -> ExternalLocation | None:
    queryset = ExternalLocation.objects.select_related("credential")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    return queryset.filter(name=name).first() if isinstance(name, str) else None


def get_external_location(name: str, *, for_update: bool = False) -> ExternalLocation:
    location = find_external_location(name, for_update=for_update)
    if location is None:
        raise external_location_not_found(name)
    return location


def paginate_versions(queryset, *, max_results, page_token):
    """Keyset pagination of model versions by number."""
    return pagination.paginate(queryset, max_results=max_results, page_token=page_token, key="version", numeric=True,
                               maximum=pagination.SPEC_MAXIMUM["model_versions"])
