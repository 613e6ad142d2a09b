"""A Delta writer that speaks the UC Delta REST API (`/delta/v1`, managed tables spec 1.0) over
HTTP, as DuckDB and Delta 4.4 do: createStagingTable, a real `0.json`, createTable, staged commits
proposed with `add-commit` (assert-table-uuid, optionally assert-etag), publication and
`set-latest-backfilled-version`, and reads that combine `_delta_log` with loadTable's commits."""

from __future__ import annotations

import json
import time
import uuid

import urllib3

from catalog.storage import join, storage_for
from tests.delta_client import SCHEMA, encode, log_name, metadata_action, protocol_action

PROTOCOL = {
    "min-reader-version": 3,
    "min-writer-version": 7,
    "reader-features": ["catalogManaged", "vacuumProtocolCheck", "deletionVectors"],
    "writer-features": ["catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck", "deletionVectors"],
}


class DeltaV1Error(Exception):
    def __init__(self, status: int, body):
        super().__init__(f"{status}: {body}")
        self.status = status
        self.body = body

    @property
    def type(self) -> str | None:
        return (self.body or {}).get("error", {}).get("type") if isinstance(self.body, dict) else None


class DeltaV1Client:
    def __init__(self, host: str, token: str, *, pool: urllib3.PoolManager | None = None):
        """`host` is the UC root, e.g. http://127.0.0.1:8000/api/2.1/unity-catalog."""
        self.root = f"{host}/delta/v1"
        self.token = token
        self.http = pool or urllib3.PoolManager(retries=False)

    def call(self, method: str, path: str, body: dict | None = None, *, fields: dict | None = None):
        response = self.http.request(
            method, f"{self.root}/{path}", fields=fields,
            body=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        data = json.loads(response.data) if response.data else None
        if response.status >= 300:
            raise DeltaV1Error(response.status, data)
        return data

    @staticmethod
    def table_path(catalog: str, schema: str, name: str) -> str:
        return f"catalogs/{catalog}/schemas/{schema}/tables/{name}"

    # -- creating ----------------------------------------------------------------------------------
    def create_table(self, catalog: str, schema: str, name: str, **extra) -> dict:
        staging = self.call("POST", f"catalogs/{catalog}/schemas/{schema}/staging-tables", {"name": name})
        table_id, location = staging["table-id"], staging["location"]
        now = int(time.time() * 1000)
        url = join(location, "_delta_log", log_name(0))
        storage_for(url).put(url, encode([
            {"commitInfo": {"inCommitTimestamp": now, "operation": "CREATE TABLE", "txnId": str(uuid.uuid4())}},
            protocol_action(), metadata_action(table_id)]))
        body = {
            "name": name, "table-type": "MANAGED", "location": location,
            "columns": {"type": "struct", "fields": SCHEMA["fields"]},
            "properties": {"io.unitycatalog.tableId": table_id, "delta.enableInCommitTimestamps": "true",
                           "delta.enableDeletionVectors": "true"},
            "protocol": PROTOCOL, "last-commit-timestamp-ms": now,
        }
        body.update(extra)
        return self.call("POST", f"catalogs/{catalog}/schemas/{schema}/tables", body)

    def load(self, catalog: str, schema: str, name: str) -> dict:
        return self.call("GET", self.table_path(catalog, schema, name))

    # -- writing -----------------------------------------------------------------------------------
    @staticmethod
    def stage_commit(location: str, version: int, rows_file: str, *, operation: str = "WRITE",
                     txn_id: str | None = None) -> dict:
        now = int(time.time() * 1000)
        payload = encode([
            {"commitInfo": {"inCommitTimestamp": now, "operation": operation, "txnId": txn_id or str(uuid.uuid4())}},
            {"add": {"path": rows_file, "size": 100, "modificationTime": now, "dataChange": True,
                     "partitionValues": {}}},
        ])
        file_name = f"{version:020d}.{uuid.uuid4()}.json"
        url = join(location, "_delta_log", "_staged_commits", file_name)
        storage_for(url).put(url, payload)
        return {"version": version, "timestamp": now, "file-name": file_name, "file-size": len(payload),
                "file-modification-timestamp": now}

    def update(self, table: dict, updates: list[dict], *, etag: str | None = None, catalog="unity",
               schema="default") -> dict:
        requirements = [{"type": "assert-table-uuid", "uuid": table["table-uuid"]}]
        if etag is not None:
            requirements.append({"type": "assert-etag", "etag": etag})
        return self.call("POST", self.table_path(catalog, schema, table["name"]),
                         {"requirements": requirements, "updates": updates})

    def commit(self, table: dict, commit: dict, *, etag: str | None = None, extra: list[dict] = ()) -> dict:
        return self.update(table, [{"action": "add-commit", "commit": commit}, *extra], etag=etag)

    @staticmethod
    def publish(location: str, commit: dict) -> None:
        staged = join(location, "_delta_log", "_staged_commits", commit["file-name"])
        target = join(location, "_delta_log", log_name(commit["version"]))
        storage_for(staged).copy_if_absent(staged, target)

    def backfill(self, table: dict, version: int) -> dict:
        return self.update(table, [{"action": "set-latest-backfilled-version", "latest-published-version": version}])

    def append(self, table: dict, version: int, rows_file: str, *, publish: bool = True) -> dict:
        commit = self.stage_commit(table["location"], version, rows_file)
        self.commit(table, commit)
        if publish:
            self.publish(table["location"], commit)
            self.backfill(table, version)
        return commit

    # -- reading -----------------------------------------------------------------------------------
    def snapshot(self, catalog: str, schema: str, name: str) -> tuple[int, list[str]]:
        """(version, live data files): published log files up to latest-table-version, with the
        catalog's ratified commits taking precedence, as the spec's read path says."""
        loaded = self.load(catalog, schema, name)
        location = loaded["metadata"]["location"]
        latest = loaded["latest-table-version"]
        log = join(location, "_delta_log")
        storage = storage_for(log)
        files = {}
        for item in storage.list(log):
            base = item.url.rsplit("/", 1)[-1]
            if "/_staged_commits/" not in item.url and base.endswith(".json") and base[:20].isdigit():
                if int(base[:20]) <= latest:
                    files[int(base[:20])] = item.url
        for commit in loaded["commits"]:
            files[commit["version"]] = join(log, "_staged_commits", commit["file-name"])
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
        return latest, sorted(live)
