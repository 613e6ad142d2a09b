"""Commit to several catalog-managed Delta tables of ucweb at once: all of them or none.

A pipeline writes its data files with its engine (PySpark, Sail, ...) into each table's location,
then describes them here; the client stages one Delta commit per table
(`_delta_log/_staged_commits/<version>.<uuid>.json`, as the managed-table protocols require) and
asks the catalog to ratify all of them in one transaction (`POST .../transactions/commit`):

    txn = DeltaTransaction("http://localhost:8080", token)           # /delta/v1; api="preview" for seed 000
    txn.append("unity.sales.orders", files_under(orders_location, "batch-42"))
    txn.append("unity.sales.totals", files_under(totals_location, "batch-42"))
    answer = txn.commit()   # {"transaction-id": ..., "results": [{..., "latest-table-version": 8}, ...]}

Each table's next version is the one after its latest ratified version when `append` is called; a
writer that committed in between makes the transaction fail as a whole (409, nothing ratified):
build a new one. `commit` sends the same transaction id again after a lost answer, so a retry
never ratifies twice. The staged files live in storage the client writes itself: `file://` tables
by default; pass `put(url, data)` for another store (e.g. boto3 with the credentials the catalog
vends)."""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlparse

import requests

PREFIX = "/api/2.1/unity-catalog"


@dataclass
class DataFile:
    """A data file of a table: its path relative to the table's location, its size in bytes."""

    path: str
    size: int
    modification_time: int = 0  # epoch milliseconds; 0: now
    partition_values: dict = field(default_factory=dict)
    num_records: int | None = None


def files_under(location: str, folder: str = "") -> list[DataFile]:
    """The Parquet files under `folder` of a `file://` table location (what an engine wrote there
    with `df.write.parquet(...)`), hidden files (`_SUCCESS`, `.crc`) left out."""
    root = _local(location)
    found = []
    for directory, _, names in os.walk(os.path.join(root, folder)):
        for name in sorted(names):
            if name.endswith(".parquet") and not name.startswith(("_", ".")):
                full = os.path.join(directory, name)
                stat = os.stat(full)
                found.append(DataFile(os.path.relpath(full, root).replace(os.sep, "/"), stat.st_size,
                                      int(stat.st_mtime * 1000)))
    return sorted(found, key=lambda data_file: data_file.path)


def _local(url: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme != "file":
        raise ValueError(f"{url} is not a file:// location; pass put= to write to it.")
    return unquote(parsed.path)


def put_local(url: str, data: bytes) -> None:
    path = _local(url)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "xb") as staged:  # a staged commit's name is new: never overwrite one
        staged.write(data)


def commit_file(files: list[DataFile], *, operation: str, txn_id: str, now: int) -> bytes:
    """A Delta commit adding `files`, as newline-delimited JSON actions (commitInfo first, with the
    in-commit timestamp catalog-managed tables require)."""
    actions = [{"commitInfo": {"inCommitTimestamp": now, "timestamp": now, "operation": operation,
                               "operationParameters": {"mode": "Append"}, "isBlindAppend": True,
                               "txnId": txn_id, "engineInfo": "ucweb-client"}}]
    for data_file in files:
        add = {"path": quote(data_file.path), "partitionValues": data_file.partition_values, "size": data_file.size,
               "modificationTime": data_file.modification_time or now, "dataChange": True}
        if data_file.num_records is not None:
            add["stats"] = json.dumps({"numRecords": data_file.num_records})
        actions.append({"add": add})
    return ("\n".join(json.dumps(action) for action in actions) + "\n").encode()


class TransactionFailed(Exception):
    def __init__(self, status: int, body):
        super().__init__(f"{status}: {body}")
        self.status, self.body = status, body


class DeltaTransaction:
    def __init__(self, url: str, token: str, *, api: str = "v1", transaction_id: str | None = None,
                 session: requests.Session | None = None, put=put_local, timeout: float = 60):
        if api not in ("v1", "preview"):
            raise ValueError("api is v1 (/delta/v1) or preview (/delta/preview/commits).")
        self.base, self.api, self.put, self.timeout = url.rstrip("/") + PREFIX, api, put, timeout
        self.transaction_id = transaction_id or str(uuid.uuid4())
        self.session = session or requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.requests: list[dict] = []

    def _call(self, method: str, path: str, **kwargs):
        response = self.session.request(method, self.base + path, timeout=self.timeout, **kwargs)
        try:
            body = response.json() if response.content else None
        except ValueError:
            body = response.text
        if response.status_code != 200:
            raise TransactionFailed(response.status_code, body)
        return body

    def _table(self, full_name: str) -> tuple[str, str, int]:
        """The table's id, location and latest ratified version."""
        catalog, schema, name = full_name.split(".")
        if self.api == "v1":
            loaded = self._call("GET", f"/delta/v1/catalogs/{quote(catalog, safe='')}/schemas/"
                                       f"{quote(schema, safe='')}/tables/{quote(name, safe='')}")
            return loaded["metadata"]["table-uuid"], loaded["metadata"]["location"], loaded["latest-table-version"]
        info = self._call("GET", f"/tables/{quote(full_name, safe='')}")
        table_id, location = info["table_id"], info["storage_location"]
        commits = self._call("GET", "/delta/preview/commits", params={"table_id": table_id, "table_uri": location})
        return table_id, location, commits["latest_table_version"]

    def append(self, full_name: str, files: list[DataFile], *, operation: str = "WRITE") -> int:
        """Stages the commit of the next version of `full_name` (catalog.schema.table) adding
        `files`; returns that version. Nothing is ratified before `commit`."""
        table_id, location, latest = self._table(full_name)
        version, now = latest + 1, int(time.time() * 1000)
        payload = commit_file(files, operation=operation, txn_id=f"{self.transaction_id}/{table_id}", now=now)
        file_name = f"{version:020d}.{uuid.uuid4()}.json"
        self.put(f"{location.rstrip('/')}/_delta_log/_staged_commits/{file_name}", payload)
        commit = {"version": version, "timestamp": now, "file_name": file_name, "file_size": len(payload),
                  "file_modification_timestamp": now}
        if self.api == "preview":
            self.requests.append({"table_id": table_id, "table_uri": location, "commit_info": commit})
        else:
            catalog, schema, name = full_name.split(".")
            self.requests.append({
                "identifier": {"catalog": catalog, "schema": schema, "name": name},
                "requirements": [{"type": "assert-table-uuid", "uuid": table_id}],
                "updates": [{"action": "add-commit",
                             "commit": {key.replace("_", "-"): value for key, value in commit.items()}}]})
        return version

    def body(self) -> dict:
        if self.api == "preview":
            return {"transaction_id": self.transaction_id, "commits": self.requests}
        return {"transaction-id": self.transaction_id, "table-changes": self.requests}

    def commit(self, *, attempts: int = 3) -> dict:
        """Ratifies every staged commit, or none (TransactionFailed says why). A lost answer is
        asked for again with the same transaction id, which never ratifies twice."""
        path = "/delta/v1/transactions/commit" if self.api == "v1" else "/delta/preview/transactions/commit"
        for attempt in range(attempts):
            try:
                return self._call("POST", path, json=self.body())
            except requests.RequestException:  # refused, reset, timed out or cut off: the answer was lost
                if attempt == attempts - 1:
                    raise
            except TransactionFailed as failed:
                if failed.status < 500 or attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")
