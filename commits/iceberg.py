"""Iceberg tables and views: create, register, drop, rename, replace a view, record metrics. Table
commits (updateTable, transactions/commit) go through commits.engine; the metadata rules are in
commits.formats.iceberg (pure); names, namespaces and reading are catalog.services.iceberg."""

from __future__ import annotations

import json
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

from django.db import IntegrityError, transaction
from django.utils import timezone

from catalog import authz, locations, policy_properties, resolve, schema_contract
from catalog.authz import Action
from catalog.choices import AuditAction, DataSourceFormat, TableType
from catalog.models import Grant, Principal, Schema, Table
from catalog.services import audit, iceberg_credentials
from catalog.services import iceberg as catalog_iceberg
from catalog.services.iceberg import Loaded
from catalog.services.common import validate_properties
from catalog.services.managed_tables import managed_location
from catalog.names import validate_name
from catalog.services import dropped
from catalog.services.tables import replace_columns
from catalog.storage import StorageError, StorageObjectNotFound, parse, storage_for, storage_within
from commits.formats import iceberg as formats
from commits.formats import iceberg_view
from commits.models import IcebergMetadata, IcebergMetricsReport
from ucweb import client_json
from ucweb.errors import AlreadyExists, InvalidParameter, TableAlreadyExists


def write_metadata_file(table_location: str, location: str, payload: str) -> None:
    """Writes the new metadata file `location` of the table at `table_location`, confined to the
    table: a symbolic link planted in its folders leads the write nowhere else (400)."""
    try:
        if not storage_within(table_location).put_if_absent(location, payload.encode()):
            raise AlreadyExists(f"Metadata file {location} exists already.")
    except StorageError as exc:
        raise InvalidParameter(f"Cannot write table metadata to {location}: {exc}") from None


# A commit's metadata file is written, and made durable, on a thread of its own while the commit's
# rows go to the database: the write's fsyncs and the statement's round trip overlap instead of
# adding up. The transaction commits only once the file is written (`FileWrites.wait`), so no row
# ever names a file that is not there. Past this many files in flight in one process a commit
# writes its own: a write queued behind others would keep it waiting longer than writing it.
_MOST_FILES_IN_FLIGHT = 16
_in_flight = threading.BoundedSemaphore(_MOST_FILES_IN_FLIGHT)
_writers: tuple[int, ThreadPoolExecutor] | None = None
_writers_lock = threading.Lock()


def _file_writers() -> ThreadPoolExecutor:
    """This process's writer threads (a forked process starts its own: it has none of its parent's)."""
    global _writers
    with _writers_lock:
        if _writers is None or _writers[0] != os.getpid():
            _writers = (os.getpid(), ThreadPoolExecutor(_MOST_FILES_IN_FLIGHT, thread_name_prefix="iceberg-metadata"))
        return _writers[1]


class FileWrites:
    """The metadata files of one commit being written; `wait` before the commit's transaction ends."""

    def __init__(self):
        self._futures = []

    def start(self, table_location: str, location: str, payload: str) -> None:
        if not _in_flight.acquire(blocking=False):
            write_metadata_file(table_location, location, payload)
            return
        try:
            future = _file_writers().submit(write_metadata_file, table_location, location, payload)
        except RuntimeError:  # the interpreter is shutting down: no new thread starts
            _in_flight.release()
            write_metadata_file(table_location, location, payload)
            return
        except BaseException:
            _in_flight.release()
            raise
        future.add_done_callback(lambda _: _in_flight.release())
        self._futures.append(future)

    def wait(self, *, raising: bool = True) -> None:
        """Waits for every write (none is left running whatever happens); with `raising`, raises
        the first one's error."""
        errors = []
        for future in self._futures:
            error = future.exception()
            if error is not None:
                errors.append(error)
        self._futures = []
        if errors and raising:
            raise errors[0]


SWAPPED_FIELDS = ["metadata_location", "metadata_json"]


