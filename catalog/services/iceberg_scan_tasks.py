"""Scan planning without the database: the planTableScan request read and checked against the
table's metadata, the manifests read and pruned by pyiceberg's own planner (partition summaries,
partition values, then column statistics, and the position deletes that apply to each data file),
and the file scan tasks written in the REST spec's shape, in pages. The entries of the manifests
read are kept per process (`manifest_entries`), so that later plans only evaluate the filter.

A page is the spec's ScanTasks object: `file-scan-tasks` and the `delete-files` they reference by
index, each page with its own delete files so that it can be read alone (a delete file that
applies to data files of two pages is listed in both)."""

from __future__ import annotations

import json
import posixpath
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from pydantic import ValidationError
from pyiceberg.catalog.rest.scan_planning import PlanTableScanRequest
from pyiceberg.expressions import AlwaysTrue, BooleanExpression
from pyiceberg.expressions.visitors import bind
from pyiceberg.io import FileIO
from pyiceberg.manifest import DataFile, DataFileContent, ManifestContent, ManifestEntry
from pyiceberg.table import FileScanTask, ManifestGroupPlanner
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import INITIAL_SEQUENCE_NUMBER, Snapshot
from pyiceberg.typedef import KeyDefaultDict
from pyiceberg.utils.concurrent import ExecutorFactory

from catalog.storage import StorageError
from ucweb.errors import InvalidParameter, NotImplementedYet

CONTENT = {DataFileContent.DATA: "data", DataFileContent.POSITION_DELETES: "position-deletes",
           DataFileContent.EQUALITY_DELETES: "equality-deletes"}
COUNTS = ("column-sizes", "column_sizes"), ("value-counts", "value_counts"), \
    ("null-value-counts", "null_value_counts"), ("nan-value-counts", "nan_value_counts")


@dataclass
class Scan:
    """A checked request: the snapshot to scan (None: the table has none), the filter and the
    metadata whose schema binds it."""

    metadata: TableMetadata
    snapshot: Snapshot | None
    row_filter: BooleanExpression
    case_sensitive: bool


def _refusal(exc: ValidationError) -> str:
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error.get("loc", ()))
    text = f"{where}: {error.get('msg', 'invalid')}" if where else str(error.get("msg", "invalid"))
    return text[:500]


BOOLEANS = ("case-sensitive", "use-snapshot-schema")
LONGS = ("snapshot-id", "start-snapshot-id", "end-snapshot-id", "min-rows-requested")
NAMES = ("select", "stats-fields")


def _check_types(body: dict) -> None:
    """What pyiceberg's model would coerce ("yes" as true, "12" as 12) is refused: JSON types only."""
    for key in BOOLEANS:
        if body.get(key) is not None and not isinstance(body[key], bool):
            raise InvalidParameter(f"{key} must be a boolean.")
    for key in LONGS:
        value = body.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or not -(2**63) <= value < 2**63):
            raise InvalidParameter(f"{key} must be a 64-bit integer.")
    for key in NAMES:
        value = body.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(n, str) for n in value)):
            raise InvalidParameter(f"{key} must be an array of field names.")
    if body.get("filter") is not None and not isinstance(body["filter"], dict | bool):
        raise InvalidParameter("filter must be an expression object.")


