"""A real engine against ucweb: PySpark over Spark Connect on Sail (pysail), with ucweb as its Unity
Catalog. Sail creates managed Delta tables through POST /staging-tables and POST /tables, writes
the Delta log itself, asks /delta/preview/commits to ratify every commit, publishes
`_delta_log/<v>.json` and reports it in its next commit (`latest_backfilled_version`).

One Sail server serves the whole session (tests/sail_server.py); it talks to the session's live
server with a bearer token that each test registers again (the database is emptied between
tests). Sail writes table data below a storage root that both processes reach.
The order in which Sail creates a table is replayed without Sail in test_sail_creation_order.py.

What Sail calls, as these tests record it:
  CREATE TABLE      GET /schemas/{c.s}, GET /tables/{c.s.t} (404), POST /staging-tables,
                    POST /tables {MANAGED, DELTA, columns, storage_location}; then it writes
                    _delta_log/00000000000000000000.json (after the table exists)
  INSERT / CTAS     GET /tables/{c.s.t} (several), GET /delta/preview/commits {table_id,
                    table_uri, start_version}, POST /delta/preview/commits {commit_info,
                    latest_backfilled_version, metadata when the schema changes}
  VERSION AS OF     GET /delta/preview/commits with an end_version
  DROP TABLE        DELETE /tables/{c.s.t}
  CREATE SCHEMA     POST /schemas {catalog_name, name}; DROP SCHEMA ... CASCADE: DELETE /schemas/{c.s}
Full names arrive percent-encoded (unity%2Edefault%2Etrips); GET /delta/preview/commits carries
its parameters as a JSON body.
"""

from __future__ import annotations

import json
import secrets
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
from django.db import connection
from pyspark.errors import PySparkException

from catalog.models import AuditEvent, Column, Principal, Schema, StagingTable, Table, Token
from catalog.services import principals
from commits.models import DeltaCommit
from maintenance.models import PurgeRequest
from tests.delta_client import log_name
from tests.delta_commit_support import COMMITS
from tests.helpers import UC
from tests.sail_server import RequestRecorder, SailServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("sail")]


# -- fixtures ------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def sail_token():
    """The bearer token Sail sends. Sail reads it once at start; each test stores its hash again."""
    return "ucw_sail_" + secrets.token_urlsafe(24)


@pytest.fixture(scope="session")
def sail_storage(tmp_path_factory):
    """The managed storage root of every Sail test: one directory for the session, since the
    Sail server outlives each test; every table gets its own `tables/<id>` below it."""
    return tmp_path_factory.mktemp("sail-storage")


