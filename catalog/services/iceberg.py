"""The Iceberg REST catalog over the one namespace: a warehouse (prefix) is a catalog, a namespace
is a schema, and an Iceberg table or view is a row of the one Table model. Every commit locks the
table row, checks requirements against the current metadata, applies updates with pyiceberg's
models (commits/iceberg.py), writes the next metadata file and swaps it in the same transaction."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from catalog import locations, resolve
from catalog.choices import DataSourceFormat, Privilege, SecurableType, TableType
from catalog.models import Catalog, Principal, Schema, Table
from catalog.services import audit, grants, schemas
from catalog.services.common import validate_properties
from catalog.services.managed_tables import managed_location
from catalog.services.names import namespace_path, validate_name
from catalog.services.tables import drop_table_row, replace_columns
from catalog.storage import StorageError, StorageObjectNotFound, parse, storage_for
from commits import iceberg
from commits.models import IcebergMetadata, IcebergMetricsReport
from ucweb.errors import (
    AlreadyExists,
    CatalogDoesNotExist,
    CommitFailed,
    InvalidParameter,
    SchemaDoesNotExist,
    TableAlreadyExists,
    TableDoesNotExist,
    UnprocessableEntity,
    ViewDoesNotExist,
)

NAMESPACE_SEPARATOR = "\x1f"


# -- names ---------------------------------------------------------------------------------------
# A warehouse, namespace, table or view that the caller may not see answers exactly as one that
# does not exist (catalog.resolve decides what a caller sees).
def _no_warehouse(prefix: str) -> CatalogDoesNotExist:
    return CatalogDoesNotExist(f"Warehouse (catalog) '{prefix}' does not exist.")


def warehouse(prefix: str, caller: Principal) -> Catalog:
    catalog, _ = resolve.reveal(caller, Catalog.objects.filter(name=prefix).first(), SecurableType.CATALOG,
                                _no_warehouse(prefix))
    return catalog


def namespace_levels(namespace) -> list[str]:
    """A namespace in a path is its levels joined by the unit separator (0x1F)."""
    if isinstance(namespace, list):
        return namespace
    return namespace.split(NAMESPACE_SEPARATOR)


def _schema_access(caller: Principal, catalog: Catalog, levels: list[str], *,
                   missing=SchemaDoesNotExist) -> tuple[Schema, grants.Access]:
    return resolve.namespace(caller, catalog, levels, missing=missing)


def _schema(caller: Principal, catalog: Catalog, levels: list[str], *, missing=SchemaDoesNotExist) -> Schema:
    return _schema_access(caller, catalog, levels, missing=missing)[0]


# -- namespaces ------------------------------------------------------------------------------------
def list_namespaces(*, caller: Principal, prefix: str, parent: str | None):
    catalog = warehouse(prefix, caller)
    parent_schema = _schema(caller, catalog, namespace_levels(parent)) if parent else None
    return schemas.visible_schemas(caller=caller, catalog_name=catalog.name).filter(parent=parent_schema)


def create_namespace(*, caller: Principal, prefix: str, namespace, properties) -> Schema:
    if not isinstance(namespace, list) or not all(isinstance(level, str) for level in namespace):
        raise InvalidParameter("namespace must be an array of strings.")
    if not namespace:
        raise InvalidParameter("namespace must have at least one level.")
    properties = validate_properties(properties)
    location = properties.get("location")
    catalog = warehouse(prefix, caller)
    # A nested namespace is a schema inside its parent, which must exist (Polaris does the same).
    parent = _schema(caller, catalog, namespace[:-1]) if len(namespace) > 1 else None
    schema = schemas.create_schema(
        caller=caller, name=namespace[-1], catalog_name=catalog.name, parent=parent,
        comment=properties.get("comment"), properties=properties, storage_root=location, iceberg=True,
    )
    return schema


def load_namespace(*, caller: Principal, prefix: str, namespace: str) -> Schema:
    return _schema(caller, warehouse(prefix, caller), namespace_levels(namespace))


def drop_namespace(*, caller: Principal, prefix: str, namespace: str) -> None:
    schema = _schema(caller, warehouse(prefix, caller), namespace_levels(namespace))
    schemas.delete_schema(caller=caller, full_name=schema.full_name, force=False)


@transaction.atomic
def update_namespace_properties(*, caller: Principal, prefix: str, namespace: str, removals, updates) -> dict:
    schema, access = _schema_access(caller, warehouse(prefix, caller), namespace_levels(namespace))
    access.require(access.owns(), f"Only the owner of namespace {schema.name} may change its properties.")
    removals = removals or []
    if not isinstance(removals, list) or not all(isinstance(key, str) for key in removals):
        raise InvalidParameter("removals must be an array of property names.")
    updates = validate_properties(updates, field="updates")
    overlap = sorted(set(removals) & set(updates))
    if overlap:
        raise UnprocessableEntity(f"Properties cannot be both updated and removed: {', '.join(overlap)}.")
    properties = dict(schema.properties)
    removed = [key for key in removals if key in properties]
    missing = [key for key in removals if key not in properties]
    for key in removed:
        del properties[key]
    properties.update(updates)
    schema.properties = properties
    if "comment" in updates or "comment" in removed:
        schema.comment = updates.get("comment")
    schema.updated_at = timezone.now()
    schema.updated_by = caller.name
    schema.save()
    audit.record(
        principal=caller.name, action="updateNamespaceProperties", securable_type="schema",
        securable_name=schema.full_name, securable_id=schema.id,
        details={"updated": sorted(updates), "removed": removed},
    )
    # `missing` is optional in the spec, but pyiceberg requires the field: always an array.
    return {"updated": sorted(updates), "removed": removed, "missing": missing}


# -- reading tables and views ------------------------------------------------------------------------
def _kind_filter(view: bool) -> Q:
    if view:
        return Q(table_type=TableType.VIEW, data_source_format=DataSourceFormat.ICEBERG)
    return Q(data_source_format=DataSourceFormat.ICEBERG) & ~Q(table_type=TableType.VIEW)


def list_tables(*, caller: Principal, prefix: str, namespace: str, view: bool = False):
    catalog = warehouse(prefix, caller)
    schema = _schema(caller, catalog, namespace_levels(namespace))
    from catalog.services.tables import visible_tables

    # Identifiers are all a listing returns: no columns, no other fields.
    return (
        visible_tables(caller=caller, catalog_name=catalog.name, schema_name=schema.path)
        .filter(_kind_filter(view))
        .prefetch_related(None)
        .select_related(None)
        .select_related("schema")
        .only("name", "schema__name", "schema__path")
    )


def _find(caller: Principal, prefix: str, namespace, name: str, *, view: bool,
          for_update: bool = False) -> tuple[Table, grants.Access]:
    """The table or view and the caller's access to it. A hit costs three queries: the warehouse,
    the table with its metadata, and the caller's grants on the chain."""
    missing = ViewDoesNotExist if view else TableDoesNotExist
    catalog = Catalog.objects.filter(name=prefix).first()
    if catalog is None:
        raise _no_warehouse(prefix)
    levels = namespace_levels(namespace)
    # Spark resolves `db.t.snapshots` by loading table `snapshots` in namespace `db.t` first: a
    # namespace that does not exist must answer "no such table", not "no such namespace".
    if not all(levels):
        warehouse(prefix, caller)  # a warehouse the caller may not see does not exist either
        raise missing(f"Namespace {'.'.join(levels)} does not exist.")
    if for_update:
        queryset = Table.objects.select_related("schema__catalog").select_for_update(of=("self",))
    else:
        queryset = Table.objects.select_related("schema__catalog", "iceberg")
    table = queryset.filter(_kind_filter(view), schema__catalog=catalog, schema__path=namespace_path(levels), name=name).first()
    if table is not None and for_update:
        table = _with_current_metadata([table]).get(table.id)
    what = "View" if view else "Table"
    not_found = missing(f"{what} {'.'.join(levels)}.{name} does not exist.")
    if table is None or not hasattr(table, "iceberg"):
        warehouse(prefix, caller)  # a warehouse the caller may not see does not exist either
        raise not_found
    access = grants.Access.load(caller, table)
    level = resolve.hidden_level(access, SecurableType.TABLE)
    if level is None:
        return table, access
    raise resolve.hidden(_no_warehouse(prefix) if level == len(access.chain) - 1 else not_found)


