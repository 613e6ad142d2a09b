"""A table's history as a person reads it: one timeline for Delta commits and Iceberg metadata
versions (when, who, what operation, files, rows and bytes added and removed, the schema and
property changes as diffs), and any two versions compared.

Delta: the catalog's view of the log (a ratified commit not yet published is read from its staged
file), with who ratified each version from the catalog's commit records. Iceberg: one entry per
metadata file (each commit writes one), its new snapshot's summary, and who committed it from the
audit trail (the commit's event names the metadata file it wrote)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from django.conf import settings

from catalog.choices import AuditAction, DataSourceFormat, TableType
from catalog.models import AuditEvent
from catalog.storage import StorageError, normalize, storage_within
from commits import delta_state
from commits.formats import delta_log, history
from commits.formats.iceberg import metadata_version
from commits.publication import log_file, staged_file

SHOWN = 25
CATALOG_ENGINE = "ucweb-maintenance"
ICEBERG_WRITES = (AuditAction.COMMIT_ICEBERG_TABLE, AuditAction.UPDATE_TABLE_BY_NOTIFICATION)


def _when(ms) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, UTC) if isinstance(ms, int) and ms > 0 else None


def by_catalog(principal: str | None, engine: str | None = None) -> bool:
    """A version the catalog wrote itself (compaction, checkpoint, expiry...), not a client."""
    return principal == settings.UCWEB_MAINTENANCE_PRINCIPAL or engine == CATALOG_ENGINE


# -- Delta ----------------------------------------------------------------------------------------
def _delta_actions(storage, location: str, version: int, row) -> list[dict] | None:
    url = staged_file(location, row.file_name) if row is not None and row.published_at is None \
        else log_file(location, version)
    try:
        return delta_log.parse_actions(storage.read(url))
    except (StorageError, delta_log.DeltaLogError):
        return None


def _definition_before(table, version: int) -> tuple[list[dict], dict] | None:
    if version <= 0:
        return None
    try:
        metadata = delta_state.read_state(table, version=version - 1).metadata
    except (StorageError, ValueError):
        return None
    return history.delta_columns(metadata), metadata.get("configuration") or {}


def delta_timeline(table) -> list[dict]:
    """The newest SHOWN versions of a catalog-managed Delta table, newest first."""
    latest = table.latest_version
    if latest is None or not table.storage_location:
        return []
    oldest = max(0, latest - SHOWN + 1)
    rows = {c.version: c for c in table.delta_commits.filter(version__gte=oldest)}
    location = normalize(table.storage_location)
    storage = storage_within(location)
    checkpoint = delta_state.last_checkpoint(location)
    entries, definition = [], None
    for version in range(oldest, latest + 1):
        row = rows.get(version)
        actions = _delta_actions(storage, location, version, row)
        info = (delta_log.first(actions, "commitInfo") if actions else None) or {}
        declared = info.get("operation") if actions else (row.operation if row else None)
        shown, derived = history.operation(declared, actions)
        who = row.ratified_by if row is not None else (table.created_by if version == 0 else None)
        entry = {
            "version": version, "key": str(version),
            "time": _when(delta_log.commit_timestamp(info)) or _when(row.timestamp if row else None),
            "who": who, "engine": info.get("engineInfo") or (row.engine_info if row else "") or "",
            "operation": shown, "derived": derived, "declared": declared,
            "by_catalog": by_catalog(who, info.get("engineInfo")),
            "published": row is None or row.published_at is not None, "checkpoint": version == checkpoint,
            "unreadable": actions is None,
            "figures": history.delta_figures(actions or []),
            "schema_diff": [], "property_diff": [],
        }
        metadata = delta_log.first(actions or [], "metaData")
        if metadata is not None:
            if definition is None:
                definition = _definition_before(table, version)
            columns, properties = history.delta_columns(metadata), metadata.get("configuration") or {}
            entry["schema_diff"] = history.column_diff(definition[0] if definition else None, columns)
            entry["property_diff"] = history.property_diff(definition[1] if definition else None, properties)
            definition = (columns, properties)
        entries.append(entry)
    return entries[::-1]


def _delta_version(table, key: str) -> int | None:
    try:
        version = int(key)
    except (TypeError, ValueError):
        return None
    return version if 0 <= version <= (table.latest_version or -1) else None


def _live_figures(live: dict) -> tuple[int, int, int | None]:
    rows = [history.delta_figures([{"add": add}])["rows_added"] for add in live.values()]
    return len(live), sum(int(a.get("size") or 0) for a in live.values()), \
        None if None in rows else sum(rows)


def delta_compare(table, a: str, b: str) -> dict | None:
    first, second = _delta_version(table, a), _delta_version(table, b)
    if first is None or second is None:
        return None
    first, second = sorted((first, second))
    try:
        before = delta_state.read_state(table, version=first)
        after = delta_state.read_state(table, version=second)
    except (StorageError, ValueError):
        return {"error": "The table's log could not be read at these versions."}
    added = {p: after.live[p] for p in after.live.keys() - before.live.keys()}
    removed = {p: before.live[p] for p in before.live.keys() - after.live.keys()}

    def state(read):
        return history.delta_columns(read.metadata), read.metadata.get("configuration") or {}, _live_figures(read.live)

    return _compared(
        str(first), str(second), state(before), state(after),
        {"files_added": len(added), "files_removed": len(removed),
         "bytes_added": sum(int(x.get("size") or 0) for x in added.values()),
         "bytes_removed": sum(int(x.get("size") or 0) for x in removed.values())})


def _compared(first: str, second: str, before: tuple, after: tuple, files: dict) -> dict:
    return {"a": first, "b": second,
            "schema_diff": history.column_diff(before[0], after[0]),
            "property_diff": history.property_diff(before[1], after[1]),
            "before": dict(zip(("files", "bytes", "rows"), before[2])),
            "after": dict(zip(("files", "bytes", "rows"), after[2])), **files}


# -- Iceberg --------------------------------------------------------------------------------------
def _iceberg_files(table) -> list[tuple[str, int | None]]:
    """(metadata file, time) from the oldest kept to the current one."""
    current = json.loads(table.iceberg.metadata_json)
    files = [(e.get("metadata-file"), e.get("timestamp-ms")) for e in current.get("metadata-log") or []]
    files.append((table.iceberg.metadata_location, current.get("last-updated-ms")))
    return files


def _read_metadata(table, location: str) -> dict | None:
    """A past metadata file of the table, read only inside its location: the metadata log of a
    registered table is another writer's, and may name any file (another table's metadata)."""
    if location == table.iceberg.metadata_location:
        return json.loads(table.iceberg.metadata_json)
    if not table.storage_location:
        return None
    try:
        return json.loads(storage_within(table.storage_location).read(location))
    except (StorageError, ValueError):
        return None


def _schema(metadata: dict, schema_id=None) -> dict | None:
    wanted = metadata.get("current-schema-id") if schema_id is None else schema_id
    return next((s for s in metadata.get("schemas") or [] if s.get("schema-id") == wanted), metadata.get("schema"))


def _writers(table) -> dict[str, str]:
    events = AuditEvent.objects.filter(securable_id=table.id, action__in=ICEBERG_WRITES, outcome="SUCCESS") \
        .order_by("-id").values_list("principal", "details")[:SHOWN * 4]
    return {(details or {}).get("metadata_location"): principal for principal, details in events}


def _key(location: str, position: int) -> str:
    number = metadata_version(location)
    return str(number if number >= 0 else position)


def _new_snapshot(before: dict | None, after: dict) -> dict | None:
    seen = {s.get("snapshot-id") for s in (before or {}).get("snapshots") or []}
    current = after.get("current-snapshot-id")
    return next((s for s in after.get("snapshots") or []
                 if s.get("snapshot-id") == current and current not in seen), None)


def _iceberg_operation(before, after, snapshot, schema_diff, property_diff) -> str:
    if snapshot is not None:
        return (snapshot.get("summary") or {}).get("operation") or "snapshot"
    if before is None:
        return "create table"
    if len((after.get("snapshots") or [])) < len((before.get("snapshots") or [])):
        return "expire snapshots"
    if schema_diff:
        return "change of schema"
    if property_diff:
        return "change of properties"
    if after.get("current-snapshot-id") != before.get("current-snapshot-id"):
        return "roll back or set the current snapshot"
    return "change of metadata"


def _summary_figures(snapshot: dict | None) -> dict:
    """A snapshot summary's figures: a count it leaves out is zero (Iceberg writes only what is
    not); a version without a new snapshot added and removed nothing."""
    summary = (snapshot or {}).get("summary") or {}

    def number(key):
        value = summary.get(key, "0")
        return int(value) if isinstance(value, str) and value.isdigit() else None

    return {"files_added": number("added-data-files"), "files_removed": number("deleted-data-files"),
            "bytes_added": number("added-files-size"), "bytes_removed": number("removed-files-size"),
            "rows_added": number("added-records"), "rows_removed": number("deleted-records")}


def iceberg_timeline(table) -> list[dict]:
    """The newest SHOWN metadata versions of an Iceberg table, newest first."""
    files = _iceberg_files(table)
    start = max(0, len(files) - SHOWN)
    writers = _writers(table)
    previous = _read_metadata(table, files[start - 1][0]) if start else None
    entries = []
    for position in range(start, len(files)):
        location, ms = files[position]
        metadata = _read_metadata(table, location)
        if metadata is None:
            entries.append({"key": _key(location, position), "time": _when(ms), "unreadable": True,
                            "operation": "metadata file no longer in storage", "metadata_file": location,
                            "figures": {}, "schema_diff": [], "property_diff": []})
            previous = None
            continue
        snapshot = _new_snapshot(previous, metadata)
        columns = history.iceberg_columns(_schema(metadata))
        schema_diff = history.column_diff(history.iceberg_columns(_schema(previous)) if previous else None, columns)
        if previous is None and position > 0:
            schema_diff = []  # the version before is unknown: no diff to show
        property_diff = history.property_diff(previous.get("properties") if previous else None,
                                              metadata.get("properties")) if previous or position == 0 else []
        who = writers.get(location) or (table.created_by if position == 0 else None)
        entries.append({
            "key": _key(location, position), "time": _when(metadata.get("last-updated-ms") or ms),
            "who": who, "by_catalog": by_catalog(who), "metadata_file": location,
            "snapshot_id": (snapshot or {}).get("snapshot-id"),
            "operation": _iceberg_operation(previous, metadata, snapshot, schema_diff, property_diff),
            "derived": snapshot is None, "figures": _summary_figures(snapshot),
            "schema_diff": schema_diff, "property_diff": property_diff, "unreadable": False,
        })
        previous = metadata
    return entries[::-1]


def _iceberg_state(metadata: dict) -> tuple:
    current = next((s for s in metadata.get("snapshots") or []
                    if s.get("snapshot-id") == metadata.get("current-snapshot-id")), None)
    summary = (current or {}).get("summary") or {}

    def number(key):
        value = summary.get(key)
        return int(value) if isinstance(value, str) and value.isdigit() else (0 if current is None else None)

    return (history.iceberg_columns(_schema(metadata)), metadata.get("properties") or {},
            (number("total-data-files"), number("total-files-size"), number("total-records")))


def iceberg_compare(table, a: str, b: str) -> dict | None:
    files = _iceberg_files(table)
    by_key = {_key(location, position): location for position, (location, _) in enumerate(files)}
    if a not in by_key or b not in by_key:
        return None
    order = {key: position for position, key in enumerate(by_key)}
    first, second = sorted((a, b), key=order.get)
    before, after = _read_metadata(table, by_key[first]), _read_metadata(table, by_key[second])
    if before is None or after is None:
        return {"error": "A metadata file of these versions is no longer in storage."}
    old, new = _iceberg_state(before), _iceberg_state(after)

    def delta(index):
        return None if old[2][index] is None or new[2][index] is None else new[2][index] - old[2][index]

    return _compared(first, second, old, new, {"files_net": delta(0), "bytes_net": delta(1), "rows_net": delta(2)})


# -- the page's section ---------------------------------------------------------------------------
def history_section(table, query) -> dict | None:
    """The timeline, and the comparison of the versions `a` and `b` the page's query names (None
    when it names none; an unknown version is said so, never an error page)."""
    if table.table_type == TableType.VIEW:
        return None
    if table.data_source_format == DataSourceFormat.ICEBERG and getattr(table, "iceberg", None) is not None:
        timeline, compare = iceberg_timeline(table), iceberg_compare
    elif table.latest_version is not None:
        timeline, compare = delta_timeline(table), delta_compare
    else:
        return None
    a, b = query.get("a"), query.get("b")
    comparison = None
    if a is not None or b is not None:
        comparison = compare(table, str(a), str(b)) or {
            "error": "Pick two versions of this table: one of those named is not one of its versions."}
    return {"timeline": timeline, "comparison": comparison,
            "versions": [(e["key"], e.get("time")) for e in timeline], "a": a, "b": b}
