"""The state of a catalog-managed Delta table at a version, as a reader rebuilds it (maintenance
plans and runs from it; the console previews it): the latest checkpoint at or below the version,
then the published commits `_delta_log/<v>.json`, then the ratified commits the catalog holds
that are not published yet (their staged files).

Only file actions are kept in memory (path, size, partition values, deletion vector), never data."""

from __future__ import annotations

import io
import json
import time
from dataclasses import dataclass, field
from urllib.parse import unquote

import pyarrow.parquet as pq

from catalog.storage import InvalidStorageUrl, StorageObjectNotFound, join, normalize, storage_within
from commits.formats import delta_log
from commits.models import DeltaCommit
from commits.publication import log_file, staged_file


def now_ms() -> int:
    return int(time.time() * 1000)


def checkpoint_url(location: str, version: int) -> str:
    return join(location, delta_log.checkpoint_path(version))


@dataclass
class DeltaState:
    location: str
    version: int = -1
    protocol: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    live: dict[str, dict] = field(default_factory=dict)  # path -> add action
    tombstones: dict[str, dict] = field(default_factory=dict)  # path -> remove action
    txns: dict[str, dict] = field(default_factory=dict)
    domains: dict[str, dict] = field(default_factory=dict)
    last_timestamp: int = 0  # in-commit timestamp of `version`

    def apply(self, actions: list[dict]) -> None:
        for action in actions:
            if "add" in action and isinstance(action["add"], dict):
                add = action["add"]
                self.live[add["path"]] = add
                self.tombstones.pop(add["path"], None)
            elif "remove" in action and isinstance(action["remove"], dict):
                remove = action["remove"]
                self.live.pop(remove["path"], None)
                self.tombstones[remove["path"]] = remove
            elif "metaData" in action:
                self.metadata = action["metaData"]
            elif "protocol" in action:
                self.protocol = action["protocol"]
            elif "txn" in action and isinstance(action["txn"], dict):
                self.txns[action["txn"].get("appId", "")] = action["txn"]
            elif "domainMetadata" in action and isinstance(action["domainMetadata"], dict):
                self.domains[action["domainMetadata"].get("domain", "")] = action["domainMetadata"]
            elif "commitInfo" in action and isinstance(action["commitInfo"], dict):
                info = action["commitInfo"]
                self.last_timestamp = delta_log.commit_timestamp(info)

    # -- figures -------------------------------------------------------------------------------
    def figures(self, small_file_bytes: int) -> dict:
        sizes = [int(add.get("size") or 0) for add in self.live.values()]
        small = sum(1 for size in sizes if size < small_file_bytes)
        return {"version": self.version, "files": len(sizes), "bytes": sum(sizes),
                "small_file_share": round(small / len(sizes), 4) if sizes else 0.0}

    def resolve(self, path: str) -> str | None:
        """The URL of a file the log names, or None when it lies outside the table (a log
        may name any URL: the catalog never reads, rewrites or deletes files of another table).
        The text only: a symbolic link on the way is refused by the storage, which maintenance
        reads and writes through `storage_within(location)`."""
        try:
            if "://" in path or path.startswith("file:"):
                url = normalize(path)
            else:
                url = join(self.location, unquote(path))
        except InvalidStorageUrl:
            return None
        return url if url.startswith(self.location.rstrip("/") + "/") else None


def _checkpoint_actions(data: bytes):
    """The actions of a classic single-file checkpoint, one row group at a time."""
    reader = pq.ParquetFile(io.BytesIO(data))
    for batch in reader.iter_batches(batch_size=4096):
        for row in batch.to_pylist():
            action = {}
            for key, value in row.items():
                if value is not None:
                    action[key] = _plain(value)
            if action:
                yield action


def _plain(value):
    """Parquet maps come back as lists of (key, value) pairs."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list) and not value:
        return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    return value


def last_checkpoint(location: str) -> int | None:
    url = join(location, delta_log.LAST_CHECKPOINT)
    try:
        value = json.loads(storage_within(location).read(url)).get("version")
    except (StorageObjectNotFound, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def read_state(table, *, version: int | None = None) -> DeltaState:
    """The state at `version` (default: the latest ratified version of the table row)."""
    location = normalize(table.storage_location)
    target = table.latest_version if version is None else version
    state = DeltaState(location=location)
    storage = storage_within(location)
    start = 0
    checkpoint = last_checkpoint(location)
    if checkpoint is not None and checkpoint <= target:
        try:
            data = storage.read(checkpoint_url(location, checkpoint))
        except StorageObjectNotFound:
            checkpoint = None
        else:
            state.apply(list(_checkpoint_actions(data)))
            start = checkpoint + 1
            state.version = checkpoint
    staged = {row.version: row.file_name for row in DeltaCommit.objects.filter(
        table_id=table.id, version__gte=start, version__lte=target, published_at__isnull=True).only("version", "file_name")}
    for v in range(start, target + 1):
        url = staged_file(location, staged[v]) if v in staged else log_file(location, v)
        state.apply(delta_log.parse_actions(storage.read(url)))
        state.version = v
    if checkpoint is not None and start > target:
        state.version = checkpoint
    return state


def commit_actions(table, version: int) -> list[dict]:
    """The actions of one version: the ratified staged file if the catalog still holds it
    unpublished, else the published file."""
    location = normalize(table.storage_location)
    row = DeltaCommit.objects.filter(table_id=table.id, version=version, published_at__isnull=True).first()
    url = staged_file(location, row.file_name) if row else log_file(location, version)
    return delta_log.parse_actions(storage_within(location).read(url))


def commit_timestamp(table, version: int) -> int:
    row = DeltaCommit.objects.filter(table_id=table.id, version=version).only("timestamp").first()
    if row is not None:
        return row.timestamp
    return delta_log.commit_timestamp(delta_log.first(commit_actions(table, version), "commitInfo") or {})
