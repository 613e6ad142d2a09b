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

VACUUM deletes files under the table location that no live file action references, that no
remove inside the retention names, and that are older than the retention. CHECKPOINT writes a
classic checkpoint of the latest published version and `_last_checkpoint`, then cleans the log
past the log retention. REMOVE_ORPHANS is VACUUM's unreferenced-files half."""

from __future__ import annotations

import io
import json
import logging
import time
import uuid
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq

from catalog.storage import join, storage_for
from commits import delta as delta_commits
from maintenance import publish
from maintenance.delta_log_state import LOG, DeltaState, checkpoint_url, commit_actions, commit_timestamp, read_state
from maintenance.errors import Conflict, Skip
from maintenance.ownership import own_location
from ucweb.errors import AlreadyExists, ResourceExhausted

logger = logging.getLogger(__name__)

# Writer features whose files VACUUM knows how to find (vacuumProtocolCheck: a VACUUM must
# understand every writer feature of the table, or it could delete what a feature references).
VACUUM_KNOWN_FEATURES = {
    "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping",
    "identityColumns", "deletionVectors", "rowTracking", "timestampNtz", "domainMetadata", "v2Checkpoint",
    "icebergCompatV1", "icebergCompatV2", "inCommitTimestamp", "vacuumProtocolCheck", "catalogManaged",
    "catalogOwned-preview", "typeWidening", "typeWidening-preview", "variantType", "variantType-preview",
    "clustering", "allowColumnDefaults",
}
# OPTIMIZE rewrites parquet as it is (physical column names and field ids included); a feature
# that keeps per-row state outside the data files cannot be bin-packed by copying rows.
OPTIMIZE_BLOCKING_FEATURES = {"rowTracking"}
MAX_REBASES = 20


def _now_ms() -> int:
    return int(time.time() * 1000)


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
    from maintenance.runs import catalog_principal

    caller = catalog_principal()
    location = table.storage_location
    storage = storage_for(location)
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
        timestamp = max(_now_ms(), commit_timestamp(table, latest) + 1)
        info = {"inCommitTimestamp": timestamp, "timestamp": timestamp, "operation": operation,
                "operationParameters": parameters, "readVersion": read_version, "isBlindAppend": False,
                "operationMetrics": {k: str(v) for k, v in metrics.items()}, "engineInfo": "ucweb-maintenance"}
        payload = ("\n".join(json.dumps(a, separators=(",", ":")) for a in [{"commitInfo": info}, *actions]) + "\n").encode()
        file_name = f"{version:020d}.{uuid.uuid4()}.json"
        staged = join(location, LOG, "_staged_commits", file_name)
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
        storage_for(url).put(url, data)
        add = {"path": quote(relative, safe="/=") if directory else name, "partitionValues": partition_values,
               "size": len(data), "modificationTime": _now_ms(), "dataChange": False,
               "stats": _stats(output.rows, output.nulls)}
        results.append((add, output.rows))
        output = None

    for add in adds:
        ctx.check()
        url = state.resolve(add["path"])
        reader = pq.ParquetFile(io.BytesIO(storage_for(url).read(url)))
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
    now = _now_ms()
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
                storage_for(state.location).delete(join(state.location, add["path"]))
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


# -- VACUUM / REMOVE_ORPHANS ----------------------------------------------------------------------
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _z85_decode(text: str) -> bytes:
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for char in text[i:i + 5]:
            value = value * 85 + _Z85.index(char)
        out += value.to_bytes(4, "big")
    return bytes(out)


def _deletion_vector_file(state: DeltaState, dv: dict) -> str | None:
    kind, where = dv.get("storageType"), dv.get("pathOrInlineDv") or ""
    if kind == "u" and len(where) >= 20:
        prefix, encoded = where[:-20], where[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=_z85_decode(encoded))}.bin"
        return state.resolve(f"{prefix}/{name}" if prefix else name)
    if kind == "p":
        return state.resolve(where)
    return None


def _hidden(relative: str) -> bool:
    return any(part.startswith(("_", ".")) and "=" not in part for part in relative.split("/")[:-1]) \
        or relative.rsplit("/", 1)[-1].startswith(("_", "."))


