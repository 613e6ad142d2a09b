"""Iceberg tables and views whose metadata another system writes (seed 001, Polaris): views
registered from an existing metadata file, and table notifications (CREATE, UPDATE, DROP,
VALIDATE) that move the catalog's pointer to the metadata file the other system wrote.

The metadata file a client names must lie in an external location the caller holds CREATE
EXTERNAL TABLE on, as the location of a Unity Catalog EXTERNAL table must (metastore admins may
name any URL outside managed storage). Notifications are applied under the table's row lock, and
one whose timestamp is not newer than the last one admitted is refused (409)."""

from __future__ import annotations

import uuid

from django.db import transaction
from django.utils import timezone

from catalog import authz, locations, resolve, schema_contract
from catalog.authz import Action
from catalog.choices import DataSourceFormat, Privilege, TableType
from catalog.models import Principal, Table
from catalog.services import audit
from catalog.locations import require_external_location
from catalog.services.iceberg import Loaded, require_write, warehouse
from catalog.names import validate_name
from catalog.services.dropped import drop_table_row
from catalog.services.tables import replace_columns
from catalog.storage import StorageError, storage_for
from commits.formats import definition
from commits.formats import iceberg as formats
from commits.formats import iceberg_view
from commits.formats.schema_evolution import iceberg_breaking_changes
from commits.iceberg import new_row, require_files_inside, require_free_name, row_id_for
from commits.models import IcebergMetadata
from ucweb import client_json
from ucweb.errors import AlreadyExists, InvalidParameter, TableDoesNotExist

NOTIFICATION_TYPES = {"CREATE", "UPDATE", "DROP", "VALIDATE"}


def _read(caller: Principal, location, *, field: str = "metadata-location", own_id=None) -> str:
    """The text of a metadata file the caller names: where they may have the catalog read (the
    rule of register), never inside another securable than `own_id`."""
    if not isinstance(location, str) or not location:
        raise InvalidParameter(f"{field} is required.")
    location = locations.registrable_metadata_file(caller=caller, value=location, field=field, own_id=own_id)
    try:
        text = storage_for(location).read(location).decode()
        client_json.check_text(text)
    except StorageError as exc:
        raise InvalidParameter(f"Cannot read {location}: {exc}") from None
    except UnicodeDecodeError:
        raise InvalidParameter(f"{location} is not a metadata file.") from None
    except client_json.TooDeep as exc:
        raise InvalidParameter(f"{location} is not a metadata file: {exc}.") from None
    return text


# -- register-view --------------------------------------------------------------------------------
def register_view(*, caller: Principal, prefix: str, namespace: str, body: dict) -> Loaded:
    schema, access = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    name = validate_name(body.get("name"))
    authz.require(caller, schema, Action.CREATE_TABLE, access=access)
    require_free_name(schema, name)  # a taken name answers "already exists" before the location
    location = body.get("metadata-location")
    text = _read(caller, location)
    try:
        metadata = iceberg_view.parse_view_metadata(text)
    except ValueError as exc:
        raise InvalidParameter(f"{location} is not Iceberg view metadata: {exc}") from None
    schema_contract.require_settable(metadata.properties, applies=False, what=f"view {name}")
    view_location = _placed(caller, schema, metadata.location)
    try:
        view_id = uuid.UUID(str(metadata.view_uuid))
    except ValueError:
        raise InvalidParameter(f"{location} has a view-uuid that is not a UUID.") from None
    with transaction.atomic():
        table = new_row(caller=caller, schema=schema, name=name, table_id=row_id_for(view_id),
                         location=view_location, table_type=TableType.VIEW, view=True)
        IcebergMetadata.objects.create(table=table, metadata_location=location, metadata_json=text)
        table.view_definition = formats.view_sql(metadata)
        table.save()
        audit.record(principal=caller.name, action="registerIcebergView", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id, details={"metadata_location": location})
    return Loaded(table, location, text, {})


# -- notifications ----------------------------------------------------------------------------------
def _payload(name: str, body: dict) -> tuple[str, dict]:
    kind = body.get("notification-type")
    if not isinstance(kind, str) or kind not in NOTIFICATION_TYPES:
        raise InvalidParameter(f"notification-type must be one of {', '.join(sorted(NOTIFICATION_TYPES))}.")
    payload = body.get("payload")
    if not isinstance(payload, dict):
        raise InvalidParameter("payload is required (a TableUpdateNotification).")
    validate_name(name, field="table-name", iceberg=True)  # a CREATE names a new table by the path
    if payload.get("table-name") != name:
        raise InvalidParameter(f"payload.table-name must be the table of the path ({name}).")
    timestamp = payload.get("timestamp")
    if not isinstance(timestamp, int) or isinstance(timestamp, bool) or not 0 <= timestamp < 2**63:
        raise InvalidParameter("payload.timestamp must be a non-negative integer (milliseconds).")
    for field in ("table-uuid", "metadata-location"):
        if not isinstance(payload.get(field), str) or not payload[field]:
            raise InvalidParameter(f"payload.{field} is required.")
    return kind, payload