def read_request(body: dict, metadata: TableMetadata) -> Scan:
    """The request checked against the table: a filter or selection naming a field the schema
    does not have, a snapshot the table does not have, or a malformed body is a 400; an
    incremental scan is not planned (501)."""
    _check_types(body)
    try:
        request = PlanTableScanRequest.model_validate(body)
    except ValidationError as exc:
        raise InvalidParameter(f"Invalid scan request: {_refusal(exc)}") from None
    # pyiceberg's expression models raise what they meet (TypeError, KeyError...): all the body's fault.
    except Exception as exc:  # noqa: BLE001
        raise InvalidParameter(f"Invalid scan request: {str(exc)[:500]}") from None
    if request.start_snapshot_id is not None or request.end_snapshot_id is not None:
        raise NotImplementedYet("Incremental scans (start-snapshot-id, end-snapshot-id) are planned by the client.")
    snapshot = metadata.current_snapshot()
    if request.snapshot_id is not None:
        snapshot = metadata.snapshot_by_id(request.snapshot_id)
        if snapshot is None:
            raise InvalidParameter(f"Snapshot {request.snapshot_id} does not exist in this table.")
    if request.use_snapshot_schema and snapshot is not None and snapshot.schema_id is not None:
        metadata = metadata.model_copy(update={"current_schema_id": snapshot.schema_id})
    schema = metadata.schema()
    row_filter = request.filter if request.filter is not None else AlwaysTrue()
    try:
        bind(schema, row_filter, case_sensitive=request.case_sensitive)
    except Exception as exc:  # noqa: BLE001 - as above: binding fails only on what the filter says
        raise InvalidParameter(f"Invalid scan filter: {str(exc)[:500]}") from None
    for name in request.select or ():
        try:
            schema.find_field(name, case_sensitive=request.case_sensitive)
        except ValueError:
            raise InvalidParameter(f"Invalid scan selection: the schema has no field {name[:200]!r}.") from None
    return Scan(metadata, snapshot, row_filter, request.case_sensitive)


class _ManifestEntries:
    """The live entries of manifests already read, least recently used dropped first past
    UCWEB_SCAN_MANIFEST_CACHE_ENTRIES entries (0: none kept). A manifest is never rewritten in
    place (Iceberg writes a new file for every change), so its path names its content; the key also
    holds the root the read was confined to, so that a table whose metadata names another
    table's manifest is refused the read as before, cache or not."""

    def __init__(self):
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], list[ManifestEntry]] = OrderedDict()
        self._size = 0

    def get(self, key: tuple[str, str]) -> list[ManifestEntry] | None:
        with self._lock:
            entries = self._entries.get(key)
            if entries is not None:
                self._entries.move_to_end(key)
            return entries

    def put(self, key: tuple[str, str], entries: list[ManifestEntry]) -> None:
        limit = settings.UCWEB_SCAN_MANIFEST_CACHE_ENTRIES
        if len(entries) > limit:
            return
        with self._lock:
            if key not in self._entries:
                self._entries[key] = entries
                self._size += len(entries)
            while self._size > limit:
                _, dropped = self._entries.popitem(last=False)
                self._size -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._size = 0


manifest_entries = _ManifestEntries()


class _Planner(ManifestGroupPlanner):
    """pyiceberg's planner (its manifest, partition, metrics and residual evaluators, its delete
    index), with the manifests' entries read once per process (`manifest_entries`)."""

    def __init__(self, *, root: str, **kwargs):
        super().__init__(**kwargs)
        self.root = root

    def _entries(self, manifest) -> list[ManifestEntry]:
        key = (self.root, manifest.manifest_path)
        entries = manifest_entries.get(key)
        if entries is None:
            entries = manifest.fetch_manifest_entry(self.io, discard_deleted=True)
            manifest_entries.put(key, entries)
        return entries

    def plan_manifest_entries(self, manifests) -> Iterator[list[ManifestEntry]]:
        manifest_evaluators = KeyDefaultDict(self._build_manifest_evaluator)
        manifests = [manifest for manifest in manifests
                     if manifest_evaluators[manifest.partition_spec_id](manifest)]
        partition_evaluators = KeyDefaultDict(self._build_partition_evaluator)
        metrics_evaluator = self._build_metrics_evaluator()
        data_manifests = [manifest for manifest in manifests if manifest.content == ManifestContent.DATA]
        min_sequence_number = min((manifest.min_sequence_number or INITIAL_SEQUENCE_NUMBER
                                   for manifest in data_manifests), default=INITIAL_SEQUENCE_NUMBER)
        wanted = [manifest for manifest in manifests if self._check_sequence_number(min_sequence_number, manifest)]

        def matching(manifest) -> list[ManifestEntry]:
            partition_evaluator = partition_evaluators[manifest.partition_spec_id]
            return [entry for entry in self._entries(manifest)
                    if partition_evaluator(entry.data_file) and metrics_evaluator(entry.data_file)]

        return ExecutorFactory.get_or_create().map(matching, wanted)