def vacuum(table, policy, ctx, *, orphans_only: bool = False) -> dict:
    own_location(table)
    state = read_state(table)
    unknown = sorted(set(state.protocol.get("writerFeatures") or []) - VACUUM_KNOWN_FEATURES)
    if unknown:
        raise Skip(f"vacuumProtocolCheck: the table uses writer feature(s) {', '.join(unknown)} "
                   f"that the catalog's VACUUM does not know; nothing deleted.")
    retention_ms = int(policy.vacuum_retention_hours * 3_600_000)
    cutoff = _now_ms() - retention_ms
    keep: set[str] = set()
    for path, add in state.live.items():
        url = state.resolve(path)
        if url:
            keep.add(url)
        if add.get("deletionVector"):
            dv = _deletion_vector_file(state, add["deletionVector"])
            if dv:
                keep.add(dv)
    expired_tombstones = set()
    for path, remove in state.tombstones.items():
        url = state.resolve(path)
        if url is None:
            continue
        if orphans_only or int(remove.get("deletionTimestamp") or 0) > cutoff:
            keep.add(url)  # time travel inside the retention may still read it
        else:
            expired_tombstones.add(url)
        if remove.get("deletionVector") and int(remove.get("deletionTimestamp") or 0) > cutoff:
            dv = _deletion_vector_file(state, remove["deletionVector"])
            if dv:
                keep.add(dv)
    storage = storage_for(state.location)
    prefix = state.location.rstrip("/") + "/"
    deleted = deleted_bytes = scanned = 0
    before = state.figures(policy.small_file_bytes)
    ctx.before(before)
    for item in storage.list(state.location):
        scanned += 1
        relative = item.url[len(prefix):]
        if _hidden(relative) or item.url in keep:
            continue
        if item.modification_time > cutoff:
            continue  # a writer may be about to commit it; only files older than the retention go
        ctx.check()
        storage.delete(item.url)
        deleted += 1
        deleted_bytes += item.size
        if deleted % 100 == 0:
            ctx.progress(f"deleted {deleted} files")
    return {"before": before, "after": {**before, "files_deleted": deleted, "bytes_deleted": deleted_bytes,
                                        "files_scanned": scanned},
            "summary": f"deleted {deleted} unreferenced files ({deleted_bytes} bytes) older than "
                       f"{policy.vacuum_retention_hours:g} hours"}


# -- CHECKPOINT and log cleanup --------------------------------------------------------------------
_MAP = pa.map_(pa.string(), pa.string())
_DV = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()), ("offset", pa.int32()),
                 ("sizeInBytes", pa.int32()), ("cardinality", pa.int64())])
CHECKPOINT_SCHEMA = pa.schema([
    ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])),
    ("add", pa.struct([("path", pa.string()), ("partitionValues", _MAP), ("size", pa.int64()),
                       ("modificationTime", pa.int64()), ("dataChange", pa.bool_()), ("stats", pa.string()),
                       ("tags", _MAP), ("deletionVector", _DV), ("baseRowId", pa.int64()),
                       ("defaultRowCommitVersion", pa.int64()), ("clusteringProvider", pa.string())])),
    ("remove", pa.struct([("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_()),
                          ("extendedFileMetadata", pa.bool_()), ("partitionValues", _MAP), ("size", pa.int64()),
                          ("deletionVector", _DV), ("baseRowId", pa.int64()),
                          ("defaultRowCommitVersion", pa.int64())])),
    ("metaData", pa.struct([("id", pa.string()), ("name", pa.string()), ("description", pa.string()),
                            ("format", pa.struct([("provider", pa.string()), ("options", _MAP)])),
                            ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string())),
                            ("configuration", _MAP), ("createdTime", pa.int64())])),
    ("protocol", pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32()),
                            ("readerFeatures", pa.list_(pa.string())), ("writerFeatures", pa.list_(pa.string()))])),
    ("domainMetadata", pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())])),
])


def _row(kind: str, value: dict) -> dict:
    struct = CHECKPOINT_SCHEMA.field(kind).type
    clean = {}
    for child in struct:
        item = value.get(child.name)
        if item is None:
            continue
        if pa.types.is_map(child.type):
            item = list((item or {}).items())
        elif pa.types.is_struct(child.type) and isinstance(item, dict):
            item = {f.name: (list(item[f.name].items()) if pa.types.is_map(f.type) and isinstance(item.get(f.name), dict)
                             else item.get(f.name)) for f in child.type}
        clean[child.name] = item
    return {kind: clean}