def _placed(caller: Principal, schema, location, *, table: Table | None = None) -> str:
    """The table or view location a metadata file declares is where the catalog will vend
    credentials for and purge: it passes the location rule as any table's does (in an external
    location the caller may use, overlapping no other securable but `table` itself, when it exists),
    so that a file in the caller's own external location cannot point the catalog at someone
    else's storage."""
    if not isinstance(location, str) or not location:
        raise InvalidParameter("The metadata declares no location.")
    own = (table.id,) if table is not None else ()
    return locations.place_securable(caller=caller, schema=schema, value=location, exclude_ids=own,
                                     field="the metadata's location").url


def _parse_table(location: str, text: str, table_uuid: str):
    try:
        metadata = formats.parse_metadata(text)
    except ValueError as exc:
        raise InvalidParameter(f"{location} is not Iceberg table metadata: {exc}") from None
    if str(metadata.table_uuid) != table_uuid.lower():
        raise InvalidParameter(f"{location} describes table {metadata.table_uuid}, not {table_uuid}.")
    return metadata


def _apply(table: Table, location: str, text: str, metadata, timestamp: int, placed: str) -> None:
    require_files_inside(text, placed)
    IcebergMetadata.objects.update_or_create(table=table, defaults={
        "metadata_location": location, "metadata_json": text, "notification_timestamp": timestamp})
    replace_columns(table, formats.columns_of(metadata))
    table.properties = dict(metadata.properties)
    table.storage_location = placed


def send_notification(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> None:
    schema, access = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    kind, payload = _payload(name, body)
    timestamp, location = payload["timestamp"], payload["metadata-location"]
    if kind == "VALIDATE":
        authz.require(caller, schema, Action.CREATE_TABLE, access=access)
        require_external_location(caller, location, Privilege.CREATE_EXTERNAL_TABLE)
        return
    with transaction.atomic():
        table = (Table.objects.select_related("schema__catalog").select_for_update(of=("self",))
                 .filter(schema=schema, name=name).first())
        # A table the caller cannot see answers as one that does not exist, before anything about
        # it (its type, id, timestamps, files) is looked at.
        hidden = table is not None and not authz.allows(caller, table, Action.SEE)
        if table is None or hidden:
            if kind == "DROP":
                raise TableDoesNotExist(f"Table {schema.name}.{name} does not exist.")
            authz.require(caller, schema, Action.CREATE_TABLE, access=access)
            if hidden:
                raise AlreadyExists(f"Table {schema.name}.{name} already exists.")
            text = _read(caller, location, field="payload.metadata-location")
            metadata = _parse_table(location, text, payload["table-uuid"])
            schema_contract.require_settable(metadata.properties, applies=True, what=f"table {schema.full_name}.{name}")
            placed = _placed(caller, schema, metadata.location)
            table = new_row(caller=caller, schema=schema, name=name, table_id=row_id_for(metadata.table_uuid),
                             location=placed, table_type=TableType.EXTERNAL)
            _apply(table, location, text, metadata, timestamp, placed)
            table.save()
            action = "createTableByNotification"
        else:
            if kind == "DROP":
                authz.require(caller, table, Action.DROP, missing=None,
                              refused=f"Only the owner of {table.full_name} or a metastore admin may drop it.")
            else:
                table_access = require_write(caller, table)
            state = IcebergMetadata.objects.filter(table=table).first()
            if (table.data_source_format != DataSourceFormat.ICEBERG or table.table_type != TableType.EXTERNAL
                    or state is None):
                raise InvalidParameter(
                    f"{table.full_name} is not an external Iceberg table: its metadata is not another system's.")
            if str(table.id) != payload["table-uuid"].lower():
                raise InvalidParameter(f"{table.full_name} is table {table.id}, not {payload['table-uuid']}.")
            if state.notification_timestamp is not None and timestamp <= state.notification_timestamp:
                raise AlreadyExists(
                    f"A notification with a newer timestamp ({state.notification_timestamp}) has been admitted "
                    f"for table {table.full_name}.")
            if kind == "DROP":
                full_name, table_id = table.full_name, table.id
                drop_table_row(table, dropped_by=caller.name, purge=False)
                audit.record(principal=caller.name, action="dropTableByNotification", securable_type="table",
                             securable_name=full_name, securable_id=table_id, details={"timestamp": timestamp})
                return
            text = _read(caller, location, field="payload.metadata-location", own_id=table.id)
            metadata = _parse_table(location, text, payload["table-uuid"])
            before = formats.parse_metadata(state.metadata_json)
            authz.require_alter(table_access, definition.iceberg_metadata_changes(before, metadata))
            schema_contract.enforce(table, before.properties, metadata.properties,
                                    lambda: iceberg_breaking_changes(before, metadata), applies=True,
                                    table_format="iceberg")
            _apply(table, location, text, metadata, timestamp, _placed(caller, schema, metadata.location, table=table))
            table.updated_at = timezone.now()
            table.updated_by = caller.name
            table.save()
            action = "updateTableByNotification"
        audit.record(principal=caller.name, action=action, securable_type="table", securable_name=table.full_name,
                     securable_id=table.id, details={"timestamp": timestamp, "metadata_location": location,
                                                     "notification_type": kind})
