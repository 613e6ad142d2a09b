"""Temporary credentials for tables, volumes, paths and model versions.

Each request is first authorized against the caller's grants:

    table         READ: SELECT              READ_WRITE: SELECT and MODIFY (SELECT alone: read-only
                                            credentials, since delta-rs asks READ_WRITE to read)
    volume        READ_VOLUME: READ VOLUME  WRITE_VOLUME: ownership (the API has no WRITE VOLUME)
    path          PATH_READ: READ FILES     PATH_READ_WRITE: READ FILES and WRITE FILES
                  PATH_CREATE_TABLE: CREATE EXTERNAL TABLE (all on the external location)
    model version READ_MODEL_VERSION: EXECUTE
                  READ_WRITE_MODEL_VERSION: ownership or CREATE MODEL, and only while the version
                  is PENDING_REGISTRATION

then the one vendor (catalog.services.vendor) vends for the securable's own location.
"""

from __future__ import annotations

from catalog import authz, locations, resolve
from catalog.authz import Action
from catalog.choices import (
    AuditAction,
    ModelVersionOperation,
    ModelVersionStatus,
    PathOperation,
    Privilege,
    SecurableType,
    TableOperation,
    VolumeOperation,
)
from catalog.models import Principal
from catalog.services import audit
from catalog.locations import containing_location, require_outside_managed_storage
from catalog.names import validate_name
from catalog.services.registered_models import can_write_versions
from catalog.services.volumes import writable_by
from catalog.services.vendor import vend
from ucweb.errors import InvalidParameter, PermissionDenied


def _operation(value, allowed) -> str:
    if value not in allowed:
        raise InvalidParameter(f"operation must be one of {', '.join(allowed)}.")
    return value


def _record(caller, action, securable_type, name, securable_id, details):
    audit.record(principal=caller.name, action=action, securable_type=securable_type, securable_name=name,
                 securable_id=securable_id, details=details)


def for_table(*, caller: Principal, table_id, operation) -> dict:
    operation = _operation(operation, [TableOperation.READ, TableOperation.READ_WRITE])
    table, access = resolve.table_by_id(caller, table_id)
    access.require(access.has(Privilege.SELECT), f"Missing SELECT on table {table.full_name}.")
    # Some readers (delta-rs) always ask for READ_WRITE. Without MODIFY they get credentials that
    # can only read: never more than the grants allow, and reading still works.
    write = operation == TableOperation.READ_WRITE and access.has(Privilege.MODIFY)
    if not table.storage_location:
        raise InvalidParameter(f"Table {table.full_name} has no storage location.")
    answer = vend(table.storage_location, write=write, caller=caller, securable=table)
    _record(caller, "generateTemporaryTableCredentials", SecurableType.TABLE, table.full_name, table.id,
            {"operation": operation, "vended": TableOperation.READ_WRITE if write else TableOperation.READ,
             "url": answer["url"]})
    return answer


def for_staging_table(*, caller: Principal, staging) -> dict:
    """Read-write credentials for the location of a staging table, which only its creator writes
    (the caller checks that); audited under the name the table will have, without an id yet."""
    answer = vend(staging.staging_location, write=True, caller=caller)
    _record(caller, AuditAction.GENERATE_TEMPORARY_TABLE_CREDENTIALS, SecurableType.TABLE,
            staging.schema.child_full_name(staging.name), None,
            {"operation": TableOperation.READ_WRITE, "staging_table_id": str(staging.id), "url": answer["url"]})
    return answer


def for_volume(*, caller: Principal, volume_id, operation) -> dict:
    operation = _operation(operation, [VolumeOperation.READ_VOLUME, VolumeOperation.WRITE_VOLUME])
    volume, access = resolve.volume_by_id(caller, volume_id)
    access.require(access.has(Privilege.READ_VOLUME), f"Missing READ VOLUME on volume {volume.full_name}.")
    if operation == VolumeOperation.WRITE_VOLUME:
        access.require(writable_by(access), f"Only the owner of volume {volume.full_name} may write to it.")
    answer = vend(volume.storage_location, write=operation == VolumeOperation.WRITE_VOLUME, caller=caller,
                  securable=volume)
    _record(caller, "generateTemporaryVolumeCredentials", SecurableType.VOLUME, volume.full_name, volume.id,
            {"operation": operation, "url": answer["url"]})
    return answer


PATH_ACTIONS = {
    PathOperation.PATH_READ: [Action.READ_FILES],
    PathOperation.PATH_READ_WRITE: [Action.READ_FILES, Action.WRITE_FILES],
    PathOperation.PATH_CREATE_TABLE: [Action.CREATE_EXTERNAL_TABLE],
}


def for_path(*, caller: Principal, url, operation) -> dict:
    operation = _operation(operation, list(PATH_ACTIONS))
    canonical = locations.canonical(url, field="url")
    require_outside_managed_storage(canonical, field="url")
    location = containing_location(canonical)
    if location is None and not caller.is_metastore_admin:
        raise PermissionDenied(f"No external location contains {canonical}.")
    if location is not None:  # the caller named a path, not the location: 403s, never "not found"
        access = None
        for action in PATH_ACTIONS[operation]:
            access = authz.require(caller, location, action, access=access, missing=None)
    answer = vend(canonical, write=operation != PathOperation.PATH_READ, caller=caller)
    _record(caller, "generateTemporaryPathCredentials", SecurableType.EXTERNAL_LOCATION,
            location.name if location else "", location.id if location else None,
            {"operation": operation, "url": canonical})
    return answer


def for_model_version(*, caller: Principal, catalog_name, schema_name, model_name, version, operation) -> dict:
    operation = _operation(operation, [ModelVersionOperation.READ_MODEL_VERSION,
                                                              ModelVersionOperation.READ_WRITE_MODEL_VERSION])
    for value, field in ((catalog_name, "catalog_name"), (schema_name, "schema_name"), (model_name, "model_name")):
        validate_name(value, field=field)
    model, access = resolve.registered_model(caller, f"{catalog_name}.{schema_name}.{model_name}")
    row = None
    if operation == ModelVersionOperation.READ_MODEL_VERSION:
        access.require(access.has(Privilege.EXECUTE), f"Missing EXECUTE on registered model {model.full_name}.")
        row = resolve.get_model_version(model, version)
    else:
        access.require(can_write_versions(access),
                       f"Only the owner of registered model {model.full_name} or a holder of CREATE MODEL on its "
                       "schema may write its versions.")
        row = resolve.get_model_version(model, version)
        if row.status != ModelVersionStatus.PENDING_REGISTRATION:
            raise InvalidParameter(f"Model version {model.full_name}/{row.version} is {row.status}; write "
                                   "credentials are only vended while it is PENDING_REGISTRATION.")
    answer = vend(row.storage_location, write=operation == ModelVersionOperation.READ_WRITE_MODEL_VERSION,
                          caller=caller)
    _record(caller, "generateTemporaryModelVersionCredentials", SecurableType.REGISTERED_MODEL, model.full_name,
            model.id, {"operation": operation, "version": row.version, "url": answer["url"]})
    return answer