def write_checkpoint(table, state: DeltaState, retention_ms: int) -> dict:
    cutoff = _now_ms() - retention_ms
    rows = [_row("protocol", state.protocol), _row("metaData", state.metadata)]
    rows += [_row("txn", txn) for txn in state.txns.values()]
    rows += [_row("domainMetadata", d) for d in state.domains.values() if not d.get("removed")]
    rows += [_row("add", add) for add in state.live.values()]
    rows += [_row("remove", r) for r in state.tombstones.values() if int(r.get("deletionTimestamp") or 0) > cutoff]
    buffer = io.BytesIO()
    with pq.ParquetWriter(buffer, CHECKPOINT_SCHEMA) as writer:
        for start in range(0, len(rows), 10_000):
            chunk = rows[start:start + 10_000]
            writer.write_table(pa.Table.from_pylist(
                [{name: row.get(name) for name in CHECKPOINT_SCHEMA.names} for row in chunk], schema=CHECKPOINT_SCHEMA))
    data = buffer.getvalue()
    url = checkpoint_url(state.location, state.version)
    storage = storage_for(url)
    storage.put_if_absent(url, data)
    last = {"version": state.version, "size": len(rows), "sizeInBytes": len(data),
            "numOfAddFiles": len(state.live)}
    storage.put(join(state.location, LOG, "_last_checkpoint"), json.dumps(last).encode())
    return last


def clean_log(table, checkpoint_version: int, log_retention_hours: float, ctx) -> int:
    """Deletes commit files and checkpoints below the checkpoint older than the log retention,
    and staged commit files that lost their race (no ratified commit names them)."""
    from commits.models import DeltaCommit

    location = table.storage_location
    cutoff = _now_ms() - int(log_retention_hours * 3_600_000)
    log = join(location, LOG)
    storage = storage_for(log)
    ratified = set(DeltaCommit.objects.filter(table_id=table.id).values_list("file_name", flat=True))
    deleted = 0
    for item in storage.list(log):
        name = item.name
        if item.modification_time > cutoff:
            continue
        if "/_staged_commits/" in item.url:
            version = name[:20]
            if version.isdigit() and int(version) <= (table.latest_published_version or 0) and name not in ratified:
                storage.delete(item.url)
                deleted += 1
            continue
        if name[:20].isdigit() and int(name[:20]) < checkpoint_version and (
                name.endswith(".json") or ".checkpoint." in name or name.endswith(".crc")):
            storage.delete(item.url)
            deleted += 1
        ctx.check()
    return deleted


def checkpoint(table, policy, ctx) -> dict:
    published = table.latest_published_version
    if published is None or published < 1:
        raise Skip("no published version past version 0 to checkpoint yet")
    state = read_state(table, version=published)
    if "v2Checkpoint" in set(state.protocol.get("writerFeatures") or []):
        raise Skip("the table uses V2 checkpoints; the catalog writes classic checkpoints only")
    before = {"version": published, "files": len(state.live), "log_files": len(storage_for(
        table.storage_location).list(join(table.storage_location, LOG)))}
    ctx.before(before)
    ctx.progress(f"writing the checkpoint of version {published}")
    last = write_checkpoint(table, state, int(policy.vacuum_retention_hours * 3_600_000))
    deleted = clean_log(table, published, policy.log_retention_hours, ctx)
    after = {**before, "checkpoint": last, "log_files": len(storage_for(table.storage_location).list(
        join(table.storage_location, LOG))), "log_files_deleted": deleted}
    return {"before": before, "after": after,
            "summary": f"checkpoint at version {published}; {deleted} log files past the retention deleted"}


def run(operation: str, table, policy, ctx) -> dict:
    if operation == "OPTIMIZE":
        return optimize(table, policy, ctx)
    if operation == "VACUUM":
        return vacuum(table, policy, ctx)
    if operation == "REMOVE_ORPHANS":
        return vacuum(table, policy, ctx, orphans_only=True)
    if operation == "CHECKPOINT":
        return checkpoint(table, policy, ctx)
    raise Skip(f"{operation} does not apply to Delta tables.")