def _require(access: grants.Access, table: Table, *privileges: str) -> grants.Access:
    access.require(
        any(access.has(privilege) for privilege in privileges),
        f"Missing {' or '.join(privileges)} on {table.full_name}.",
    )
    return access


def storage_config(location: str | None) -> dict:
    """FileIO settings a client needs for the table's storage (never long-lived secrets)."""
    if not location or not location.startswith(("s3://", "s3a://")):
        return {}
    config = {"s3.path-style-access": "true"}
    endpoint = getattr(settings, "UCWEB_S3_ENDPOINT_URL", None)
    region = getattr(settings, "UCWEB_S3_REGION", None)
    if endpoint:
        config["s3.endpoint"] = endpoint
    if region:
        config["s3.region"] = config["client.region"] = region
    return config


@dataclass
class Loaded:
    table: Table
    metadata_location: str
    metadata_json: str
    config: dict
    storage_credentials: list | None = None  # delegated access (catalog.services.iceberg_credentials)

    def etag(self, snapshots: str | None = None) -> str:
        return etag_for(self.metadata_location, snapshots)


def etag_for(metadata_location: str, snapshots: str | None = None) -> str:
    """One tag per metadata version and representation: `snapshots=refs` leaves snapshots out,
    so its body gets another tag than the full one (`all`, the default)."""
    representation = "refs" if snapshots == "refs" else "all"
    digest = hashlib.sha256(f"{metadata_location}\n{representation}".encode()).hexdigest()
    return f'"{digest[:32]}"'