def swap(table: Table, metadata: formats.Metadata, current: IcebergMetadata | None, *, columns: bool = True,
         save: bool = True, writes: FileWrites | None = None) -> IcebergMetadata:
    """Writes the next metadata file of `table` and points the table at it, in the caller's
    transaction: a new metadata row for a new table, else an update of `current` (read under the
    table's lock; `save` False when the caller writes it together with other rows). A table's UC
    columns and properties follow its metadata; `columns` False when the schema and partition
    spec are the same as before. With `writes`, the file is only started: the caller waits for
    it before its transaction commits."""
    location = formats.next_metadata_location(metadata.location, current.metadata_location if current else None)
    payload = metadata.text
    if writes is None:
        write_metadata_file(metadata.location, location, payload)
    else:
        writes.start(metadata.location, location, payload)
    if current is None:
        current = IcebergMetadata.objects.create(table=table, metadata_location=location, metadata_json=payload)
    else:
        current.metadata_location, current.metadata_json = location, payload
        if save:
            current.save(update_fields=SWAPPED_FIELDS)
    table.iceberg = current
    if not metadata.is_view:
        if columns:
            replace_columns(table, formats.columns_of(metadata.model))
        table.properties = dict(metadata.properties)
    table.storage_location = metadata.location
    return current


def require_free_name(schema: Schema, name: str) -> None:
    """A name that is taken answers "already exists" before anything about the location."""
    if Table.objects.filter(schema=schema, name=name).exists():
        raise TableAlreadyExists(f"Table {schema.full_name}.{name} already exists.")


def row_id_for(requested) -> uuid.UUID:
    """The id a new table's row gets: the uuid its metadata asks for, unless a row holds it already.
    Decided before the location is placed, because the managed location and the overlap check
    are keyed by it: a client naming another table's uuid must not be given that table's storage."""
    if requested is not None and not Table.with_dropped.filter(id=requested).exists():
        return requested
    return uuid.uuid4()


def new_row(*, caller, schema, name, table_id, location, table_type, view=False) -> Table:
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


def prepare_location(location: str) -> None:
    """Creates the `metadata/` and `data/` folders of a table where its storage has folders (a
    local file system): local writers that do not create parent folders (DuckDB) fail to write
    the first manifest of a table created in the same transaction (a staged create, or CREATE
    TABLE AS), when no metadata file has been written yet. Confined to the table's location: a
    link planted there leads no folder elsewhere."""
    try:
        storage = storage_within(location)
    except StorageError:
        return
    try:
        storage.make_folders(location, "metadata", "data")
    except StorageError as exc:
        raise InvalidParameter(f"Cannot create the folders of {location}: {exc}") from None


def _location_for(caller: Principal, schema: Schema, table_id, requested) -> tuple[str, str]:
    """Where a new table or view goes: managed storage, or a location the caller may use
    (catalog.locations: the one location rule, as for UC EXTERNAL tables)."""
    if requested is not None:
        placed = locations.place_securable(caller=caller, schema=schema, value=requested, securable_id=table_id)
        return placed.url, TableType.MANAGED if placed.managed else TableType.EXTERNAL
    return managed_location(schema, table_id), TableType.MANAGED


def moved(caller: Principal, table: Table, metadata: formats.Metadata) -> formats.Metadata:
    """The metadata of an existing table or view after a `set-location` update has been checked by
    the location rule (with the location in canonical form); unchanged when it does not move."""
    if metadata.location == table.storage_location:
        return metadata
    placed = locations.place_securable(caller=caller, schema=table.schema, value=metadata.location,
                                       securable_id=table.id)
    return metadata.with_location(placed.url)


def create_table(*, caller: Principal, prefix: str, namespace: str, body: dict,
                 delegation: iceberg_credentials.Delegation | None = None) -> Loaded:
    """createTable and stage-create; with `delegation`, the access the client asked for (the creator
    will own the table, so its keys may write)."""
    loaded = _create_table(caller=caller, prefix=prefix, namespace=namespace, body=body)
    if delegation is None:
        return loaded
    return iceberg_credentials.delegate_new_table(loaded, caller=caller, delegation=delegation, prefix=prefix,
                                                  namespace=namespace, name=body.get("name"))


def _create_table(*, caller: Principal, prefix: str, namespace: str, body: dict) -> Loaded:
    catalog = catalog_iceberg.warehouse(prefix, caller)
    schema, access = resolve.namespace(caller, catalog, namespace)
    name = validate_name(body.get("name"), iceberg=True)
    if body.get("schema") is None:
        raise InvalidParameter("schema is required.")
    properties = validate_properties(body.get("properties"))
    schema_contract.require_settable(properties, applies=True, what=f"table {name}")
    stage_only = body.get("stage-create", False)
    if not isinstance(stage_only, bool):
        raise InvalidParameter("stage-create must be a boolean.")
    authz.require(caller, schema, Action.CREATE_TABLE, access=access)
    require_free_name(schema, name)
    table_id = uuid.uuid4()
    location, table_type = _location_for(caller, schema, table_id, body.get("location"))
    metadata = formats.Metadata(model=formats.create_metadata(
        schema=body["schema"], partition_spec=body.get("partition-spec"), write_order=body.get("write-order"),
        location=location, properties=properties, table_uuid=table_id,
    ))
    if stage_only:
        prepare_location(location)
        return Loaded(None, None, metadata.text, catalog_iceberg.storage_config(location))
    with transaction.atomic():
        table = new_row(caller=caller, schema=schema, name=name, table_id=table_id, location=location,
                         table_type=table_type)
        state = swap(table, metadata, None)
        table.save()
        audit.record(principal=caller.name, action="createIcebergTable", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id)
    return Loaded(table, state.metadata_location, state.metadata_json, catalog_iceberg.storage_config(location))