@pytest.fixture(scope="session")
def sail(live_server, sail_token, tmp_path_factory):
    server = SailServer(
        uc_url=f"{live_server.url}{UC}", token=sail_token, workdir=tmp_path_factory.mktemp("sail")
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture
def recorder(live_server):
    recorder = RequestRecorder.install(live_server)
    yield recorder
    recorder.uninstall(live_server)


@pytest.fixture
def sail_catalog(bootstrap, sail_token, sail_storage, settings):
    """Catalog `unity`, schema `unity.default`, Sail's token for the metastore admin, and the
    session's storage root."""
    settings.UCWEB_STORAGE_ROOT = sail_storage.as_uri()
    admin = Principal.objects.get(name="admin")
    Token.objects.create(key_hash=principals._digest(sail_token), principal=admin)
    return sail_storage


@pytest.fixture
def connect(sail, sail_catalog):
    """connect() → a new SparkSession (its own Spark Connect session on the Sail server). The
    Connect builder is used directly: the generic `SparkSession.builder.remote` would switch the
    whole process to Spark Connect, and the Iceberg tests run a local session in it."""
    from pyspark.sql.connect.session import SparkSession

    sessions = []

    def make():
        session = SparkSession.builder.remote(sail.remote).create()
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        try:
            session.stop()
        except Exception:  # the server may have dropped it already; nothing to clean up then
            pass


@pytest.fixture
def spark(connect, recorder):
    return connect()


@pytest.fixture
def sail_log(sail):
    """Shows the end of Sail's log when a test fails."""
    yield
    print(f"--- sail log ---\n{sail.log_tail()}")


# -- helpers -------------------------------------------------------------------------------------------
def rows(spark, query):
    return sorted(tuple(row) for row in spark.sql(query).collect())


def local_path(url: str) -> Path:
    parsed = urlparse(url)
    assert parsed.scheme == "file", url
    return Path(parsed.path)


def managed(name) -> Table:
    return Table.objects.get(schema__catalog__name="unity", schema__name="default", name=name)


def commits_of(table) -> list[DeltaCommit]:
    return list(DeltaCommit.objects.filter(table=table).order_by("version"))


def check_log(table, versions):
    """Every ratified version is a staged file Sail wrote and, published, `_delta_log/<v>.json`
    with the same bytes; version 0 is the catalog-managed table ucweb checked."""
    log = local_path(table.storage_location) / "_delta_log"
    for commit in commits_of(table):
        staged = log / "_staged_commits" / commit.file_name
        assert staged.is_file() and staged.stat().st_size == commit.file_size, commit.file_name
        assert commit.file_name.startswith(f"{commit.version:020d}.")
        assert (log / log_name(commit.version)).read_bytes() == staged.read_bytes()
    assert [c.version for c in commits_of(table)] == list(versions)
    first = [json.loads(line) for line in (log / log_name(0)).read_text().splitlines() if line.strip()]
    protocol = next(a["protocol"] for a in first if "protocol" in a)
    metadata = next(a["metaData"] for a in first if "metaData" in a)
    assert "catalogManaged" in protocol["readerFeatures"] and "catalogManaged" in protocol["writerFeatures"]
    assert metadata["configuration"]["io.unitycatalog.tableId"] == str(table.id)


# -- Sail ----------------------------------------------------------------------------------------------
@pytest.mark.spark
def test_create_insert_select(spark, recorder, sail_log):
    spark.sql("CREATE TABLE unity.default.trips (id INT, city STRING) USING DELTA")

    table = managed("trips")
    assert (table.table_type, table.data_source_format) == ("MANAGED", "DELTA")
    assert [(c.name, c.type_name, c.position) for c in table.columns.order_by("position")] == [
        ("id", "INT", 0), ("city", "STRING", 1)]
    assert (table.latest_version, table.latest_published_version) == (0, None), "version 0 is not checked yet"
    (staging,) = recorder.find("POST", "/staging-tables")
    assert staging.body == {"catalog_name": "unity", "schema_name": "default", "name": "trips"}
    (create,) = recorder.find("POST", "/tables")
    assert create.status == 200 and create.body["table_type"] == "MANAGED"
    assert create.body["storage_location"] == table.storage_location
    assert StagingTable.objects.get(id=table.id).finalized_at is not None
    assert (local_path(table.storage_location) / "_delta_log" / log_name(0)).is_file()
    assert rows(spark, "SELECT * FROM unity.default.trips") == []

    spark.sql("INSERT INTO unity.default.trips VALUES (1, 'Lisbon'), (2, 'Porto')")
    spark.sql("INSERT INTO unity.default.trips VALUES (3, 'Braga')")
    spark.sql("INSERT INTO default.trips VALUES (4, 'Faro'), (5, 'Evora')")

    assert rows(spark, "SELECT id, city FROM unity.default.trips") == [
        (1, "Lisbon"), (2, "Porto"), (3, "Braga"), (4, "Faro"), (5, "Evora")]
    assert rows(spark, "SELECT count(*) FROM trips") == [(5,)]
    table.refresh_from_db()
    # Sail publishes each commit itself and reports it with the next one.
    assert (table.latest_version, table.latest_published_version) == (3, 2)
    assert [c.published_at is not None for c in commits_of(table)] == [True, True, False]
    check_log(table, [1, 2, 3])
    proposals = recorder.find("POST", COMMITS)
    assert [(c.body["commit_info"]["version"], c.body.get("latest_backfilled_version"), c.status)
            for c in proposals] == [(1, 0, 200), (2, 1, 200), (3, 2, 200)]
    assert all(c.body["table_id"] == str(table.id) for c in proposals)
    assert recorder.find("GET", COMMITS), "Sail reads the ratified commits before it writes"
    assert not [c for c in recorder.calls if c.status >= 500]
    events = AuditEvent.objects.filter(securable_id=table.id)
    assert {"createStagingTable", "createTable", "commitDelta"} <= set(events.values_list("action", flat=True))
    assert set(events.values_list("principal", flat=True)) == {"admin"}, "Sail sends the admin's token"


@pytest.mark.spark
def test_ctas_and_time_travel(spark, recorder, sail_log):
    spark.sql(
        "CREATE TABLE unity.default.cities USING DELTA "
        "AS SELECT * FROM VALUES (1, 'Lisbon'), (2, 'Porto') AS t(id, city)"
    )
    spark.sql("INSERT INTO unity.default.cities VALUES (3, 'Braga')")
    spark.sql("INSERT INTO unity.default.cities VALUES (4, 'Faro')")

    table = managed("cities")
    assert [c.name for c in table.columns.order_by("position")] == ["id", "city"]
    assert table.latest_version == 3
    check_log(table, [1, 2, 3])
    # Version 0 is the empty table Sail created; the CTAS rows are version 1.
    assert rows(spark, "SELECT * FROM unity.default.cities VERSION AS OF 0") == []
    assert rows(spark, "SELECT * FROM unity.default.cities VERSION AS OF 1") == [(1, "Lisbon"), (2, "Porto")]
    assert rows(spark, "SELECT id FROM unity.default.cities VERSION AS OF 2") == [(1,), (2,), (3,)]
    assert rows(spark, "SELECT id FROM unity.default.cities") == [(1,), (2,), (3,), (4,)]
    ranged = [c.body for c in recorder.find("GET", COMMITS) if c.body and "end_version" in c.body]
    assert ranged and all(body["end_version"] >= body["start_version"] for body in ranged)


@pytest.mark.spark
def test_schema_merge_changes_the_catalog_columns(spark, recorder, sail_log):
    spark.sql("CREATE TABLE unity.default.readings (id INT, value DOUBLE) USING DELTA")
    spark.sql("INSERT INTO unity.default.readings VALUES (1, 0.5)")
    recorder.clear()

    wider = spark.createDataFrame([(2, 1.5, "kPa")], "id INT, value DOUBLE, unit STRING")
    wider.write.format("delta").mode("append").option("mergeSchema", "true").saveAsTable("unity.default.readings")

    assert rows(spark, "SELECT id, value, unit FROM unity.default.readings") == [(1, 0.5, None), (2, 1.5, "kPa")]
    table = managed("readings")
    assert table.latest_version == 2
    assert [(c.name, c.type_name) for c in Column.objects.filter(table=table).order_by("position")] == [
        ("id", "INT"), ("value", "DOUBLE"), ("unit", "STRING")]
    (proposal,) = recorder.find("POST", COMMITS)
    assert proposal.status == 200 and proposal.body["commit_info"]["version"] == 2
    metadata = proposal.body["metadata"]
    assert [c["name"] for c in metadata["schema"]["columns"]] == ["id", "value", "unit"]
    assert table.properties["io.unitycatalog.tableId"] == str(table.id)
    assert table.properties["delta.feature.catalogManaged"] == "supported"
    check_log(table, [1, 2])

    # Without mergeSchema a wider append is refused by Sail and nothing reaches the catalog.
    recorder.clear()
    widest = spark.createDataFrame([(3, 2.5, "kPa", "x")], "id INT, value DOUBLE, unit STRING, extra STRING")
    with pytest.raises(PySparkException, match="schema"):
        widest.write.format("delta").mode("append").saveAsTable("unity.default.readings")
    assert not recorder.find("POST", COMMITS)
    assert managed("readings").latest_version == 2


@pytest.mark.spark
def test_drop_table_purges_its_files(spark, recorder, sail_log):
    spark.sql("CREATE TABLE unity.default.scratch (id INT) USING DELTA")
    spark.sql("INSERT INTO unity.default.scratch VALUES (1), (2)")
    table = managed("scratch")
    directory = local_path(table.storage_location)
    assert list(directory.glob("*.parquet")) and DeltaCommit.objects.filter(table=table).exists()

    spark.sql("DROP TABLE unity.default.scratch")

    (delete,) = recorder.find("DELETE", "/tables/unity.default.scratch")
    assert delete.status == 200
    assert not Table.objects.filter(id=table.id).exists()
    assert not DeltaCommit.objects.filter(table_id=table.id).exists()
    purge = PurgeRequest.objects.get(url=table.storage_location)
    assert purge.done_at is not None and purge.files_deleted > 0
    assert not directory.exists()
    assert rows(spark, "SHOW TABLES IN unity.default LIKE 'scratch'") == []
    with pytest.raises(PySparkException, match="(?i)not found|does not exist|cannot be found"):
        spark.sql("SELECT * FROM unity.default.scratch").collect()


@pytest.mark.spark
def test_schema_partitions_delete_overwrite_and_cascade(spark, recorder, sail_log):
    spark.sql("CREATE SCHEMA unity.sales")
    spark.sql("CREATE TABLE unity.sales.orders (id INT, amount DOUBLE) USING DELTA PARTITIONED BY (id)")
    spark.sql("INSERT INTO unity.sales.orders VALUES (1, 2.0), (2, 3.0), (3, 4.0)")
    spark.sql("DELETE FROM unity.sales.orders WHERE id = 2")
    assert rows(spark, "SELECT * FROM unity.sales.orders") == [(1, 2.0), (3, 4.0)]
    spark.sql("INSERT OVERWRITE TABLE unity.sales.orders VALUES (9, 9.0)")
    assert rows(spark, "SELECT * FROM unity.sales.orders") == [(9, 9.0)]
    assert rows(spark, "SELECT * FROM unity.sales.orders VERSION AS OF 2") == [(1, 2.0), (3, 4.0)]

    (schema,) = recorder.find("POST", "/schemas")
    assert schema.status == 200 and schema.body == {"catalog_name": "unity", "name": "sales"}
    table = Table.objects.get(schema__name="sales", name="orders")
    assert [(c.name, c.partition_index) for c in table.columns.order_by("position")] == [("id", 0), ("amount", None)]
    assert table.latest_version == 3
    check_log(table, [1, 2, 3])
    directory = local_path(table.storage_location)
    assert directory.is_dir()

    spark.sql("DROP SCHEMA unity.sales CASCADE")

    (drop,) = recorder.find("DELETE", "/schemas/unity.sales")
    assert drop.status == 200
    assert not Table.objects.filter(id=table.id).exists()
    assert not directory.exists()
    assert rows(spark, "SHOW SCHEMAS IN unity") == [("unity.default", "unity", "Default schema", None)]


@pytest.mark.spark
def test_create_schema_if_not_exists_twice(spark, recorder, sail_log):
    """Sail implements IF NOT EXISTS by creating and taking a 409 as "exists" (then it reads the
    schema): the second statement succeeds and the schema keeps its first comment."""
    spark.sql("CREATE SCHEMA IF NOT EXISTS unity.marts COMMENT 'first'")
    spark.sql("CREATE SCHEMA IF NOT EXISTS unity.marts COMMENT 'second'")

    creates = recorder.find("POST", "/schemas")
    assert [c.status for c in creates] == [200, 409]
    assert creates[1].response["error_code"] == "SCHEMA_ALREADY_EXISTS"
    assert recorder.find("GET", "/schemas/unity.marts")[-1].status == 200
    listed = {name: comment for name, _, comment, _ in rows(spark, "SHOW SCHEMAS IN unity")}
    assert listed["unity.marts"] == "first"
    assert Schema.objects.get(catalog__name="unity", name="marts").comment == "first"
    # Without IF NOT EXISTS the same 409 is an error, and nothing changes.
    with pytest.raises(PySparkException):
        spark.sql("CREATE SCHEMA unity.marts COMMENT 'third'")
    assert Schema.objects.get(catalog__name="unity", name="marts").comment == "first"


@pytest.mark.spark
@pytest.mark.slow
def test_concurrent_inserts_one_winner_per_version(connect, recorder, sail_log):
    if connection.vendor != "postgresql":
        pytest.skip("row locking is tested on PostgreSQL (set DATABASE_URL)")
    writers, rounds = 4, 3
    setup = connect()
    setup.sql("CREATE TABLE unity.default.events (writer INT, round INT, n INT) USING DELTA")
    setup.sql("INSERT INTO unity.default.events VALUES (-1, -1, 0)")
    sessions = [connect() for _ in range(writers)]
    for session in sessions:  # every session has read the table before the race
        assert rows(session, "SELECT count(*) FROM unity.default.events") == [(1,)]

    outcomes = []  # (round, writer, error or None)
    lock = threading.Lock()

    def insert(barrier, round_, writer):
        barrier.wait()
        try:
            sessions[writer].sql(
                f"INSERT INTO unity.default.events VALUES ({writer}, {round_}, 1), ({writer}, {round_}, 2)"
            )
            error = None
        except PySparkException as exc:  # the losers
            error = exc
        with lock:
            outcomes.append((round_, writer, error))

    for round_ in range(rounds):
        barrier = threading.Barrier(writers)
        threads = [threading.Thread(target=insert, args=(barrier, round_, w)) for w in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in threads)

    winners = [(w, r) for r, w, error in outcomes if error is None]
    losers = [error for _, _, error in outcomes if error is not None]
    assert len(outcomes) == writers * rounds
    assert len(winners) >= rounds, "every round has at least one winner"
    assert losers, "concurrent inserts into one table conflict"
    for error in losers:
        assert "409" in str(error) and "conflict" in str(error).lower(), error

    reader = connect()
    assert rows(reader, "SELECT count(*) FROM unity.default.events") == [(1 + 2 * len(winners),)]
    assert rows(reader, "SELECT writer, round FROM unity.default.events WHERE n = 1") == sorted(winners)
    table = managed("events")
    assert table.latest_version == 1 + len(winners)
    check_log(table, range(1, 2 + len(winners)))
    refused = [c for c in recorder.find("POST", COMMITS) if c.status == 409]
    assert len(refused) == len(losers)
    assert all(c.response["error_code"] == "ALREADY_EXISTS" for c in refused)
    ratified = {(c.body["commit_info"]["version"], c.body["commit_info"]["file_name"])
                for c in recorder.find("POST", COMMITS) if c.status == 200}
    assert ratified == {(c.version, c.file_name) for c in commits_of(table)}
    assert not [c for c in recorder.calls if c.status >= 500]