def load_table(*, caller: Principal, prefix: str, namespace: str, name: str, view: bool = False) -> Loaded:
    table, access = _find(caller, prefix, namespace, name, view=view)
    _require(access, table, Privilege.SELECT, Privilege.MODIFY)
    return Loaded(table, table.iceberg.metadata_location, table.iceberg.metadata_json,
                  storage_config(table.storage_location))


def only_referenced_snapshots(metadata_json: str) -> str:
    """`snapshots=refs`: keep the snapshots that a branch or tag points at."""
    data = json.loads(metadata_json)
    referenced = {ref["snapshot-id"] for ref in (data.get("refs") or {}).values()}
    if data.get("current-snapshot-id") is not None:
        referenced.add(data["current-snapshot-id"])
    data["snapshots"] = [s for s in data.get("snapshots") or [] if s["snapshot-id"] in referenced]
    return json.dumps(data)


def table_exists(*, caller: Principal, prefix: str, namespace: str, name: str, view: bool = False) -> None:
    table, access = _find(caller, prefix, namespace, name, view=view)
    _require(access, table, Privilege.SELECT, Privilege.MODIFY)


# -- writing -------------------------------------------------------------------------------------------
def _columns_of(metadata) -> list[dict]:
    """The current Iceberg schema as Unity Catalog columns, so the UC API shows Iceberg tables."""
    schema = metadata.schema() if hasattr(metadata, "schema") and callable(metadata.schema) else None
    if schema is None:
        return []
    partition_sources = []
    if hasattr(metadata, "spec"):
        partition_sources = [field.source_id for field in metadata.spec().fields]
    return [
        {
            "name": field.name,
            "type_name": _uc_type_name(field.field_type),
            "type_text": str(field.field_type),
            "type_json": json.dumps({"name": field.name, "type": json.loads(field.field_type.model_dump_json()),
                                     "nullable": not field.required, "id": field.field_id}),
            "type_precision": getattr(field.field_type, "precision", None),
            "type_scale": getattr(field.field_type, "scale", None),
            "type_interval_type": None,
            "position": position,
            "comment": field.doc,
            "nullable": not field.required,
            "partition_index": partition_sources.index(field.field_id) if field.field_id in partition_sources else None,
        }
        for position, field in enumerate(schema.fields)
    ]


_UC_TYPES = {
    "boolean": "BOOLEAN", "int": "INT", "long": "LONG", "float": "FLOAT", "double": "DOUBLE",
    "date": "DATE", "timestamp": "TIMESTAMP_NTZ", "timestamptz": "TIMESTAMP", "timestamp_ns": "TIMESTAMP_NTZ",
    "timestamptz_ns": "TIMESTAMP", "string": "STRING", "uuid": "STRING", "binary": "BINARY", "time": "LONG",
}