def drop_table(*, caller: Principal, prefix: str, namespace: str, name: str, purge: bool, view: bool = False) -> None:
    with transaction.atomic():
        table, access = catalog_iceberg.find(caller, prefix, namespace, name, view=view, for_update=True)
        access.require(access.owns(), f"Only the owner of {table.full_name} or a metastore admin may drop it.")
        full_name, table_id = table.full_name, table.id
        dropped.drop_table(table, dropped_by=caller.name, purge=purge)
        audit.record(principal=caller.name, action="dropIcebergView" if view else "dropIcebergTable",
                     securable_type="table", securable_name=full_name, securable_id=table_id,
                     details={"purge": purge})


def rename(*, caller: Principal, prefix: str, body: dict, view: bool = False) -> None:
    catalog = catalog_iceberg.warehouse(prefix, caller)
    source_levels, source_name = formats.parse_identifier(body.get("source"))
    target_levels, target_name = formats.parse_identifier(body.get("destination"))
    validate_name(target_name, field="destination.name", iceberg=True)
    with transaction.atomic():
        table, access = catalog_iceberg.find(caller, prefix, source_levels, source_name, view=view, for_update=True)
        access.require(access.owns(), f"Only the owner of {table.full_name} may rename it.")
        target_schema, target_access = resolve.namespace(caller, catalog, target_levels)
        if target_schema.id != table.schema_id:
            authz.require(caller, target_schema, Action.CREATE_TABLE, access=target_access)
        if Table.objects.filter(schema=target_schema, name=target_name).exists():
            raise TableAlreadyExists(f"Table {target_schema.full_name}.{target_name} already exists.")
        old_name = table.full_name
        table.schema = target_schema
        table.name = target_name
        table.updated_at = timezone.now()
        table.updated_by = caller.name
        table.save()
        Grant.objects.filter(securable_id=table.id).update(securable_name=table.full_name)
        audit.record(principal=caller.name, securable_type="table",
                     action=AuditAction.RENAME_ICEBERG_VIEW if view else AuditAction.RENAME_ICEBERG_TABLE,
                     securable_name=table.full_name, securable_id=table.id, details={"from": old_name})


def register_table(*, caller: Principal, prefix: str, namespace: str, body: dict,
                   delegation: iceberg_credentials.Delegation | None = None) -> Loaded:
    loaded = _register_table(caller=caller, prefix=prefix, namespace=namespace, body=body)
    if delegation is None:
        return loaded
    return iceberg_credentials.delegate_new_table(loaded, caller=caller, delegation=delegation, prefix=prefix,
                                                  namespace=namespace, name=loaded.table.name)


def _register_table(*, caller: Principal, prefix: str, namespace: str, body: dict) -> Loaded:
    catalog = catalog_iceberg.warehouse(prefix, caller)
    schema, access = resolve.namespace(caller, catalog, namespace)
    name = validate_name(body.get("name"), iceberg=True)
    location = body.get("metadata-location")
    if not isinstance(location, str) or not location:
        raise InvalidParameter("metadata-location is required.")
    if body.get("overwrite"):
        raise InvalidParameter("overwrite is not supported: drop the table first.")
    authz.require(caller, schema, Action.CREATE_TABLE, access=access)
    require_free_name(schema, name)
    location = locations.registrable_metadata_file(caller=caller, value=location)
    text, metadata = _read_registered_metadata(location)
    schema_contract.require_settable(metadata.properties, applies=True, what=f"table {name}")
    table_id = row_id_for(metadata.table_uuid)
    placed = locations.place_securable(caller=caller, schema=schema, value=metadata.location,
                                       securable_id=table_id, field="the metadata's location")
    if not locations.is_within(location, placed.url):
        raise InvalidParameter(f"metadata-location {location} does not lie in the table location {placed.url} "
                               "that the metadata file names.")
    require_files_inside(text, placed.url)
    with transaction.atomic():
        table = new_row(caller=caller, schema=schema, name=name, table_id=table_id,
                         location=placed.url, table_type=TableType.EXTERNAL)
        IcebergMetadata.objects.create(table=table, metadata_location=location, metadata_json=text)
        replace_columns(table, formats.columns_of(metadata))
        table.properties = dict(metadata.properties)
        table.save()
        audit.record(principal=caller.name, action="registerIcebergTable", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id, details={"metadata_location": location})
    return Loaded(table, location, text, catalog_iceberg.storage_config(table.storage_location))


