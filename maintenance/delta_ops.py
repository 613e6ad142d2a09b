"""Maintenance of catalog-managed Delta tables, in the worker.

OPTIMIZE bin-packs the small files of each partition into files of the target size and commits
one version that removes them and adds the new files, every action with `dataChange=false`. The
catalog stages that commit like any client (`_delta_log/_staged_commits/<v>.<uuid>.json`) and
ratifies it through `commits.delta.write_commit` (the table row's lock, the next version, the
audit row) as its service principal. When a user's commit takes the version first, the catalog's
commit is rebased onto it if that commit touched none of the files it rewrote, else it gives up
(`Conflict`) and is planned again: a user's commit is never refused or lost for maintenance.

Files are read one at a time and streamed in record batches into the output file; memory is
bounded by the target file size, whatever the size of the table.

VACUUM and REMOVE_ORPHANS are maintenance.delta_vacuum's, CHECKPOINT maintenance.delta_checkpoint's."""

from __future__ import annotations

import io
import json
import logging
import uuid
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from catalog.storage import StorageOutsideRoot, join, storage_within
from commits import delta as delta_commits
from commits.formats import delta_log
from commits.publication import staged_file
from maintenance import delta_checkpoint, delta_vacuum, publish
from commits.delta_state import DeltaState, commit_actions, commit_timestamp, now_ms, read_state
from maintenance.errors import Conflict, Skip
from ucweb.errors import AlreadyExists, ResourceExhausted

logger = logging.getLogger(__name__)

# OPTIMIZE rewrites parquet as it is (physical column names and field ids included); a feature
# that keeps per-row state outside the data files cannot be bin-packed by copying rows.
OPTIMIZE_BLOCKING_FEATURES = {"rowTracking"}
MAX_REBASES = 20


# -- committing as the catalog ------------------------------------------------------------------
def _conflicts(table, since: int, until: int, removed: set[str]) -> str | None:
    """Why the commits after `since` forbid rebasing our rewrite on them (None: they do not)."""
    for version in range(since + 1, until + 1):
        for action in commit_actions(table, version):
            if "remove" in action and action["remove"].get("path") in removed:
                return f"version {version} removed a file this OPTIMIZE rewrote"
            if "metaData" in action or "protocol" in action:
                return f"version {version} changed the table's metadata or protocol"
    return None


def commit_as_catalog(table, ctx, read_version: int, actions: list[dict], *, operation: str,
                      parameters: dict, metrics: dict, removed: set[str]) -> int:
    """Stages and ratifies one commit of file actions; returns the version it became."""
    from maintenance.principal import catalog_principal

    caller = catalog_principal()
    location = table.storage_location
    storage = storage_within(location)
    for _ in range(MAX_REBASES):
        ctx.check()
        table.refresh_from_db(fields=["latest_version", "latest_published_version"])
        latest = table.latest_version
        if latest > read_version:
            reason = _conflicts(table, read_version, latest, removed)
            if reason is not None:
                raise Conflict(f"a user commit won: {reason}; {operation} will be planned again")
            read_version = latest
        version = latest + 1
        timestamp = max(now_ms(), commit_timestamp(table, latest) + 1)
        info = {"inCommitTimestamp": timestamp, "timestamp": timestamp, "operation": operation,
                "operationParameters": parameters, "readVersion": read_version, "isBlindAppend": False,
                "operationMetrics": {k: str(v) for k, v in metrics.items()}, "engineInfo": "ucweb-maintenance"}
        payload = delta_log.encode_actions([{"commitInfo": info}, *actions])
        file_name = delta_log.staged_file_name(version, str(uuid.uuid4()))
        staged = staged_file(location, file_name)
        storage.put(staged, payload)
        ctx.progress(f"ratifying version {version}")
        try:
            delta_commits.write_commit(caller=caller, by_catalog=True, body={
                "table_id": str(table.id), "table_uri": location,
                "commit_info": {"version": version, "timestamp": timestamp, "file_name": file_name,
                                "file_size": len(payload), "file_modification_timestamp": timestamp},
            })
        except AlreadyExists:
            storage.delete(staged)
            continue  # a user commit took the version: check it, then rebase
        except ResourceExhausted:
            storage.delete(staged)
            publish.verify_table(table.id)  # publish what clients left staged, then try again
            continue
        publish.verify_table(table.id)
        return version
    raise Conflict(f"{operation} lost the race for the next version {MAX_REBASES} times; planned again")


