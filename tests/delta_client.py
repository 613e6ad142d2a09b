"""A small Delta writer that behaves like a Delta client of a catalog-managed table: it writes
real `_delta_log` files (version 0 with protocol and metadata, staged commits under
`_delta_log/_staged_commits/<v>.<uuid>.json`), asks the catalog to ratify them through the
`unitycatalog-client` SDK, publishes by copying to `_delta_log/<v>.json` and reports the
backfill. Reading rebuilds the set of live files from the published log plus the ratified
commits, as the managed-table spec describes."""

from __future__ import annotations

import json
import time
import uuid

import urllib3
from unitycatalog.client import DeltaCommitsApi, TablesApi
from unitycatalog.client.models import (
    CreateStagingTable,
    CreateTable,
    DataSourceFormat,
    DeltaCommit,
    DeltaCommitInfo,
    DeltaGetCommits,
    DeltaGetCommitsResponse,
    TableType,
)
from unitycatalog.client.exceptions import ApiException

from catalog.storage import join, storage_for
from tests.sdk_loop import KeptSDK

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "city", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def log_name(version: int) -> str:
    return f"{version:020d}.json"


def protocol_action(**overrides) -> dict:
    protocol = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["catalogManaged", "vacuumProtocolCheck", "deletionVectors"],
        "writerFeatures": ["catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck", "deletionVectors"],
    }
    protocol.update(overrides)
    return {"protocol": protocol}


def metadata_action(table_id: str, *, configuration: dict | None = None, schema: dict | None = None) -> dict:
    config = {
        "io.unitycatalog.tableId": table_id,
        "delta.enableInCommitTimestamps": "true",
        "delta.enableDeletionVectors": "true",
    }
    if configuration is not None:
        config = configuration
    return {
        "metaData": {
            "id": str(uuid.uuid4()),
            "format": {"provider": "parquet", "options": {}},
            "schemaString": json.dumps(schema or SCHEMA),
            "partitionColumns": [],
            "configuration": config,
            "createdTime": int(time.time() * 1000),
        }
    }


def encode(actions: list[dict]) -> bytes:
    return ("\n".join(json.dumps(a) for a in actions) + "\n").encode()


def write_staged(location: str, file_name: str, *, operation: str = "WRITE", size: int | None = None,
                 data_file: str | None = None) -> int:
    """Writes a real staged commit `_delta_log/_staged_commits/<file_name>` that adds `data_file`
    (padded with blank space to `size` bytes when given) and returns its size."""
    now = int(time.time() * 1000)
    payload = encode([
        {"commitInfo": {"inCommitTimestamp": now, "operation": operation}},
        {"add": {"path": data_file or f"{uuid.uuid4()}.parquet", "size": 100, "modificationTime": now,
                 "dataChange": True, "partitionValues": {}}},
    ])
    if size is not None:
        assert size >= len(payload) + 1, f"a staged commit needs at least {len(payload) + 1} bytes"
        payload += b" " * (size - len(payload) - 1) + b"\n"
    url = join(location, "_delta_log", "_staged_commits", file_name)
    storage_for(url).put(url, payload)
    return len(payload)


def write_version_zero(location: str, table_id: str, *, actions: list[dict] | None = None) -> int:
    """Writes `_delta_log/<0>.json` of a catalog-managed table; returns its in-commit timestamp."""
    now = int(time.time() * 1000)
    actions = actions or [
        {"commitInfo": {"inCommitTimestamp": now, "operation": "CREATE TABLE", "txnId": str(uuid.uuid4())}},
        protocol_action(),
        metadata_action(table_id),
    ]
    url = join(location, "_delta_log", log_name(0))
    storage_for(url).put(url, encode(actions))
    return now


def stage_commit(location: str, version: int, rows_file: str, *, operation: str = "WRITE",
                 txn_id: str | None = None) -> tuple[str, int, int]:
    """Writes a staged commit of `version` adding `rows_file`, as a writer names it
    (`<v>.<uuid>.json`); returns (file name, size, in-commit timestamp)."""
    now = int(time.time() * 1000)
    info = {"inCommitTimestamp": now, "operation": operation}
    if txn_id is not None:
        info["txnId"] = txn_id
    payload = encode([
        {"commitInfo": info},
        {"add": {"path": rows_file, "size": 100, "modificationTime": now, "dataChange": True, "partitionValues": {}}},
    ])
    file_name = f"{version:020d}.{uuid.uuid4()}.json"
    url = join(location, "_delta_log", "_staged_commits", file_name)
    storage_for(url).put(url, payload)
    return file_name, len(payload), now


def publish(location: str, version: int, file_name: str) -> None:
    """Copies a ratified staged commit to `_delta_log/<v>.json`, as a writer publishes it."""
    staged = join(location, "_delta_log", "_staged_commits", file_name)
    target = join(location, "_delta_log", log_name(version))
    storage_for(staged).copy_if_absent(staged, target)


