"""What the tests of the catalog's maintenance of managed Delta tables share: a writer of real
parquet data, commits through the Delta test client (staged, ratified, published, backfilled),
tables made of many such commits, and a reader that rebuilds a table's rows from its log as a
Delta reader does."""

from __future__ import annotations

import io
import json
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catalog.storage import join, storage_for
from tests.delta_client import DeltaCommitInfo, encode, log_name


def write_rows(location: str, first_id: int, count: int, tag: str) -> dict:
    """One parquet data file of `count` rows; returns its add action."""
    table = pa.table({"id": pa.array(range(first_id, first_id + count), pa.int64()),
                      "city": pa.array([f"{tag}-{i % 7}" for i in range(count)], pa.string())})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    name = f"part-{uuid.uuid4()}.parquet"
    storage_for(location).put(join(location, name), buffer.getvalue())
    now = int(time.time() * 1000)
    return {"path": name, "size": len(buffer.getvalue()), "modificationTime": now, "dataChange": True,
            "partitionValues": {}, "stats": json.dumps({"numRecords": count})}


def commit(delta, table_id, location, version, add) -> None:
    """Stage, ratify, publish and backfill one commit of one file at `version`."""
    now = int(time.time() * 1000)
    payload = encode([{"commitInfo": {"inCommitTimestamp": now, "operation": "WRITE"}}, {"add": add}])
    file_name = f"{version:020d}.{uuid.uuid4()}.json"
    url = join(location, "_delta_log", "_staged_commits", file_name)
    storage_for(url).put(url, payload)
    info = DeltaCommitInfo(version=version, timestamp=now, file_name=file_name, file_size=len(payload),
                           file_modification_timestamp=now)
    delta.ratify(table_id, location, info)
    delta.publish(location, info)
    delta.backfill(table_id, location, version)


def live_files(delta, table_id, location, version=None) -> list[dict]:
    """The add actions live at `version` (default latest), from the published log and the
    ratified commits, as a reader of a catalog-managed table rebuilds them."""
    log = join(location, "_delta_log")
    response = delta.get_commits(table_id, location)
    target = response.latest_table_version if version is None else version
    staged = {c.version: join(log, "_staged_commits", c.file_name) for c in response.commits}
    live: dict[str, dict] = {}
    storage = storage_for(log)
    for v in range(target + 1):
        url = staged.get(v) or join(log, log_name(v))
        for line in storage.read(url).decode().splitlines():
            action = json.loads(line)
            if "add" in action:
                live[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    return list(live.values())


def read_rows(delta, table_id, location, version=None) -> pa.Table:
    tables = [pq.read_table(io.BytesIO(storage_for(location).read(join(location, add["path"]))))
              for add in live_files(delta, table_id, location, version)]
    return pa.concat_tables(tables).sort_by([("id", "ascending")])


def make_table(delta, commits: int):
    created = delta.create_table("unity", "default", "events")
    table_id, location = created.table_id, created.storage_location
    for version in range(1, commits + 1):
        commit(delta, table_id, location, version, write_rows(location, version * 10, 10, f"v{version}"))
    return table_id, location


@pytest.fixture
def table_of_20(delta):
    return make_table(delta, 20)