# -- OPTIMIZE -------------------------------------------------------------------------------------
def _bins(state: DeltaState, policy) -> list[list[dict]]:
    """Small files grouped by partition, then packed in order into bins of the target size."""
    groups: dict[str, list[dict]] = {}
    for path, add in sorted(state.live.items()):
        size = int(add.get("size") or 0)
        if add.get("deletionVector") or size >= policy.target_file_bytes * 3 // 4:
            continue
        if state.resolve(path) is None:
            continue  # never copy a file from outside the table into it
        key = json.dumps(add.get("partitionValues") or {}, sort_keys=True)
        groups.setdefault(key, []).append(add)
    bins = []
    for adds in groups.values():
        current, size = [], 0
        for add in adds:
            if current and size + int(add.get("size") or 0) > policy.target_file_bytes:
                bins.append(current)
                current, size = [], 0
            current.append(add)
            size += int(add.get("size") or 0)
        bins.append(current)
    return [b for b in bins if len(b) >= policy.min_input_files]


def _partition_dir(partition_values: dict, partition_columns: list[str]) -> str:
    parts = []
    for column in partition_columns:
        value = partition_values.get(column)
        value = "__HIVE_DEFAULT_PARTITION__" if value is None else value
        parts.append(f"{column}={quote(str(value), safe='')}")
    return "/".join(parts)


def _stats(rows: int, null_counts: dict) -> str:
    return json.dumps({"numRecords": rows, "nullCount": null_counts}, separators=(",", ":"))


class _Output:
    """One new data file, written batch by batch. Batches are gathered into row groups of up to
    ROW_GROUP_BYTES (small input files must not become as many tiny row groups): memory holds
    one row group and the compressed file."""

    ROW_GROUP_BYTES = 64 * 1024 * 1024

    def __init__(self, schema: pa.Schema):
        self.buffer = io.BytesIO()
        self.writer = pq.ParquetWriter(self.buffer, schema, compression="zstd")
        self.schema = schema
        self.rows = 0
        self.nulls = {name: 0 for name in schema.names}
        self.pending: list[pa.RecordBatch] = []
        self.pending_bytes = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.schema.equals(self.schema):  # same columns, other schema metadata
            batch = pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
        self.pending.append(batch)
        self.pending_bytes += batch.nbytes
        self.rows += batch.num_rows
        for name, column in zip(batch.schema.names, batch.columns):
            if name in self.nulls:
                self.nulls[name] += column.null_count
        if self.pending_bytes >= self.ROW_GROUP_BYTES:
            self._flush_row_group()

    def _flush_row_group(self) -> None:
        if self.pending:
            table = pa.Table.from_batches(self.pending, schema=self.schema)
            self.writer.write_table(table, row_group_size=max(table.num_rows, 1))
        self.pending, self.pending_bytes = [], 0

    def close(self) -> bytes:
        self._flush_row_group()
        self.writer.close()
        return self.buffer.getvalue()


def _rewrite_bin(state: DeltaState, adds: list[dict], ctx, batch_rows: int) -> list[tuple[dict, int]]:
    """Writes the rows of `adds` into as few files as their schemas allow; returns (add action, rows)."""
    partition_columns = state.metadata.get("partitionColumns") or []
    partition_values = adds[0].get("partitionValues") or {}
    directory = _partition_dir(partition_values, partition_columns)
    results = []
    output: _Output | None = None

    def flush():
        nonlocal output
        if output is None:
            return
        data = output.close()
        name = f"part-00000-{uuid.uuid4()}-c000.zstd.parquet"
        relative = f"{directory}/{name}" if directory else name
        url = join(state.location, relative)
        storage_within(state.location).put(url, data)
        add = {"path": quote(relative, safe="/=") if directory else name, "partitionValues": partition_values,
               "size": len(data), "modificationTime": now_ms(), "dataChange": False,
               "stats": _stats(output.rows, output.nulls)}
        results.append((add, output.rows))
        output = None

    for add in adds:
        ctx.check()
        url = state.resolve(add["path"])
        reader = pq.ParquetFile(io.BytesIO(storage_within(state.location).read(url)))
        schema = reader.schema_arrow
        if output is not None and not output.schema.equals(schema, check_metadata=False):
            flush()
        if output is None:
            output = _Output(schema)
        for batch in reader.iter_batches(batch_size=batch_rows):
            output.write(batch)
    flush()
    return results


