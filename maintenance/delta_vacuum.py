"""VACUUM of a catalog-managed Delta table, in the worker: deletes files under the table location
that no live file action references, that no remove inside the retention names, and that are
older than the retention. REMOVE_ORPHANS is its unreferenced-files half."""

from __future__ import annotations

from catalog.storage import storage_within
from commits.formats import delta_log
from commits.delta_state import DeltaState, now_ms, read_state
from maintenance.errors import Skip
from maintenance.ownership import own_location

# Writer features whose files VACUUM knows how to find (vacuumProtocolCheck: a VACUUM must
# understand every writer feature of the table, or it could delete what a feature references).
VACUUM_KNOWN_FEATURES = {
    "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping",
    "identityColumns", "deletionVectors", "rowTracking", "timestampNtz", "domainMetadata", "v2Checkpoint",
    "icebergCompatV1", "icebergCompatV2", "inCommitTimestamp", "vacuumProtocolCheck", "catalogManaged",
    "catalogOwned-preview", "typeWidening", "typeWidening-preview", "variantType", "variantType-preview",
    "clustering", "allowColumnDefaults",
}


def _deletion_vector_file(state: DeltaState, dv: dict) -> str | None:
    path = delta_log.deletion_vector_path(dv)
    return state.resolve(path) if path else None


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
    cutoff = now_ms() - retention_ms
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
    storage = storage_within(state.location)
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