def live_files(location: str, latest: int, ratified: dict[int, str]) -> list[str]:
    """The data files of version `latest` as a reader of a catalog-managed table sees them: the
    published log files, with the catalog's ratified commits (version → staged file name) taking
    precedence."""
    log = join(location, "_delta_log")
    storage = storage_for(log)
    files = {}
    for item in storage.list(log):
        name = item.url.rsplit("/", 1)[-1]
        if "/_staged_commits/" not in item.url and name.endswith(".json") and name[:20].isdigit():
            if int(name[:20]) <= latest:
                files[int(name[:20])] = item.url
    for version, file_name in ratified.items():
        files[version] = join(log, "_staged_commits", file_name)
    missing = [v for v in range(latest + 1) if v not in files]
    assert not missing, f"versions {missing} are neither published nor ratified"
    live: set[str] = set()
    for version in range(latest + 1):
        for line in storage.read(files[version]).decode().splitlines():
            action = json.loads(line)
            if "add" in action:
                live.add(action["add"]["path"])
            elif "remove" in action:
                live.discard(action["remove"]["path"])
    return sorted(live)


class DeltaClient:
    """The SDK's client is opened once and kept, with its HTTP connections (tests/sdk_loop.py), as
    an application that uses the SDK keeps it; calls from several threads at once run
    concurrently. `close()` (or the garbage collector) closes it."""

    def __init__(self, host: str, token: str):
        self.host = host
        self.token = token
        kept = KeptSDK(host, token, name="delta-client")
        self._sdk, self._run, self.close = kept.client, kept.run, kept.close

    def _call(self, api_class, call):
        return self._run(call(api_class(self._sdk)))

    # -- creating ----------------------------------------------------------------------------------
    def stage(self, catalog: str, schema: str, name: str):
        return self._call(TablesApi, lambda api: api.create_staging_table(
            CreateStagingTable(name=name, catalog_name=catalog, schema_name=schema)))

    @staticmethod
    def write_version_zero(location: str, table_id: str, *, actions: list[dict] | None = None) -> None:
        write_version_zero(location, table_id, actions=actions)

    def finalize(self, catalog: str, schema: str, name: str, location: str, **extra):
        return self._call(TablesApi, lambda api: api.create_table(CreateTable(
            name=name, catalog_name=catalog, schema_name=schema, table_type=TableType.MANAGED,
            data_source_format=DataSourceFormat.DELTA, storage_location=location, columns=[], **extra)))

    def create_table(self, catalog: str, schema: str, name: str):
        staging = self.stage(catalog, schema, name)
        self.write_version_zero(staging.staging_location, staging.id)
        return self.finalize(catalog, schema, name, staging.staging_location)

    # -- writing -----------------------------------------------------------------------------------
    @staticmethod
    def stage_commit(location: str, version: int, rows_file: str, *, operation: str = "WRITE") -> DeltaCommitInfo:
        file_name, size, now = stage_commit(location, version, rows_file, operation=operation)
        return DeltaCommitInfo(version=version, timestamp=now, file_name=file_name, file_size=size,
                               file_modification_timestamp=now)

    def ratify(self, table_id: str, location: str, info: DeltaCommitInfo, **extra) -> None:
        self._call(DeltaCommitsApi, lambda api: api.commit(
            DeltaCommit(table_id=table_id, table_uri=location, commit_info=info, **extra)))

    @staticmethod
    def publish(location: str, info: DeltaCommitInfo) -> None:
        publish(location, info.version, info.file_name)

    def backfill(self, table_id: str, location: str, version: int) -> None:
        self._call(DeltaCommitsApi, lambda api: api.commit(
            DeltaCommit(table_id=table_id, table_uri=location, latest_backfilled_version=version)))

    def append(self, table_id: str, location: str, version: int, rows_file: str, *, publish: bool = True):
        info = self.stage_commit(location, version, rows_file)
        self.ratify(table_id, location, info)
        if publish:
            self.publish(location, info)
            self.backfill(table_id, location, version)
        return info

    # -- reading -----------------------------------------------------------------------------------
    def get_commits(self, table_id: str, location: str, start: int = 0, end: int | None = None):
        """GET with a JSON body, as the Delta connectors send it. (The Python SDK's generated
        `get_commits` drops the body of a GET, so it cannot be used for this call.)"""
        body = DeltaGetCommits(table_id=table_id, table_uri=location, start_version=start, end_version=end)
        response = urllib3.request(
            "GET", f"{self.host}/delta/preview/commits", body=body.to_json(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        if response.status != 200:
            raise ApiException(status=response.status, reason=response.data.decode())
        return DeltaGetCommitsResponse.from_json(response.data.decode())

    def snapshot(self, table_id: str, location: str) -> tuple[int, list[str]]:
        """(version, live data files) as a reader of a catalog-managed table sees them."""
        response = self.get_commits(table_id, location)
        latest = response.latest_table_version
        return latest, live_files(location, latest, {c.version: c.file_name for c in response.commits})
