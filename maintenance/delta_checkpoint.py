"""CHECKPOINT of a catalog-managed Delta table, in the worker: a classic checkpoint of the latest
published version and `_last_checkpoint`, then the log cleaned past the log retention."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq

from catalog.storage import join, storage_within
from commits.formats import delta_log
from commits.formats.delta_checkpoint import CHECKPOINT_SCHEMA, checkpoint_row
from commits.delta_state import DeltaState, checkpoint_url, now_ms, read_state
from maintenance.errors import Skip


def write_checkpoint(table, state: DeltaState, retention_ms: int) -> dict:
    cutoff = now_ms() - retention_ms
    rows = [checkpoint_row("protocol", state.protocol), checkpoint_row("metaData", state.metadata)]
    rows += [checkpoint_row("txn", txn) for txn in state.txns.values()]
    rows += [checkpoint_row("domainMetadata", d) for d in state.domains.values() if not d.get("removed")]
    rows += [checkpoint_row("add", add) for add in state.live.values()]
    rows += [checkpoint_row("remove", r) for r in state.tombstones.values() if int(r.get("deletionTimestamp") or 0) > cutoff]
    buffer = io.BytesIO()
    with pq.ParquetWriter(buffer, CHECKPOINT_SCHEMA) as writer:
        for start in range(0, len(rows), 10_000):
            chunk = rows[start:start + 10_000]
            writer.write_table(pa.Table.from_pylist(
                [{name: row.get(name) for name in CHECKPOINT_SCHEMA.names} for row in chunk], schema=CHECKPOINT_SCHEMA))
    data = buffer.getvalue()
    url = checkpoint_url(state.location, state.version)
    storage = storage_within(state.location)
    storage.put_if_absent(url, data)
    last = {"version": state.version, "size": len(rows), "sizeInBytes": len(data),
            "numOfAddFiles": len(state.live)}
    storage.put(join(state.location, delta_log.LAST_CHECKPOINT), json.dumps(last).encode())
    return last


def clean_log(table, checkpoint_version: int, log_retention_hours: float, ctx) -> int:
    """Deletes commit files and checkpoints below the checkpoint older than the log retention,
    and staged commit files that lost their race (no ratified commit names them)."""
    from commits.models import DeltaCommit

    location = table.storage_location
    cutoff = now_ms() - int(log_retention_hours * 3_600_000)
    log = join(location, delta_log.LOG_DIR)
    storage = storage_within(location)
    ratified = set(DeltaCommit.objects.filter(table_id=table.id).values_list("file_name", flat=True))
    deleted = 0
    for item in storage.list(log):
        name = item.name
        if item.modification_time > cutoff:
            continue
        version = delta_log.log_file_version(name)
        if delta_log.is_staged(item.url):
            if version is not None and version <= (table.latest_published_version or 0) and name not in ratified:
                storage.delete(item.url)
                deleted += 1
            continue
        if version is not None and version < checkpoint_version and (
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
    storage = storage_within(state.location)
    before = {"version": published, "files": len(state.live), "log_files": len(storage.list(
        join(state.location, delta_log.LOG_DIR)))}
    ctx.before(before)
    ctx.progress(f"writing the checkpoint of version {published}")
    last = write_checkpoint(table, state, int(policy.vacuum_retention_hours * 3_600_000))
    deleted = clean_log(table, published, policy.log_retention_hours, ctx)
    after = {**before, "checkpoint": last, "log_files": len(storage.list(join(state.location, delta_log.LOG_DIR))),
             "log_files_deleted": deleted}
    return {"before": before, "after": after,
            "summary": f"checkpoint at version {published}; {deleted} log files past the retention deleted"}
