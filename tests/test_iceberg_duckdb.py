"""DuckDB's iceberg extension against the Iceberg REST catalog of a live server: DuckDB attaches
the warehouse, creates and writes tables (its commits go through /transactions/commit), reads
tables that pyiceberg wrote, and pyiceberg reads what DuckDB wrote. On file:// storage and on a
real S3-compatible server.

The extensions come from the duckdb-extension-* packages of requirements-dev.txt and are loaded
from their files: nothing is downloaded at run time."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

import duckdb
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestampType

from catalog.models import AuditEvent, Table
from commits import engine as iceberg_service
from catalog.services import principals
from catalog.storage import storage_for
from tests.duckdb_sessions import ICEBERG_EXTENSIONS, duckdb_with, extension_path, sql_string

pytestmark = pytest.mark.django_db(transaction=True)

ICEBERG = "/api/catalog"
WAREHOUSE = "unity"


@pytest.fixture(params=["file", pytest.param("s3", marks=pytest.mark.s3)])
def storage(request) -> dict:
    """Which object store the managed tables go to, and what clients need to reach it."""
    if request.param == "file":
        return {"kind": "file", "root": request.getfixturevalue("storage_root").as_uri()}
    server = request.getfixturevalue("s3_server")
    return {"kind": "s3", "root": request.getfixturevalue("s3_storage_root"), "server": server}


@pytest.fixture
def commits(monkeypatch):
    """The tables of each multi-table commit (POST /transactions/commit) the server handles."""
    calls = []
    original = iceberg_service.commit_transaction

    def spy(**kwargs):
        calls.append([change["identifier"]["name"] for change in kwargs["body"].get("table-changes") or []])
        return original(**kwargs)

    monkeypatch.setattr(iceberg_service, "commit_transaction", spy)
    return calls


@pytest.fixture
def duck(live_server, bootstrap, make_token, storage):
    """A DuckDB connection with the ucweb warehouse attached as `lake`, as the metastore admin."""

    def connect(*, secret_sql: str | None = None) -> duckdb.DuckDBPyConnection:
        con = duckdb_with(ICEBERG_EXTENSIONS)
        if secret_sql is None:
            secret_sql = f"CREATE SECRET ucweb (TYPE ICEBERG, TOKEN {sql_string(make_token('admin', admin=True))})"
        con.execute(secret_sql)
        options = ["TYPE ICEBERG", "SECRET ucweb", f"ENDPOINT {sql_string(live_server.url + ICEBERG)}"]
        if storage["kind"] == "s3":
            server = storage["server"]
            endpoint = urlsplit(server.endpoint_url)
            con.execute(
                f"CREATE SECRET seaweed (TYPE S3, KEY_ID {sql_string(server.access_key)}, "
                f"SECRET {sql_string(server.secret_key)}, REGION {sql_string(server.region)}, "
                f"ENDPOINT {sql_string(endpoint.netloc)}, URL_STYLE 'path', USE_SSL false)"
            )
            # The catalog vends no keys (no STS yet). In DuckDB's default vended-credentials mode
            # the loadTable config (endpoint and region, no keys) would become a secret of its own
            # that shadows this one; with delegation off DuckDB uses this secret.
            options.append("ACCESS_DELEGATION_MODE 'none'")
        con.execute(f"ATTACH {sql_string(WAREHOUSE)} AS lake ({', '.join(options)})")
        return con

    connections = []

    def make(**kwargs):
        connections.append(connect(**kwargs))
        return connections[-1]

    yield make
    for con in connections:
        con.close()


@pytest.fixture
def pyiceberg(live_server, bootstrap, make_token, storage) -> RestCatalog:
    properties = {}
    if storage["kind"] == "s3":
        server = storage["server"]
        properties = {"s3.access-key-id": server.access_key, "s3.secret-access-key": server.secret_key}
    return RestCatalog("ucweb", uri=f"{live_server.url}{ICEBERG}", warehouse=WAREHOUSE,
                       token=make_token("admin", admin=True), **properties)


def test_extensions_load_from_their_packages():
    for name in ICEBERG_EXTENSIONS:
        assert extension_path(name).is_file(), extension_path(name)
    con = duckdb_with(ICEBERG_EXTENSIONS)
    loaded = {row[0] for row in con.execute(
        "SELECT extension_name FROM duckdb_extensions() WHERE loaded").fetchall()}
    assert set(ICEBERG_EXTENSIONS) <= loaded


def test_duckdb_creates_writes_and_reads(duck, pyiceberg, commits, storage):
    con = duck()
    con.execute("CREATE TABLE lake.default.trips (id BIGINT, city VARCHAR, fare DOUBLE, day DATE)")
    commits.clear()
    row = Table.objects.get(schema__name="default", name="trips")
    assert row.data_source_format == "ICEBERG" and row.table_type == "MANAGED"
    assert row.storage_location.startswith(storage["root"] + "/tables/")
    assert [(c.name, c.type_name) for c in row.columns.order_by("position")] == [
        ("id", "LONG"), ("city", "STRING"), ("fare", "DOUBLE"), ("day", "DATE")]

    con.execute("INSERT INTO lake.default.trips VALUES (1, 'Oslo', 12.5, DATE '2024-01-01'), "
                "(2, 'Rome', 20.0, DATE '2024-01-02')")
    con.execute("INSERT INTO lake.default.trips SELECT 2 + i, 'Lima', i * 1.5, DATE '2024-01-03' "
                "FROM range(1, 4) t(i)")
    assert commits == [["trips"], ["trips"]]
    assert con.execute("SELECT count(*), sum(fare) FROM lake.default.trips").fetchone() == (5, 41.5)
    assert con.execute("SELECT id FROM lake.default.trips WHERE city = 'Rome'").fetchall() == [(2,)]

    table = pyiceberg.load_table(("default", "trips"))
    assert len(table.snapshots()) == 2
    arrow = table.scan().to_arrow().sort_by("id")
    assert arrow.column("id").to_pylist() == [1, 2, 3, 4, 5]
    assert arrow.column("city").to_pylist() == ["Oslo", "Rome", "Lima", "Lima", "Lima"]
    assert table.scan(row_filter="fare >= 20").to_arrow().column("id").to_pylist() == [2]
    data_files = [o.url for o in storage_for(table.metadata.location).list(table.metadata.location)
                  if o.url.endswith(".parquet")]
    assert len(data_files) == 2
    assert AuditEvent.objects.filter(action="commitIcebergTable", securable_name="unity.default.trips").exists()

    # What pyiceberg appends next, DuckDB sees on its next query.
    table.append(pa.Table.from_pylist([{"id": 6, "city": "Oslo", "fare": 1.0, "day": datetime(2024, 1, 4).date()}],
                                      schema=table.schema().as_arrow()))
    assert con.execute("SELECT count(*) FROM lake.default.trips WHERE city = 'Oslo'").fetchone() == (2,)


def test_duckdb_reads_a_pyiceberg_table(duck, pyiceberg):
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "ts", TimestampType()),
        NestedField(3, "category", StringType()),
        NestedField(4, "amount", DoubleType()),
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"))
    table = pyiceberg.create_table(("default", "events"), schema=schema, partition_spec=spec)
    arrow_schema = table.schema().as_arrow()
    table.append(pa.Table.from_pylist([
        {"id": i, "ts": datetime(2024, 1, 1 + i % 3, 12), "category": "ab"[i % 2], "amount": float(i)}
        for i in range(1, 11)], schema=arrow_schema))
    first_snapshot = table.current_snapshot().snapshot_id
    table.delete(delete_filter="id > 8")

    con = duck()
    assert con.execute("SELECT count(*), sum(amount) FROM lake.default.events").fetchone() == (8, 36.0)
    assert con.execute(
        "SELECT category, count(*) FROM lake.default.events WHERE ts >= TIMESTAMP '2024-01-02' "
        "GROUP BY category ORDER BY category").fetchall() == [("a", 3), ("b", 3)]
    # DuckDB's own snapshot time travel over the catalog's metadata.
    assert con.execute(
        f"SELECT count(*) FROM lake.default.events AT (VERSION => {first_snapshot})").fetchone() == (10,)
    tables = {row[2] for row in con.execute("SHOW ALL TABLES").fetchall() if row[0] == "lake"}
    assert "events" in tables


def test_duckdb_schemas_and_drops(duck, pyiceberg, commits):
    con = duck()
    con.execute("CREATE SCHEMA lake.staging")
    assert pyiceberg.namespace_exists("staging")
    con.execute("CREATE TABLE lake.staging.t AS SELECT range AS id FROM range(3)")
    assert pyiceberg.load_table(("staging", "t")).scan().to_arrow().num_rows == 3
    con.execute("DROP TABLE lake.staging.t")
    assert not pyiceberg.table_exists(("staging", "t"))
    con.execute("DROP SCHEMA lake.staging")
    assert not pyiceberg.namespace_exists("staging")


def test_duckdb_transaction_over_two_tables(duck, pyiceberg, commits):
    con = duck()
    con.execute("CREATE TABLE lake.default.a (id BIGINT)")
    con.execute("CREATE TABLE lake.default.b (id BIGINT)")
    commits.clear()
    con.execute("BEGIN")
    con.execute("INSERT INTO lake.default.a VALUES (1)")
    con.execute("INSERT INTO lake.default.b VALUES (2)")
    con.execute("COMMIT")
    # One request carries both tables: they commit together or not at all.
    assert len(commits) == 1 and sorted(commits[0]) == ["a", "b"]
    assert pyiceberg.load_table(("default", "a")).scan().to_arrow().column("id").to_pylist() == [1]
    assert pyiceberg.load_table(("default", "b")).scan().to_arrow().column("id").to_pylist() == [2]


@pytest.mark.parametrize("storage", ["file"], indirect=True)
def test_duckdb_with_oauth_client_credentials(duck, live_server, pyiceberg):
    _, client_id, client_secret = principals.create_service_principal(name="duck", admin=True)
    con = duck(secret_sql=(
        f"CREATE SECRET ucweb (TYPE ICEBERG, CLIENT_ID {sql_string(client_id)}, "
        f"CLIENT_SECRET {sql_string(client_secret)}, "
        f"OAUTH2_SERVER_URI {sql_string(live_server.url + ICEBERG + '/v1/oauth/tokens')})"))
    con.execute("CREATE TABLE lake.default.by_duck AS SELECT 1 AS id")
    assert Table.objects.get(name="by_duck").owner == "duck"
    assert pyiceberg.load_table(("default", "by_duck")).scan().to_arrow().num_rows == 1

    with pytest.raises(duckdb.Error):
        duck(secret_sql=(
            f"CREATE SECRET ucweb (TYPE ICEBERG, CLIENT_ID {sql_string(client_id)}, CLIENT_SECRET 'wrong', "
            f"OAUTH2_SERVER_URI {sql_string(live_server.url + ICEBERG + '/v1/oauth/tokens')})"))


def test_duckdb_delete_and_update_read_by_pyiceberg(duck, pyiceberg):
    con = duck()
    con.execute("""
        CREATE TABLE lake.default.accounts (id BIGINT, owner VARCHAR, balance DOUBLE);
        INSERT INTO lake.default.accounts SELECT i, 'owner' || i, i * 10.0 FROM range(1, 6) t(i);
        DELETE FROM lake.default.accounts WHERE id = 2;
        UPDATE lake.default.accounts SET balance = 0 WHERE id = 5;
    """)
    assert con.execute("SELECT id, balance FROM lake.default.accounts ORDER BY id").fetchall() == [
        (1, 10.0), (3, 30.0), (4, 40.0), (5, 0.0)]
    arrow = pyiceberg.load_table(("default", "accounts")).scan().to_arrow().sort_by("id")
    assert arrow.column("id").to_pylist() == [1, 3, 4, 5]
    assert arrow.column("balance").to_pylist() == [10.0, 30.0, 40.0, 0.0]


def test_duckdb_commit_conflict_changes_nothing(duck, pyiceberg):
    con = duck()
    con.execute("CREATE TABLE lake.default.counter (id BIGINT); INSERT INTO lake.default.counter VALUES (1)")
    con.execute("BEGIN; INSERT INTO lake.default.counter VALUES (2)")
    # Another writer commits first: DuckDB's commit must not overwrite it.
    table = pyiceberg.load_table(("default", "counter"))
    table.append(pa.Table.from_pylist([{"id": 3}], schema=table.schema().as_arrow()))
    location = pyiceberg.load_table(("default", "counter")).metadata_location
    with pytest.raises(duckdb.Error, match="409"):
        con.execute("COMMIT")
    assert pyiceberg.load_table(("default", "counter")).metadata_location == location
    assert sorted(pyiceberg.load_table(("default", "counter")).scan().to_arrow().column("id").to_pylist()) == [1, 3]
    # A new transaction sees the other writer's row and commits on top of it.
    reader = duck()
    reader.execute("INSERT INTO lake.default.counter VALUES (2)")
    assert sorted(r[0] for r in reader.execute("SELECT id FROM lake.default.counter").fetchall()) == [1, 2, 3]