def _uc_type_name(field_type) -> str:
    text = str(field_type)
    if text.startswith("decimal"):
        return "DECIMAL"
    if text.startswith("fixed"):
        return "BINARY"
    if text.startswith("struct"):
        return "STRUCT"
    if text.startswith("list"):
        return "ARRAY"
    if text.startswith("map"):
        return "MAP"
    return _UC_TYPES.get(text, "USER_DEFINED_TYPE")


def _write_metadata_file(location: str, payload: str) -> None:
    try:
        if not storage_for(location).put_if_absent(location, payload.encode()):
            raise AlreadyExists(f"Metadata file {location} exists already.")
    except StorageError as exc:
        raise InvalidParameter(f"Cannot write table metadata to {location}: {exc}") from None


def _swap(table: Table, metadata, *, current_location: str | None) -> IcebergMetadata:
    new_location = iceberg.next_metadata_location(metadata.location, current_location)
    payload = iceberg.serialize(metadata)
    _write_metadata_file(new_location, payload)
    state, _ = IcebergMetadata.objects.update_or_create(
        table=table, defaults={"metadata_location": new_location, "metadata_json": payload}
    )
    if not isinstance(metadata, iceberg.ViewMetadata):
        replace_columns(table, _columns_of(metadata))
        table.properties = dict(metadata.properties)
    table.storage_location = metadata.location
    return state


def _require_create(caller: Principal, schema: Schema) -> None:
    access = grants.Access.load(caller, schema)
    access.require(access.has(Privilege.CREATE_TABLE), f"Missing CREATE TABLE on schema {schema.full_name}.")


def _require_free_name(schema: Schema, name: str) -> None:
    """A name that is taken answers "already exists" before anything about the location."""
    if Table.objects.filter(schema=schema, name=name).exists():
        raise TableAlreadyExists(f"Table {schema.full_name}.{name} already exists.")


def _new_row(*, caller, schema, name, table_id, location, table_type, view=False) -> Table:
    if Table.objects.filter(schema=schema, name=name).exists():
        raise TableAlreadyExists(f"Table {schema.full_name}.{name} already exists.")
    if Table.objects.filter(id=table_id).exists():
        table_id = uuid.uuid4()
    try:
        with transaction.atomic():
            return Table.objects.create(
                id=table_id, schema=schema, name=name, owner=caller.name, created_by=caller.name,
                updated_at=timezone.now(), updated_by=caller.name,
                table_type=TableType.VIEW if view else table_type, data_source_format=DataSourceFormat.ICEBERG,
                storage_location=location,
            )
    except IntegrityError:
        raise TableAlreadyExists(f"Table {schema.full_name}.{name} already exists.") from None


def _prepare_location(location: str) -> None:
    """Creates the `metadata/` and `data/` folders of a table on a local file system. Object
    stores have no folders, but local writers that do not create parent directories (DuckDB)
    fail to write the first manifest of a table created in the same transaction (a staged
    create, or CREATE TABLE AS), when no metadata file has been written yet."""
    try:
        local = parse(location)
    except StorageError:
        return
    if local.scheme != "file":
        return
    for folder in ("metadata", "data"):
        try:
            os.makedirs(os.path.join(local.path, folder), exist_ok=True)
        except OSError as exc:
            raise InvalidParameter(f"Cannot create {location}/{folder}: {exc.strerror or exc}") from None


def _location_for(caller: Principal, schema: Schema, table_id, requested) -> tuple[str, str]:
    """Where a new table or view goes: managed storage, or a location the caller may use
    (catalog.locations: the one location rule, as for UC EXTERNAL tables)."""
    if requested is not None:
        placed = locations.place_securable(caller=caller, schema=schema, value=requested, securable_id=table_id)
        return placed.url, TableType.MANAGED if placed.managed else TableType.EXTERNAL
    return managed_location(schema, table_id), TableType.MANAGED