def plan(scan: Scan, io: FileIO, root: str) -> list[FileScanTask]:
    """The file scan tasks of the scan: pyiceberg's planner over the snapshot's manifests, read
    through `io` (confined to `root`)."""
    if scan.snapshot is None:
        return []
    planner = _Planner(root=root, table_metadata=scan.metadata, io=io, row_filter=scan.row_filter,
                       case_sensitive=scan.case_sensitive)
    try:
        return list(planner.plan_files(scan.snapshot.manifests(io)))
    except StorageError:
        raise
    except (ValueError, TypeError) as exc:
        if "equality deletes" in str(exc):
            raise NotImplementedYet("Tables with equality deletes are not planned by the server.") from None
        # A filter that binds but that pyiceberg's evaluators cannot apply (starts-with on a timestamp).
        raise InvalidParameter(f"The scan filter cannot be evaluated on this table: {str(exc)[:300]}") from None


def _value(value):
    """A partition value as pyiceberg holds it (dates, times and timestamps as their integers)."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, Decimal | uuid.UUID):
        return str(value)
    return value


def _counts(mapping: dict | None) -> dict | None:
    if not mapping:
        return None
    keys = sorted(mapping)
    return {"keys": keys, "values": [mapping[key] for key in keys]}


def content_file(data_file: DataFile) -> dict:
    """A data or delete file as the REST spec's ContentFile (no lower or upper bounds)."""
    entry = {
        "spec-id": data_file.spec_id,
        "content": CONTENT[data_file.content],
        "file-path": data_file.file_path,
        "file-format": data_file.file_format.value,
        "file-size-in-bytes": data_file.file_size_in_bytes,
        "record-count": data_file.record_count,
        "partition": [_value(value) for value in data_file.partition],
    }
    if data_file.key_metadata:
        entry["key-metadata"] = bytes(data_file.key_metadata).hex()
    if data_file.split_offsets:
        entry["split-offsets"] = list(data_file.split_offsets)
    if data_file.sort_order_id is not None:
        entry["sort-order-id"] = data_file.sort_order_id
    if data_file.content == DataFileContent.DATA:
        for wire_name, attribute in COUNTS:
            counts = _counts(getattr(data_file, attribute, None))
            if counts:
                entry[wire_name] = counts
    elif data_file.content == DataFileContent.EQUALITY_DELETES and data_file.equality_ids:
        entry["equality-ids"] = list(data_file.equality_ids)
    return entry


def pages(tasks: list[FileScanTask], page_size: int) -> list[dict]:
    """The tasks as ScanTasks pages of at most `page_size` file scan tasks (one page, empty, for
    no tasks)."""
    result = []
    for start in range(0, max(len(tasks), 1), page_size):
        delete_files: list[dict] = []
        index: dict[str, int] = {}
        file_scan_tasks = []
        for task in tasks[start:start + page_size]:
            entry = {"data-file": content_file(task.file)}
            references = []
            for delete_file in sorted(task.delete_files, key=lambda f: f.file_path):
                if delete_file.file_path not in index:
                    index[delete_file.file_path] = len(delete_files)
                    delete_files.append(content_file(delete_file))
                references.append(index[delete_file.file_path])
            if references:
                entry["delete-file-references"] = references
            if task.residual != AlwaysTrue():
                entry["residual-filter"] = json.loads(task.residual.model_dump_json())
            file_scan_tasks.append(entry)
        page = {"file-scan-tasks": file_scan_tasks}
        if delete_files:
            page["delete-files"] = delete_files
        result.append(page)
    return result


def common_folder(paths: list[str]) -> str | None:
    """The deepest folder holding every path (`s3://b/t/data/a=1/x.parquet` and `.../a=1/y.parquet`:
    `s3://b/t/data/a=1`), None for no paths."""
    if not paths:
        return None
    folders = [path.rsplit("/", 1)[0] for path in paths]
    scheme = folders[0].split("://", 1)[0] + "://" if "://" in folders[0] else ""
    if any(not folder.startswith(scheme) for folder in folders):
        return None
    try:
        common = posixpath.commonpath([folder[len(scheme):] for folder in folders])
    except ValueError:
        return None
    return scheme + common if common.strip("/") else None