def require_files_inside(text: str, table_location: str) -> None:
    """Every manifest list and statistics file that metadata another writer made (registered, or
    sent by notification) references lies inside the table's location: the catalog would serve
    them as this table's files, and its snapshot expiry would delete them."""
    for path in formats.files_referenced(json.loads(text)):
        locations.file_inside_table(path, table_location, field="a manifest list or statistics file of the metadata")


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
        client_json.check_text(data)
    except client_json.TooDeep as exc:
        raise InvalidParameter(f"Cannot register {location}: {exc}.") from None
    try:
        text = data.decode("utf-8")
        metadata = formats.parse_metadata(text)
    except Exception:  # any malformed file: never echo its content
        raise InvalidParameter(f"Cannot register {location}: it is not Iceberg table metadata.") from None
    if not isinstance(getattr(metadata, "location", None), str):
        raise InvalidParameter(f"Cannot register {location}: it is not Iceberg table metadata.")
    return text, metadata


def record_metrics(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> None:
    table, _ = catalog_iceberg.find(caller, prefix, namespace, name, view=False)
    report_type = body.get("report-type")
    if report_type not in ("scan-report", "commit-report"):
        raise InvalidParameter("report-type must be scan-report or commit-report.")
    snapshot_id = body.get("snapshot-id")
    if snapshot_id is not None and (isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int)):
        raise InvalidParameter("snapshot-id must be an integer.")
    IcebergMetricsReport.objects.create(table=table, report_type=report_type, snapshot_id=snapshot_id,
                                        report=body, reported_by=caller.name)


def create_view(*, caller: Principal, prefix: str, namespace: str, body: dict) -> Loaded:
    catalog = catalog_iceberg.warehouse(prefix, caller)
    schema, access = resolve.namespace(caller, catalog, namespace)
    name = validate_name(body.get("name"), iceberg=True)
    properties = validate_properties(body.get("properties"))
    schema_contract.require_settable(properties, applies=False, what=f"view {name}")
    authz.require(caller, schema, Action.CREATE_TABLE, access=access)
    view_id = uuid.uuid4()
    location, _ = _location_for(caller, schema, view_id, body.get("location"))
    metadata = iceberg_view.create_view_metadata(schema=body.get("schema"), view_version=body.get("view-version"),
                                            location=location, properties=properties)
    with transaction.atomic():
        table = new_row(caller=caller, schema=schema, name=name, table_id=view_id, location=location,
                         table_type=TableType.VIEW, view=True)
        state = swap(table, formats.Metadata(model=metadata), None)
        table.view_definition = formats.view_sql(metadata)
        table.save()
        audit.record(principal=caller.name, action="createIcebergView", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id)
    return Loaded(table, state.metadata_location, state.metadata_json, {})


def replace_view(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> Loaded:
    with transaction.atomic():
        table, access = catalog_iceberg.find(caller, prefix, namespace, name, view=True, for_update=True)
        catalog_iceberg.require_write(caller, table, access)
        if not body.get("requirements") and not body.get("updates"):
            raise InvalidParameter(f"A commit of view {table.full_name} needs at least one requirement or update.")
        current = iceberg_view.parse_view_metadata(table.iceberg.metadata_json)
        iceberg_view.check_view_requirements(body.get("requirements"), current)
        updated = iceberg_view.apply_view_updates(current, body.get("updates"))
        metadata = moved(caller, table, formats.Metadata(model=updated))
        policy_properties.require_unchanged_or_owner(access, current.properties, metadata.properties)
        schema_contract.enforce(table, current.properties, metadata.properties, lambda: [], applies=False,
                                table_format="iceberg")
        state = swap(table, metadata, table.iceberg)
        table.view_definition = formats.view_sql(metadata.model)
        table.updated_at = timezone.now()
        table.updated_by = caller.name
        table.save()
        audit.record(principal=caller.name, action="replaceIcebergView", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id)
    return Loaded(table, state.metadata_location, state.metadata_json, {})