def _moved(caller: Principal, table: Table, metadata):
    """The metadata of an existing table or view after a `set-location` update has been checked by
    the location rule (with the location in canonical form); unchanged when it does not move."""
    if metadata.location == table.storage_location:
        return metadata
    placed = locations.place_securable(caller=caller, schema=table.schema, value=metadata.location,
                                       securable_id=table.id)
    return metadata.model_copy(update={"location": placed.url})


def create_table(*, caller: Principal, prefix: str, namespace: str, body: dict) -> Loaded:
    catalog = warehouse(prefix, caller)
    schema = _schema(caller, catalog, namespace_levels(namespace))
    name = validate_name(body.get("name"), iceberg=True)
    if body.get("schema") is None:
        raise InvalidParameter("schema is required.")
    properties = validate_properties(body.get("properties"))
    stage_only = body.get("stage-create", False)
    if not isinstance(stage_only, bool):
        raise InvalidParameter("stage-create must be a boolean.")
    _require_create(caller, schema)
    _require_free_name(schema, name)
    table_id = uuid.uuid4()
    location, table_type = _location_for(caller, schema, table_id, body.get("location"))
    metadata = iceberg.create_metadata(
        schema=body["schema"], partition_spec=body.get("partition-spec"), write_order=body.get("write-order"),
        location=location, properties=properties, table_uuid=table_id,
    )
    if stage_only:
        if Table.objects.filter(schema=schema, name=name).exists():
            raise TableAlreadyExists(f"Table {schema.full_name}.{name} already exists.")
        _prepare_location(location)
        return Loaded(None, None, iceberg.serialize(metadata), storage_config(location))
    with transaction.atomic():
        table = _new_row(caller=caller, schema=schema, name=name, table_id=table_id, location=location,
                         table_type=table_type)
        state = _swap(table, metadata, current_location=None)
        table.save()
        audit.record(principal=caller.name, action="createIcebergTable", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id)
    return Loaded(table, state.metadata_location, state.metadata_json, storage_config(location))


@dataclass
class Change:
    levels: list[str]
    name: str
    requirements: list
    updates: list


def parse_change(data, *, identifier=None) -> Change:
    if not isinstance(data, dict):
        raise InvalidParameter("A table change must be an object.")
    if identifier is None:
        identifier = iceberg.parse_identifier(data.get("identifier"))
    return Change(list(identifier[0]), identifier[1], iceberg.parse_requirements(data.get("requirements")),
                  iceberg.parse_updates(data.get("updates")))


@dataclass
class _Planned:
    """One table change whose requirements hold, with the metadata it leads to; nothing written yet."""

    change: Change
    table: Table | None  # None: the change creates the table (assert-create)
    schema: Schema | None
    metadata: object
    managed: bool = False  # a created table: its location is the managed one the catalog assigned


def _plan(caller: Principal, catalog: Catalog, change: Change, locked: dict) -> _Planned:
    """Checks access and requirements and computes the next metadata, writing nothing."""
    table = locked.get((tuple(change.levels), change.name))
    creating = any(getattr(r, "type", None) == "assert-create" for r in change.requirements)
    if table is None:
        if not creating:
            raise TableDoesNotExist(f"Table {'.'.join(change.levels)}.{change.name} does not exist.")
        iceberg.check_requirements(change.requirements, None)
        schema = _schema(caller, catalog, change.levels)
        _require_create(caller, schema)
        validate_name(change.name, iceberg=True)
        if Table.objects.filter(schema=schema, name=change.name).exists():
            raise CommitFailed(f"Requirement failed: table {schema.full_name}.{change.name} already exists.")
        metadata = iceberg.apply_updates(None, change.updates, metadata_location=None)
        placed = locations.place_securable(caller=caller, schema=schema, value=metadata.location,
                                           securable_id=metadata.table_uuid)
        metadata = metadata.model_copy(update={"location": placed.url})
        return _Planned(change, None, schema, metadata, managed=placed.managed)
    access = grants.Access.load(caller, table)
    if resolve.hidden_level(access, SecurableType.TABLE) is not None:
        raise resolve.hidden(TableDoesNotExist(f"Table {'.'.join(change.levels)}.{change.name} does not exist."))
    _require(access, table, Privilege.MODIFY)
    if not change.requirements and not change.updates:
        raise InvalidParameter(f"A commit of {table.full_name} needs at least one requirement or update.")
    current = iceberg.parse_metadata(table.iceberg.metadata_json)
    iceberg.check_requirements(change.requirements, current)
    metadata = iceberg.apply_updates(current, change.updates, metadata_location=table.iceberg.metadata_location)
    grants.require_policy_unchanged_or_owner(access, current.properties, metadata.properties)
    return _Planned(change, table, None, _moved(caller, table, metadata))