def optimize(table, policy, ctx, *, batch_rows: int = 65536) -> dict:
    state = read_state(table)
    before = state.figures(policy.small_file_bytes)
    ctx.before(before)
    features = set(state.protocol.get("writerFeatures") or [])
    blocking = sorted(features & OPTIMIZE_BLOCKING_FEATURES)
    if blocking:
        raise Skip(f"OPTIMIZE does not rewrite tables with the writer feature(s) {', '.join(blocking)}.")
    bins = _bins(state, policy)
    if not bins:
        raise Skip(f"nothing to compact: fewer than {policy.min_input_files} small files in any partition.")
    total = sum(len(b) for b in bins)
    done = 0
    removes, adds, rows_out, written = [], [], 0, []
    now = now_ms()
    try:
        for files in bins:
            new_files = _rewrite_bin(state, files, ctx, batch_rows)
            written += [a for a, _ in new_files]
            for old in files:
                removes.append({"remove": {
                    "path": old["path"], "deletionTimestamp": now, "dataChange": False, "extendedFileMetadata": True,
                    "partitionValues": old.get("partitionValues") or {}, "size": int(old.get("size") or 0)}})
            for add, rows in new_files:
                adds.append({"add": add})
                rows_out += rows
            done += len(files)
            ctx.progress(f"rewrote {done}/{total} files")
        removed = {old["path"] for files in bins for old in files}
        metrics = {"numRemovedFiles": len(removes), "numAddedFiles": len(adds),
                   "numRemovedBytes": sum(r["remove"]["size"] for r in removes),
                   "numAddedBytes": sum(a["add"]["size"] for a in adds), "numOutputRows": rows_out}
        version = commit_as_catalog(table, ctx, state.version, removes + adds, operation="OPTIMIZE",
                                    parameters={"predicate": "[]", "zOrderBy": "[]", "auto": "true"},
                                    metrics=metrics, removed=removed)
    except BaseException:
        for add in written:  # not committed: the new files are nobody's, remove them now
            try:
                storage_within(state.location).delete(join(state.location, add["path"]))
            except Exception:  # noqa: BLE001 - VACUUM removes what is left
                logger.warning("could not delete uncommitted file %s", add["path"])
        raise
    table.refresh_from_db()
    final = read_state(table)
    after = final.figures(policy.small_file_bytes)
    _report(table, version, final, metrics, policy)
    return {"before": before, "after": after, "committed_version": version,
            "summary": f"rewrote {len(removes)} files into {len(adds)} at version {version}"}


def _report(table, version: int, state: DeltaState, metrics: dict, policy) -> None:
    """The catalog reports its own commit as a client would (POST /delta/metrics), so the
    table's health shows the compacted table and OPTIMIZE is not planned again for it."""
    from commits.models import CommitReport

    sizes = [int(add.get("size") or 0) for add in state.live.values()]
    small = [size for size in sizes if size < policy.small_file_bytes]
    CommitReport.objects.create(
        table=table, commit_version=version, reported_by=table_principal_name(),
        num_files_added=metrics["numAddedFiles"], num_bytes_added=metrics["numAddedBytes"],
        num_files_removed=metrics["numRemovedFiles"], num_bytes_removed=metrics["numRemovedBytes"],
        num_rows_inserted=0, num_rows_removed=0, num_rows_updated=0,
        file_size_histogram={"sorted_bin_boundaries": [0, policy.small_file_bytes],
                             "file_counts": [len(small), len(sizes) - len(small)],
                             "total_bytes": [sum(small), sum(sizes) - sum(small)]})


def table_principal_name() -> str:
    from django.conf import settings

    return settings.UCWEB_MAINTENANCE_PRINCIPAL


def run(operation: str, table, policy, ctx) -> dict:
    try:
        if operation == "OPTIMIZE":
            return optimize(table, policy, ctx)
        if operation == "VACUUM":
            return delta_vacuum.vacuum(table, policy, ctx)
        if operation == "REMOVE_ORPHANS":
            return delta_vacuum.vacuum(table, policy, ctx, orphans_only=True)
        if operation == "CHECKPOINT":
            return delta_checkpoint.checkpoint(table, policy, ctx)
    except StorageOutsideRoot as exc:
        # Planted by someone who can write in the folder; trying again would meet it again.
        raise Skip(f"{exc}; {operation} reads, writes and deletes nothing through it (the link has to go "
                   f"before the table is maintained)") from exc
    raise Skip(f"{operation} does not apply to Delta tables.")


