"""The pyiceberg CLI (the `pyiceberg` command of the pyiceberg package) against the Iceberg REST
catalog, run as a user runs it: its own console script in a new process, with the catalog given by
`--uri` and `--warehouse` and the bearer token by pyiceberg's environment configuration
(`PYICEBERG_CATALOG__DEFAULT__TOKEN`; the CLI has no token option, only `--credential` for OAuth
client credentials). `--output json` makes its answers readable here.

It lists namespaces and tables, describes a table, reads and sets its properties and drops it;
a principal with SELECT alone may describe the table and is refused the drop, and one without
grants finds nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from catalog.models import Table
from tests.helpers import grant

pytestmark = pytest.mark.django_db(transaction=True)

CLI = Path(sys.executable).parent / "pyiceberg"


@pytest.fixture
def lake(live_server, bootstrap, make_token, storage_root):
    """Table unity.default.trips (Iceberg, two rows) and `cli(principal, *arguments)`, which runs the
    CLI as that principal and returns (exit status, its JSON answer)."""
    uri = f"{live_server.url}/api/catalog"
    table = RestCatalog("setup", uri=uri, warehouse="unity", token=make_token("admin", admin=True)).create_table(
        ("default", "trips"), schema=Schema(NestedField(1, "id", LongType()), NestedField(2, "city", StringType())))
    table.append(pa.table({"id": pa.array([1, 2], pa.int64()), "city": ["Lyon", "Oslo"]}))

    def cli(principal: str, *arguments: str, warehouse: str = "unity") -> tuple[int, object]:
        env = {key: value for key, value in os.environ.items() if not key.startswith("PYICEBERG_")}
        env["PYICEBERG_CATALOG__DEFAULT__TOKEN"] = make_token(principal, admin=principal == "admin")
        process = subprocess.run(
            [sys.executable, str(CLI), "--uri", uri, "--warehouse", warehouse, "--output", "json", *arguments],
            env=env, capture_output=True, text=True, timeout=120)
        assert process.stdout.strip(), process.stderr[-2000:]
        return process.returncode, json.loads(process.stdout.strip().splitlines()[-1])

    return cli


def test_pyiceberg_cli_lists_describes_sets_properties_and_drops(lake):
    assert lake("admin", "list") == (0, ["default"])
    assert lake("admin", "list", "default") == (0, ["default.trips"])

    status, described = lake("admin", "describe", "--entity", "table", "default.trips")
    assert status == 0
    assert described["identifier"] == ["default", "trips"]
    assert [field["name"] for field in described["metadata"]["schemas"][0]["fields"]] == ["id", "city"]
    assert described["metadata_location"].startswith("file://")

    assert lake("admin", "properties", "set", "table", "default.trips", "owner-team", "data")[0] == 0
    assert lake("admin", "properties", "get", "table", "default.trips", "owner-team") == (0, "data")

    assert lake("admin", "drop", "table", "default.trips") == (0, "Dropped table: default.trips")
    assert lake("admin", "list", "default") == (0, [])
    assert not Table.objects.filter(schema__name="default", name="trips").exists()


def test_pyiceberg_cli_reader_describes_and_is_refused_the_drop(lake):
    grant("reader", "catalog", "unity", "USE CATALOG")
    grant("reader", "schema", "unity.default", "USE SCHEMA", "SELECT")
    assert lake("reader", "describe", "--entity", "table", "default.trips")[0] == 0
    status, answer = lake("reader", "drop", "table", "default.trips")
    assert status == 1 and answer["type"] == "ForbiddenError", answer
    status, answer = lake("reader", "properties", "set", "table", "default.trips", "owner-team", "x")
    assert status == 1 and answer["type"] == "ForbiddenError", answer
    assert lake("admin", "properties", "get", "table", "default.trips", "owner-team")[0] == 1  # never set
    assert Table.objects.filter(schema__name="default", name="trips").exists()


def test_pyiceberg_cli_without_grants_finds_nothing(lake):
    # What the principal may not see answers as a missing thing (no existence oracle).
    hidden = lake("stranger", "list")
    assert hidden == (1, {"type": "NoSuchNamespaceError",
                          "message": "NoSuchWarehouseException: Warehouse (catalog) 'unity' does not exist."})
    missing = lake("admin", "list", warehouse="nowhere")
    assert json.dumps(missing).replace("nowhere", "unity") == json.dumps(hidden)
    status, answer = lake("stranger", "describe", "--entity", "table", "default.trips")
    assert status == 1 and answer["type"] == "NoSuchTableError", answer
    assert lake("stranger", "describe", "--entity", "table", "default.nothing-here")[1]["type"] == "NoSuchTableError"