def _write_planned(caller: Principal, planned: _Planned) -> IcebergMetadata:
    """Writes the next metadata file of a planned change and swaps it in (the caller's transaction)."""
    change, table, metadata = planned.change, planned.table, planned.metadata
    if table is None:
        schema = planned.schema
        table_type = TableType.MANAGED if planned.managed else TableType.EXTERNAL
        table = _new_row(caller=caller, schema=schema, name=change.name, table_id=metadata.table_uuid,
                         location=metadata.location, table_type=table_type)
        _prepare_location(metadata.location)
        state = _swap(table, metadata, current_location=None)
    else:
        state = _swap(table, metadata, current_location=table.iceberg.metadata_location)
    table.updated_at = timezone.now()
    table.updated_by = caller.name
    table.save()
    audit.record(principal=caller.name, action="commitIcebergTable", securable_type="table",
                 securable_name=table.full_name, securable_id=table.id,
                 details={"updates": [getattr(u, "action", "") for u in change.updates]})
    return state


def _lock(catalog: Catalog, changes: list[Change]) -> dict:
    """Locks every table a commit touches, in one fixed order (by id), so that two transactions
    over the same tables cannot wait on each other."""
    keys = {}
    for change in changes:
        if change.levels and all(change.levels):
            keys[(tuple(change.levels), change.name)] = True
    query = Q(pk__in=[])
    for (levels, name) in keys:
        query |= Q(schema__path=namespace_path(levels), name=name)
    rows = list(
        Table.objects.select_related("schema__catalog").select_for_update(of=("self",))
        .filter(query, _kind_filter(False), schema__catalog=catalog).order_by("id")
    )
    return {(tuple(row.schema.levels), row.name): row for row in _with_current_metadata(rows).values()}


def _with_current_metadata(locked: list[Table]) -> dict:
    """The locked tables that have Iceberg metadata, each with the metadata as it is now.

    The metadata is read by a statement of its own, after the lock is held: PostgreSQL gives a
    `SELECT ... FOR UPDATE` that waited for another commit the newest version of the locked
    row only, and joined rows as they were when the statement began. Metadata read in the
    locking statement could be the version a concurrent commit has just replaced, and a
    requirement checked against it would pass where it must fail (a lost update)."""
    states = {state.table_id: state for state in IcebergMetadata.objects.filter(table__in=locked)}
    current = {}
    for table in locked:
        state = states.get(table.id)
        if state is not None:
            table.iceberg = state
            current[table.id] = table
    return current


