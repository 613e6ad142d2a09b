"""`make run` with nothing configured: SQLite and file:// storage. The commit paths write their rows
with PostgreSQL-only SQL when they can (commits/one_statement.py, catalog/rows.py); here the same
commits must go through on the embedded database, with a user who holds only grants."""

from __future__ import annotations

import subprocess

import pyarrow as pa
import pytest
import urllib3
from pyiceberg.catalog.rest import RestCatalog

from tests.delta_client import DeltaClient
from tests.helpers import UC
from tests.server_process import ROOT, ServerProcess

pytestmark = pytest.mark.slow


def manage(server: ServerProcess, *args: str) -> str:
    python = server.env["UCWEB_PYTHON"]
    done = subprocess.run([python, "manage.py", *args], cwd=ROOT, env=server.env, capture_output=True,
                          text=True, timeout=120, check=True)
    return done.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    process = ServerProcess(tmp_path_factory.mktemp("embedded"), DATABASE_URL="").start()
    try:
        yield process
    finally:
        process.stop()


def token(server: ServerProcess, *args: str) -> str:
    return manage(server, "issue_token", *args).strip().splitlines()[-1]


def test_the_server_runs_on_sqlite(server):
    assert (server.var_dir / "ucweb.sqlite3").exists()


def test_delta_commits_on_sqlite(server):
    client = DeltaClient(f"{server.url}{UC}", token(server, "embedded-admin", "--admin"))
    info = client.create_table("unity", "default", "delta_on_sqlite")
    table_id, location = info.table_id, info.storage_location
    for version in (1, 2, 3):
        client.append(table_id, location, version, f"part-{version}.parquet", publish=version < 3)
    latest, _ = client.snapshot(table_id, location)
    assert latest == 3


def test_iceberg_commits_on_sqlite_by_a_user_with_grants(server):
    admin = token(server, "embedded-admin", "--admin")
    writer = token(server, "embedded-writer")
    http = urllib3.PoolManager()
    body = {"changes": [{"principal": "embedded-writer", "add": ["USE CATALOG", "USE SCHEMA", "CREATE SCHEMA",
                                                                  "CREATE TABLE", "SELECT", "MODIFY"]}]}
    answer = http.request("PATCH", f"{server.url}{UC}/permissions/catalog/unity", json=body,
                          headers={"Authorization": f"Bearer {admin}"})
    assert answer.status == 200, answer.data
    catalog = RestCatalog("embedded", uri=f"{server.url}/api/catalog", warehouse="unity", token=writer)
    catalog.create_namespace("sqlite_ns")
    table = catalog.create_table("sqlite_ns.events", schema=pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": [1, 2, 3]}))
    with table.transaction() as transaction:
        transaction.set_properties(owner_team="lake")
    table = catalog.load_table("sqlite_ns.events")
    assert table.properties["owner_team"] == "lake"
    assert sorted(table.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
