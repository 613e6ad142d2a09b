"""A table's first rows and its column statistics, for a console user whose principal may read the
table's data (SELECT with USE on its catalog and schema, its owner, a metastore admin): the same
rule as a read through the APIs, and audited as a read (`previewTable`).

Delta: the files live at the catalog's latest ratified version (commits.delta_state: a ratified
commit that is not published yet counts), read through the catalog's storage; statistics are the
add actions' `stats` (numRecords, nullCount, minValues, maxValues). Iceberg: pyiceberg scans the
current snapshot from the stored metadata; statistics are the manifests' column metrics. An
Iceberg preview reads with the server's own access, so first it reads the snapshot's manifests
through the storage confined to the table, and previews nothing when one of them, or a data or
delete file they name, lies outside the table's location, or (file://) the table's folder holds a
symbolic link: a writer could otherwise have the console show another table's rows."""

from __future__ import annotations

import io
import json
import logging

from catalog import authz, locations
from catalog.authz import Action
from catalog.choices import AuditOutcome, DataSourceFormat, TableType
from catalog.services import audit
from catalog.services.iceberg import server_storage_config
from catalog.storage import StorageOutsideRoot, storage_within
from catalog.storage.iceberg_io import live_entries
from commits import delta_state
from commits.formats import history
from ucweb.errors import CatalogError, InvalidParameter

logger = logging.getLogger(__name__)
ROWS = 20
CELL_CHARS = 80
# A data file is read whole through the storage interface: a larger one is not read for a preview.
MAX_FILE_BYTES = 64 * 1024 * 1024


def refusal(caller, table) -> str | None:
    """Why `caller` may not preview `table` (None: it may)."""
    try:
        authz.require(caller, table, Action.READ, missing=None)
    except CatalogError as exc:
        return exc.message
    return None


def _cell(value) -> str:
    if value is None:
        return "NULL"
    text = value.hex() if isinstance(value, bytes) else str(value)
    return text if len(text) <= CELL_CHARS else text[:CELL_CHARS - 1] + "…"


# -- Delta ----------------------------------------------------------------------------------------
def _physical_names(metadata: dict) -> dict[str, str]:
    """Column mapping: the name in the data files of each column (the column's own without it)."""
    schema = json.loads(metadata.get("schemaString") or "{}")
    names = {}
    for field in schema.get("fields") or []:
        physical = (field.get("metadata") or {}).get("delta.columnMapping.physicalName")
        names[field["name"]] = physical or field["name"]
    return names


def _delta_rows(state, columns: list[str]) -> tuple[list[list[str]], list[str]]:
    import pyarrow.parquet as pq

    storage = storage_within(state.location)
    physical = _physical_names(state.metadata)
    partitions = set(state.metadata.get("partitionColumns") or [])
    rows, notes = [], []
    # In the order they were written (then by name): the first rows are the oldest ones.
    for path, add in sorted(state.live.items(), key=lambda item: (int(item[1].get("modificationTime") or 0), item[0])):
        if len(rows) >= ROWS:
            break
        url = state.resolve(path)
        if url is None or add.get("deletionVector"):
            notes.append(f"{path}: {'outside the table' if url is None else 'has deleted rows (a deletion vector)'}; "
                         "not read")
            continue
        if int(add.get("size") or 0) > MAX_FILE_BYTES:
            notes.append(f"{path}: larger than {MAX_FILE_BYTES // 2 ** 20} MiB; not read for a preview")
            continue
        data = pq.read_table(io.BytesIO(storage.read(url))).slice(0, ROWS - len(rows)).to_pylist()
        values = add.get("partitionValues") or {}
        for record in data:
            rows.append([_cell(values.get(c) if c in partitions else record.get(physical.get(c, c)))
                         for c in columns])
    return rows, notes


def _delta_statistics(state, columns: list[str]) -> list[dict]:
    physical = _physical_names(state.metadata)
    figures = {c: {"nulls": 0, "min": None, "max": None, "complete": True} for c in columns}
    for add in state.live.values():
        try:
            stats = json.loads(add.get("stats") or "null") or {}
        except ValueError:
            stats = {}
        for column in columns:
            name, figure = physical.get(column, column), figures[column]
            nulls = (stats.get("nullCount") or {}).get(name)
            low, high = (stats.get("minValues") or {}).get(name), (stats.get("maxValues") or {}).get(name)
            if not isinstance(nulls, int):
                figure["complete"] = False
            else:
                figure["nulls"] += nulls
            for key, value, better in (("min", low, lambda a, b: a < b), ("max", high, lambda a, b: a > b)):
                if value is None or isinstance(value, dict):
                    continue
                try:
                    if figure[key] is None or better(value, figure[key]):
                        figure[key] = value
                except TypeError:
                    figure["complete"] = False
    return [{"column": c, "nulls": f["nulls"], "min": _cell(f["min"]) if f["min"] is not None else "—",
             "max": _cell(f["max"]) if f["max"] is not None else "—", "complete": f["complete"]}
            for c, f in figures.items()]


def _delta(table) -> dict:
    state = delta_state.read_state(table)
    columns = [c["name"] for c in history.delta_columns(state.metadata)]
    rows, notes = _delta_rows(state, columns)
    return {"columns": columns, "rows": rows, "notes": notes, "statistics": _delta_statistics(state, columns),
            "files": len(state.live), "version": f"version {state.version}"}