def commit_table(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> Loaded:
    catalog = warehouse(prefix, caller)
    change = parse_change(body, identifier=(namespace_levels(namespace), name))
    with transaction.atomic():
        locked = _lock(catalog, [change])
        state = _write_planned(caller, _plan(caller, catalog, change, locked))
    return Loaded(state.table, state.metadata_location, state.metadata_json, storage_config(state.table.storage_location))


def commit_transaction(*, caller: Principal, prefix: str, body: dict) -> None:
    catalog = warehouse(prefix, caller)
    table_changes = body.get("table-changes")
    if not isinstance(table_changes, list) or not table_changes:
        raise InvalidParameter("table-changes must be a non-empty array.")
    changes = [parse_change(item) for item in table_changes]
    seen = set()
    for change in changes:
        key = (tuple(change.levels), change.name)
        if key in seen:
            raise InvalidParameter(f"Table {'.'.join(change.levels)}.{change.name} appears twice in one transaction.")
        seen.add(key)
    with transaction.atomic():
        locked = _lock(catalog, changes)
        # Every requirement of every table is checked before any metadata file is written, so a
        # transaction that fails leaves no trace in storage either.
        planned = [_plan(caller, catalog, change, locked) for change in changes]
        for item in planned:
            _write_planned(caller, item)


def drop_table(*, caller: Principal, prefix: str, namespace: str, name: str, purge: bool, view: bool = False) -> None:
    with transaction.atomic():
        table, access = _find(caller, prefix, namespace, name, view=view, for_update=True)
        access.require(access.owns(), f"Only the owner of {table.full_name} or a metastore admin may drop it.")
        full_name, table_id = table.full_name, table.id
        drop_table_row(table, dropped_by=caller.name, purge=purge)
        audit.record(principal=caller.name, action="dropIcebergView" if view else "dropIcebergTable",
                     securable_type="table", securable_name=full_name, securable_id=table_id,
                     details={"purge": purge})


def rename(*, caller: Principal, prefix: str, body: dict, view: bool = False) -> None:
    catalog = warehouse(prefix, caller)
    source_levels, source_name = iceberg.parse_identifier(body.get("source"))
    target_levels, target_name = iceberg.parse_identifier(body.get("destination"))
    validate_name(target_name, field="destination.name", iceberg=True)
    with transaction.atomic():
        table, access = _find(caller, prefix, source_levels, source_name, view=view, for_update=True)
        access.require(access.owns(), f"Only the owner of {table.full_name} may rename it.")
        target_schema = _schema(caller, catalog, target_levels)
        if target_schema.id != table.schema_id:
            _require_create(caller, target_schema)
        if Table.objects.filter(schema=target_schema, name=target_name).exists():
            raise TableAlreadyExists(f"Table {target_schema.full_name}.{target_name} already exists.")
        old_name = table.full_name
        table.schema = target_schema
        table.name = target_name
        table.updated_at = timezone.now()
        table.updated_by = caller.name
        table.save()
        from catalog.models import Grant

        Grant.objects.filter(securable_id=table.id).update(securable_name=table.full_name)
        audit.record(principal=caller.name, action="renameIcebergTable", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id, details={"from": old_name})


def register_table(*, caller: Principal, prefix: str, namespace: str, body: dict) -> Loaded:
    catalog = warehouse(prefix, caller)
    schema = _schema(caller, catalog, namespace_levels(namespace))
    name = validate_name(body.get("name"), iceberg=True)
    location = body.get("metadata-location")
    if not isinstance(location, str) or not location:
        raise InvalidParameter("metadata-location is required.")
    if body.get("overwrite"):
        raise InvalidParameter("overwrite is not supported: drop the table first.")
    _require_create(caller, schema)
    _require_free_name(schema, name)
    location = locations.registrable_metadata_file(caller=caller, value=location)
    text, metadata = _read_registered_metadata(location)
    placed = locations.place_securable(caller=caller, schema=schema, value=metadata.location,
                                       securable_id=metadata.table_uuid, field="the metadata's location")
    if not locations.is_within(location, placed.url):
        raise InvalidParameter(f"metadata-location {location} does not lie in the table location {placed.url} "
                               "that the metadata file names.")
    with transaction.atomic():
        table = _new_row(caller=caller, schema=schema, name=name, table_id=metadata.table_uuid,
                         location=placed.url, table_type=TableType.EXTERNAL)
        IcebergMetadata.objects.create(table=table, metadata_location=location, metadata_json=text)
        replace_columns(table, _columns_of(metadata))
        table.properties = dict(metadata.properties)
        table.save()
        audit.record(principal=caller.name, action="registerIcebergTable", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id, details={"metadata_location": location})
    return Loaded(table, location, text, storage_config(table.storage_location))


MAX_METADATA_BYTES = 64 * 1024 * 1024


def _read_registered_metadata(location: str):
    """The text and parsed metadata of a file to register. Whatever goes wrong, the answer is a
    400 that names the file and never quotes what is in it."""
    local = parse(location)
    if local.scheme == "file":  # a device, a pipe or a huge file is not read at all
        if not os.path.isfile(local.path):
            raise InvalidParameter(f"Cannot register {location}: it is not a regular file.")
        if os.path.getsize(local.path) > MAX_METADATA_BYTES:
            raise InvalidParameter(f"Cannot register {location}: it is larger than any table metadata file here.")
    try:
        data = storage_for(location).read(location)
    except StorageError as exc:
        reason = "it does not exist" if isinstance(exc, StorageObjectNotFound) else "it cannot be read"
        raise InvalidParameter(f"Cannot register {location}: {reason}.") from None
    if len(data) > MAX_METADATA_BYTES:
        raise InvalidParameter(f"Cannot register {location}: it is larger than any table metadata file here.")
    try:
        text = data.decode("utf-8")
        metadata = iceberg.parse_metadata(text)
    except Exception:  # any malformed file: never echo its content
        raise InvalidParameter(f"Cannot register {location}: it is not Iceberg table metadata.") from None
    if not isinstance(getattr(metadata, "location", None), str):
        raise InvalidParameter(f"Cannot register {location}: it is not Iceberg table metadata.")
    return text, metadata


def record_metrics(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> None:
    table, access = _find(caller, prefix, namespace, name, view=False)
    _require(access, table, Privilege.SELECT, Privilege.MODIFY)
    report_type = body.get("report-type")
    if report_type not in ("scan-report", "commit-report"):
        raise InvalidParameter("report-type must be scan-report or commit-report.")
    snapshot_id = body.get("snapshot-id")
    if snapshot_id is not None and (isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int)):
        raise InvalidParameter("snapshot-id must be an integer.")
    IcebergMetricsReport.objects.create(table=table, report_type=report_type, snapshot_id=snapshot_id,
                                        report=body, reported_by=caller.name)


def credentials(*, caller: Principal, prefix: str, namespace: str, name: str) -> dict:
    table, access = _find(caller, prefix, namespace, name, view=False)
    _require(access, table, Privilege.SELECT, Privilege.MODIFY)
    locations.require_own_location(table.storage_location, own_id=table.id, what=f"table {table.full_name}")
    return {"storage-credentials": [{"prefix": table.storage_location, "config": storage_config(table.storage_location)}]}


# -- views -----------------------------------------------------------------------------------------------
def _view_sql(metadata) -> str | None:
    """The SQL of the current view version (the first SQL representation)."""
    version = next(v for v in metadata.versions if v.version_id == metadata.current_version_id)
    for representation in version.representations:
        representation = getattr(representation, "root", representation)
        if getattr(representation, "type", None) == "sql":
            return representation.sql
    return None


def create_view(*, caller: Principal, prefix: str, namespace: str, body: dict) -> Loaded:
    catalog = warehouse(prefix, caller)
    schema = _schema(caller, catalog, namespace_levels(namespace))
    name = validate_name(body.get("name"), iceberg=True)
    properties = validate_properties(body.get("properties"))
    _require_create(caller, schema)
    view_id = uuid.uuid4()
    location, _ = _location_for(caller, schema, view_id, body.get("location"))
    metadata = iceberg.create_view_metadata(schema=body.get("schema"), view_version=body.get("view-version"),
                                            location=location, properties=properties)
    with transaction.atomic():
        table = _new_row(caller=caller, schema=schema, name=name, table_id=view_id, location=location,
                         table_type=TableType.VIEW, view=True)
        state = _swap(table, metadata, current_location=None)
        table.view_definition = _view_sql(metadata)
        table.save()
        audit.record(principal=caller.name, action="createIcebergView", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id)
    return Loaded(table, state.metadata_location, state.metadata_json, {})


def replace_view(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> Loaded:
    with transaction.atomic():
        table, access = _find(caller, prefix, namespace, name, view=True, for_update=True)
        _require(access, table, Privilege.MODIFY)
        if not body.get("requirements") and not body.get("updates"):
            raise InvalidParameter(f"A commit of view {table.full_name} needs at least one requirement or update.")
        current = iceberg.parse_view_metadata(table.iceberg.metadata_json)
        iceberg.check_view_requirements(body.get("requirements"), current)
        metadata = _moved(caller, table, iceberg.apply_view_updates(current, body.get("updates")))
        grants.require_policy_unchanged_or_owner(access, current.properties, metadata.properties)
        state = _swap(table, metadata, current_location=table.iceberg.metadata_location)
        table.view_definition = _view_sql(metadata)
        table.updated_at = timezone.now()
        table.updated_by = caller.name
        table.save()
        audit.record(principal=caller.name, action="replaceIcebergView", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id)
    return Loaded(table, state.metadata_location, state.metadata_json, {})

