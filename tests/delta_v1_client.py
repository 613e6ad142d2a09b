"""A Delta writer that speaks the UC Delta REST API (`/delta/v1`, managed tables spec 1.0) over
HTTP, as DuckDB and Delta 4.4 do: createStagingTable, a real `0.json`, createTable, staged commits
proposed with `add-commit` (assert-table-uuid, optionally assert-etag), publication and
`set-latest-backfilled-version`, and reads that combine `_delta_log` with loadTable's commits."""

from __future__ import annotations

import json
import uuid

import urllib3

from tests import delta_client
from tests.delta_client import SCHEMA, live_files

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
        now = delta_client.write_version_zero(location, table_id)
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
        file_name, size, now = delta_client.stage_commit(location, version, rows_file, operation=operation,
                                                         txn_id=txn_id or str(uuid.uuid4()))
        return {"version": version, "timestamp": now, "file-name": file_name, "file-size": size,
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
        delta_client.publish(location, commit["version"], commit["file-name"])

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
        latest = loaded["latest-table-version"]
        ratified = {commit["version"]: commit["file-name"] for commit in loaded["commits"]}
        return latest, live_files(loaded["metadata"]["location"], latest, ratified)