# -- Iceberg --------------------------------------------------------------------------------------
def _iceberg_table(table):
    from pyiceberg.table import StaticTable

    location = table.iceberg.metadata_location
    return StaticTable.from_metadata(location, properties=server_storage_config(location))


class FilesOutsideTheTable(Exception):
    """What the preview of an Iceberg table would read lies (or leads) outside the table."""


def _files_are_its_own(table, static) -> None:
    """Raises FilesOutsideTheTable unless every manifest, data file and delete file of the current
    snapshot lies inside the table's location and, on file://, the table's folder holds no
    symbolic link (pyarrow follows them). A manifest outside the table is not even read."""
    root = table.storage_location or static.metadata.location
    storage = storage_within(root)
    links = storage.symbolic_links(root)
    if links:
        raise FilesOutsideTheTable(f"the table's folder holds a symbolic link ({links[0]})")
    try:
        entries = live_entries(static.current_snapshot(), storage)
    except StorageOutsideRoot as exc:
        raise FilesOutsideTheTable(f"a manifest of its snapshot lies outside the table's location ({exc})") from None
    for entry in entries:
        try:
            locations.file_inside_table(entry.data_file.file_path, root, field="a data file")
        except InvalidParameter:
            raise FilesOutsideTheTable(f"a file its snapshot names ({entry.data_file.file_path}) lies outside "
                                       "the table's location") from None


def _iceberg_statistics(files, columns: list[str]) -> list[dict]:
    metrics = files.column("readable_metrics").to_pylist() if files.num_rows else []
    out = []
    for column in columns:
        nulls, low, high, complete = 0, None, None, True
        for entry in metrics:
            metric = (entry or {}).get(column) or {}
            if metric.get("null_value_count") is None:
                complete = False
            else:
                nulls += metric["null_value_count"]
            if metric.get("lower_bound") is not None and (low is None or metric["lower_bound"] < low):
                low = metric["lower_bound"]
            if metric.get("upper_bound") is not None and (high is None or metric["upper_bound"] > high):
                high = metric["upper_bound"]
        out.append({"column": column, "nulls": nulls, "min": _cell(low) if low is not None else "—",
                    "max": _cell(high) if high is not None else "—", "complete": complete})
    return out


def _iceberg(table) -> dict:
    static = _iceberg_table(table)
    columns = [field.name for field in static.schema().fields]
    snapshot = static.current_snapshot()
    if snapshot is None:
        return {"columns": columns, "rows": [], "notes": [], "statistics": [], "files": 0,
                "version": "no snapshot yet"}
    _files_are_its_own(table, static)
    data = static.scan(limit=ROWS).to_arrow().slice(0, ROWS).to_pylist()
    files = static.inspect.files()
    return {"columns": columns, "rows": [[_cell(r.get(c)) for c in columns] for r in data], "notes": [],
            "statistics": _iceberg_statistics(files, columns), "files": files.num_rows,
            "version": f"snapshot {snapshot.snapshot_id}"}


# -- the page's section ---------------------------------------------------------------------------
def readable(table) -> bool:
    is_iceberg = table.data_source_format == DataSourceFormat.ICEBERG and getattr(table, "iceberg", None) is not None
    return is_iceberg or (table.latest_version is not None and bool(table.storage_location))


def preview_section(caller, table, requested: bool) -> dict:
    """What the page's preview section shows: why not, an offer, or the rows and statistics (read
    and audited only when `requested`)."""
    why = refusal(caller, table)
    if why is not None:
        if requested:
            audit.record(principal=caller.name, action="previewTable", securable_type="table",
                         securable_name=table.full_name, securable_id=table.id, outcome=AuditOutcome.DENIED,
                         details={"message": why, "via": "console"})
        return {"refused": why}
    if table.table_type == TableType.VIEW:
        return {"unavailable": "A view holds no data files of its own: preview the tables it reads (Lineage)."}
    if not readable(table):
        return {"unavailable": "The catalog does not track this table's data files (its commits are made "
                               "elsewhere): there is nothing it can preview."}
    if not requested:
        return {"offer": True}
    is_iceberg = table.data_source_format == DataSourceFormat.ICEBERG
    try:
        shown = _iceberg(table) if is_iceberg else _delta(table)
    except FilesOutsideTheTable as exc:
        audit.record(principal=caller.name, action="previewTable", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id, outcome=AuditOutcome.FAILED,
                     details={"message": str(exc)[:500], "via": "console"})
        return {"unavailable": f"Nothing is previewed: {exc}. The console reads only a table's own files."}
    except Exception as exc:  # noqa: BLE001 - files another system wrote: any failure to read them is said, not a 500
        logger.warning("preview of %s: %s", table.full_name, exc)
        audit.record(principal=caller.name, action="previewTable", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id, outcome=AuditOutcome.FAILED,
                     details={"message": str(exc)[:500], "via": "console"})
        return {"failed": "The table's files could not be read from storage; nothing is shown."}
    audit.record(principal=caller.name, action="previewTable", securable_type="table",
                 securable_name=table.full_name, securable_id=table.id,
                 details={"rows": len(shown["rows"]), "via": "console"})
    return {"shown": shown}
