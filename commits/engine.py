"""The one commit engine of Iceberg tables: lock the table rows by id in a fixed order, plan every
change (authorization, requirements, the next metadata), then write every change. updateTable is a
transaction of one table; `POST /transactions/commit` is the same code over many.

A commit of a table that exists is two statements in its transaction: the locking read (table,
container chain, current metadata and, on PostgreSQL, the caller's grants) and one write (the
metadata row, the table row and the audit event; commits.one_statement). The UC columns are
rewritten only when the schema or the partition spec changed."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from catalog import authz, locations, policy_properties, resolve, rows, schema_contract
from catalog.authz import Action
from catalog.choices import TableType
from catalog.models import Catalog, Principal, Schema, Table
from catalog.services import audit
from catalog.services import iceberg as catalog_iceberg
from catalog.services.iceberg import Loaded
from catalog.names import namespace_levels, namespace_path, validate_name
from commits.formats import definition
from commits.formats import iceberg as formats
from commits.formats.schema_evolution import iceberg_breaking_changes
from commits.iceberg import SWAPPED_FIELDS, FileWrites, moved, new_row, prepare_location, row_id_for, swap
from commits.one_statement import save_with
from ucweb import metrics
from ucweb.errors import CommitFailed, InvalidParameter, TableDoesNotExist


@dataclass
class Change:
    levels: list[str]
    name: str
    requirements: list
    updates: list

    @property
    def key(self) -> tuple:
        return tuple(self.levels), self.name

    def missing(self) -> TableDoesNotExist:
        return TableDoesNotExist(f"Table {'.'.join(self.levels)}.{self.name} does not exist.")


def parse_change(data, *, identifier=None) -> Change:
    if not isinstance(data, dict):
        raise InvalidParameter("A table change must be an object.")
    if identifier is None:
        identifier = formats.parse_identifier(data.get("identifier"))
    return Change(list(identifier[0]), identifier[1], formats.parse_requirements(data.get("requirements")),
                  formats.parse_updates(data.get("updates")))


@dataclass
class _Planned:
    """One table change whose requirements hold, with the metadata it leads to; nothing written yet."""

    change: Change
    table: Table | None  # None: the change creates the table (assert-create)
    schema: Schema | None
    metadata: formats.Metadata
    columns: bool = True  # whether the UC columns change (formats.columns_changed)
    managed: bool = False  # a created table: its location is the managed one the catalog assigned
    table_id: object = None  # a created table: its row's id (commits.iceberg.row_id_for)


# -- lock, plan, write ---------------------------------------------------------------------------
def lock(caller: Principal, prefix: str, changes: list[Change]) -> dict:
    """Locks every table a commit touches and its metadata row, in one fixed order (by id), so
    that two transactions over the same tables cannot wait on each other; on PostgreSQL the same
    statement reads the caller's grants on each table's chain (catalog.rows). Both rows are
    locked: metadata read unlocked in the locking statement could be the version a concurrent
    commit has just replaced, and a requirement checked against it would pass where it must fail
    (a lost update)."""
    keys = [(namespace_path(change.levels), change.name) for change in changes if change.levels and all(change.levels)]
    if not keys:
        return {}
    found = rows.tables(caller, rows.by_names(len(keys), iceberg_tables=True),
                        [prefix, *(part for key in keys for part in key)], for_update=True, iceberg=True)
    return {(tuple(row.schema.levels), row.name): row for row in found}


def _plan(caller: Principal, prefix: str, change: Change, locked: dict) -> _Planned:
    """Checks access and requirements and computes the next metadata, writing nothing."""
    table = locked.get(change.key)
    if table is None:
        catalog = catalog_iceberg.warehouse(prefix, caller)  # a warehouse the caller may not see does not exist
        if not any(getattr(r, "type", None) == "assert-create" for r in change.requirements):
            raise change.missing()
        return _plan_create(caller, catalog, change)
    access = authz.require(caller, table, Action.SEE, access=authz.access_to_read(caller, table),
                           missing=catalog_iceberg.missing_in_warehouse(prefix, change.missing()))
    catalog_iceberg.require_write(caller, table, access)
    if not change.requirements and not change.updates:
        raise InvalidParameter(f"A commit of {table.full_name} needs at least one requirement or update.")
    step = formats.next_metadata(table.iceberg.metadata_json, change.requirements, change.updates,
                                 metadata_location=table.iceberg.metadata_location)
    policy_properties.require_unchanged_or_owner(access, step.properties_before, step.metadata.properties)
    changes = definition.iceberg_changes(change.updates, step.properties_before)
    authz.require_alter(access, changes)
    schema_contract.enforce(table, step.properties_before, step.metadata.properties, lambda: iceberg_breaking_changes(
        formats.parse_metadata(table.iceberg.metadata_json), step.metadata.model) if "schema" in changes else [],
        applies=True, table_format="iceberg")
    metadata = moved(caller, table, step.metadata)
    _require_files_inside(change.updates, metadata.location)
    return _Planned(change, table, None, metadata, columns=step.columns_changed)


def _require_files_inside(updates, table_location: str) -> None:
    """Every file a change makes the table reference lies inside the table's location (the one it
    has after the change): readers would take another table's files, or any file, for this one's,
    and expiring the snapshot would delete it. Accepted paths are kept as the client spelled them."""
    for field, path in formats.files_named(updates):
        locations.file_inside_table(path, table_location, field=field)


def _plan_create(caller: Principal, catalog: Catalog, change: Change) -> _Planned:
    formats.check_requirements(change.requirements, None)
    schema, access = resolve.namespace(caller, catalog, change.levels)
    authz.require(caller, schema, Action.CREATE_TABLE, access=access)
    validate_name(change.name, iceberg=True)
    if Table.objects.filter(schema=schema, name=change.name).exists():
        raise CommitFailed(f"Requirement failed: table {schema.full_name}.{change.name} already exists.")
    metadata = formats.Metadata(model=formats.apply_updates(None, change.updates, metadata_location=None))
    schema_contract.require_settable(metadata.properties, applies=True, what=f"table {schema.full_name}.{change.name}")
    table_id = row_id_for(metadata.table_uuid)
    placed = locations.place_securable(caller=caller, schema=schema, value=metadata.location,
                                       securable_id=table_id)
    metadata = metadata.with_location(placed.url)
    _require_files_inside(change.updates, placed.url)
    return _Planned(change, None, schema, metadata, managed=placed.managed, table_id=table_id)


def _write(caller: Principal, planned: _Planned, writes: FileWrites) -> Loaded:
    """Writes the next metadata file of a planned change and swaps it in (the caller's transaction):
    the metadata row, the table row and the audit event of a table that exists in one statement,
    sent while its file is written (`writes`: the caller waits for it before committing)."""
    change, table, metadata = planned.change, planned.table, planned.metadata
    event_details = {"updates": [getattr(u, "action", "") for u in change.updates]}
    if table is None:
        table = new_row(caller=caller, schema=planned.schema, name=change.name, table_id=planned.table_id,
                        location=metadata.location,
                        table_type=TableType.MANAGED if planned.managed else TableType.EXTERNAL)
        prepare_location(metadata.location)
        state = swap(table, metadata, None)
    else:
        state = swap(table, metadata, table.iceberg, columns=planned.columns, save=False, writes=writes)
    table.updated_at = timezone.now()
    table.updated_by = caller.name
    # The new metadata file is the Iceberg table's version.
    event_details["metadata_location"] = state.metadata_location
    events = audit.rows(principal=caller.name, action="commitIcebergTable", securable_type="table",
                        securable_name=table.full_name, securable_id=table.id, details=event_details)
    save_with(table, ["properties", "storage_location", "updated_at", "updated_by"], events,
              updates=[(state, SWAPPED_FIELDS)] if planned.table is not None else ())
    config = catalog_iceberg.storage_config(table.storage_location)
    return Loaded(table, state.metadata_location, state.metadata_json, config)


def commit(caller: Principal, prefix: str, changes: list[Change]) -> list[Loaded]:
    """All changes or none, each table at most once."""
    seen = set()
    for change in changes:
        if change.key in seen:
            raise InvalidParameter(f"Table {'.'.join(change.levels)}.{change.name} appears twice in one transaction.")
        seen.add(change.key)
    with transaction.atomic():
        locked = lock(caller, prefix, changes)
        # Every requirement of every table is checked before any metadata file is written, so a
        # transaction that fails leaves no trace in storage either.
        try:
            planned = [_plan(caller, prefix, change, locked) for change in changes]
        except CommitFailed:
            metrics.commit_outcome("iceberg", "conflict")
            raise
        transaction.on_commit(lambda: metrics.commit_outcome("iceberg", "ratified", len(planned)))
        writes = FileWrites()
        try:
            written = [_write(caller, item, writes) for item in planned]
        except BaseException:
            writes.wait(raising=False)
            raise
        writes.wait()  # before the transaction commits: a committed row names a file that is there
        return written


def commit_table(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> Loaded:
    try:
        change = parse_change(body, identifier=(namespace_levels(namespace), name))
    except InvalidParameter:
        catalog_iceberg.warehouse(prefix, caller)  # a warehouse that does not exist answers that first
        raise
    return commit(caller, prefix, [change])[0]


# A transaction's tables are read with one statement of their own per count (catalog.rows): a
# bound keeps those statements few, and under PostgreSQL's limit of parameters per statement.
MOST_TABLES_PER_TRANSACTION = 1000


def commit_transaction(*, caller: Principal, prefix: str, body: dict) -> None:
    try:
        table_changes = body.get("table-changes")
        if not isinstance(table_changes, list) or not table_changes:
            raise InvalidParameter("table-changes must be a non-empty array.")
        if len(table_changes) > MOST_TABLES_PER_TRANSACTION:
            raise InvalidParameter(f"A transaction changes at most {MOST_TABLES_PER_TRANSACTION} tables; "
                                   f"this one has {len(table_changes)}.")
        changes = [parse_change(item) for item in table_changes]
    except InvalidParameter:
        catalog_iceberg.warehouse(prefix, caller)  # a warehouse that does not exist answers that first
        raise
    commit(caller, prefix, changes)
