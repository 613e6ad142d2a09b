"""ucweb beyond one process of each kind, started the README's way (`make run`, tests/product.py):
Iceberg maintenance on a Spark standalone cluster, and two servers, each with its worker and
beat, on one PostgreSQL database and one Redis. A run whose worker is killed is taken over once
its lease expires and succeeds exactly once; a killed beat's schedule is taken over by the other.
Every wait is on a condition; the servers' logs stay free of errors."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import urllib.request
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import DoubleType, LongType, NestedField, StringType

from tests.celery_worker import Redis
from tests.helpers import die_with_parent, free_ports, stop_process, wait_for
from tests.product import PostgresDatabase, Product
from tests.test_product import FAST

pytestmark = [pytest.mark.slow, pytest.mark.spark, pytest.mark.xdist_group("product_cluster")]

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "city", StringType(), required=False),
                NestedField(3, "amount", DoubleType(), required=False))
# The catalog plans nothing of its own for tables in this namespace, so the one run on the table
# is the one a test asks for (a run asked for by name still runs, maintenance/policy.py).
NOT_PLANNED = {"ucweb.maintenance.enabled": "false"}
# What the console's "add maintenance plan" does: the plan waits for a worker's scheduled sweep.
REQUEST_OPTIMIZE = ("from catalog import resolve; from maintenance import runs; "
                    "print(runs.request_run(table=resolve.get_table_by_full_name('unity.sales.events'), "
                    "operation='OPTIMIZE', requested_by='operator').id)")
# Spark binds its driver to the host name's address unless told otherwise; everything here stays
# on loopback.
LOOPBACK = {"SPARK_LOCAL_IP": "127.0.0.1"}


# -- helpers -----------------------------------------------------------------------------------------
def get_json(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def query(database: PostgresDatabase, sql: str, *params) -> list[dict]:
    """Rows of the product's database, read as an operator would (the test process has no Django
    connection to it)."""
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(database.url, autocommit=True, row_factory=dict_row) as conn:
        return conn.execute(sql, params).fetchall()


def iceberg_catalog(product: Product, token: str) -> RestCatalog:
    return RestCatalog("ucweb", uri=f"{product.url}/api/catalog", warehouse="unity", token=token)


def small_files_table(catalog: RestCatalog, appends: int):
    """unity.sales.events, one small data file per append."""
    catalog.create_namespace("sales", properties=NOT_PLANNED)
    table = catalog.create_table("sales.events", schema=SCHEMA)
    for batch in range(appends):
        table.append(pa.table({"id": pa.array(range(batch * 5, batch * 5 + 5), pa.int64()),
                               "city": [f"c{batch % 7}"] * 5, "amount": [batch * 1.5 + i for i in range(5)]}))
    return catalog.load_table("sales.events")


def fingerprint(table) -> tuple[int, str]:
    """(rows, checksum of every row) of a pyiceberg table's current snapshot."""
    rows = table.scan().to_arrow().sort_by("id").to_pylist()
    return len(rows), hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def data_files(table) -> int:
    return len(table.inspect.files())


def holder_pid(name: str) -> int:
    """The pid in a lease holder or lease owner: host:pid (a beat) or host:pid:thread (a run)."""
    return int(name.split(":")[1])


# -- a Spark standalone cluster --------------------------------------------------------------------
class SparkCluster:
    """A master and one worker (one core, 1 GiB), launched with PySpark's own spark-class."""

    def __init__(self, workdir: Path):
        spec = importlib.util.find_spec("pyspark")
        self.home = Path(spec.submodule_search_locations[0])
        self.workdir = workdir
        self.port, self.ui_port, self.worker_ui_port = free_ports(3)
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen] = []

    def _launch(self, name: str, *args: str) -> None:
        env = {**os.environ, **LOOPBACK, "SPARK_HOME": str(self.home), "SPARK_LOG_DIR": str(self.workdir / "logs"),
               "SPARK_LOCAL_DIRS": str(self.workdir / "local"), "SPARK_WORKER_DIR": str(self.workdir / "work")}
        with (self.workdir / f"{name}.log").open("ab") as log:
            self.processes.append(subprocess.Popen(
                [str(self.home / "bin" / "spark-class"), *args], cwd=self.workdir, env=env, stdout=log,
                stderr=subprocess.STDOUT, preexec_fn=die_with_parent))

    def start(self) -> SparkCluster:
        """Launches both; `wait_ready` waits for them (meanwhile a test starts other things)."""
        for folder in ("logs", "local", "work"):
            (self.workdir / folder).mkdir(parents=True, exist_ok=True)
        self._launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(self.port), "--webui-port", str(self.ui_port))
        self._launch("worker", "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                     "--webui-port", str(self.worker_ui_port), "--cores", "1", "--memory", "1g",
                     "--work-dir", str(self.workdir / "work"))
        return self

    def master(self) -> dict | None:
        return get_json(f"http://127.0.0.1:{self.ui_port}/json/")

    def worker(self) -> dict | None:
        return get_json(f"http://127.0.0.1:{self.worker_ui_port}/json/")

    def wait_ready(self) -> None:
        def alive():
            """the Spark master to list an ALIVE worker"""
            for process in self.processes:
                assert process.poll() is None, self.log()
            state = self.master()
            return state and any(worker["state"] == "ALIVE" for worker in state["workers"])

        wait_for(alive, timeout=120, interval=0.5)

    def log(self) -> str:
        return "\n".join((self.workdir / f"{name}.log").read_text(errors="replace")[-3000:]
                         for name in ("master", "worker"))

    def stop(self) -> None:
        for process in reversed(self.processes):
            stop_process(process, grace=20)


# -- fixtures ----------------------------------------------------------------------------------------
@pytest.fixture
def database():
    created = PostgresDatabase().create()
    yield created
    created.drop()


@pytest.fixture
def redis(tmp_path):
    server = Redis(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def spark_cluster(tmp_path):
    cluster = SparkCluster(tmp_path / "spark")
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture
def products():
    """start(home, **env) -> a running Product; each is stopped after the test (before the
    database, the broker or the cluster it uses)."""
    started: list[Product] = []

    def start(home: Path, **env: str) -> Product:
        product = Product(home, **env)
        started.append(product)
        return product.start()

    yield start
    for product in reversed(started):
        product.stop()


# -- tests -------------------------------------------------------------------------------------------
def test_iceberg_maintenance_runs_on_a_spark_standalone_cluster(tmp_path, database, spark_cluster, products):
    product = products(tmp_path / "ucweb", DATABASE_URL=database.url, UCWEB_SPARK_MASTER=spark_cluster.url,
                       **LOOPBACK, **FAST)
    spark_cluster.wait_ready()

    def engine_on_the_cluster():
        """the worker to report Spark on the cluster as its maintenance engine"""
        status, body = product.readiness()
        engine = body["checks"]["engine"] if status == 200 else {}
        return engine.get("status") == "ok" and spark_cluster.url in engine["detail"]

    wait_for(engine_on_the_cluster, timeout=180)

    catalog = iceberg_catalog(product, product.admin_token())
    table = small_files_table(catalog, appends=20)
    before = fingerprint(table)
    assert before[0] == 100 and data_files(table) == 20

    # The catalog URL the run's Spark uses is the default one, which follows the port make run serves on.
    out = product.manage("run_maintenance", "unity.sales.events", "--operation", "OPTIMIZE")
    assert "OPTIMIZE unity.sales.events: SUCCEEDED" in out, out

    table = catalog.load_table("sales.events")
    assert data_files(table) == 1  # 100 tiny rows: one file of the 128 MiB target
    assert fingerprint(table) == before
    [plan] = query(database, "SELECT p.* FROM maintenance_maintenanceplan p JOIN catalog_table t "
                             "ON t.id = p.table_id WHERE t.name = 'events'")
    assert (plan["operation"], plan["status"], plan["attempts"]) == ("OPTIMIZE", "SUCCEEDED", 1), plan
    assert plan["before"]["files"] == 20 and plan["after"]["files"] == 1, plan

    def finished_on_the_cluster():
        """the master to list the maintenance application as finished"""
        state = spark_cluster.master()
        apps = [app for app in state["completedapps"] if app["name"] == "ucweb-maintenance"]
        return not state["activeapps"] and apps

    [app] = wait_for(finished_on_the_cluster, timeout=60)
    assert app["state"] == "FINISHED", app
    # Its tasks ran in an executor of the cluster's worker, not only in the driver.
    executors = spark_cluster.worker()["finishedexecutors"]
    assert [executor["appid"] for executor in executors] == [app["id"]], executors
    assert product.problems() == []


def test_two_servers_share_one_database_and_one_redis(tmp_path, database, redis, products):
    storage = tmp_path / "storage"
    storage.mkdir()
    env = {**FAST, **LOOPBACK, "DATABASE_URL": database.url, "REDIS_URL": redis.url,
           # What servers of one catalog share besides the database: the storage and the key.
           "UCWEB_STORAGE_ROOT": storage.as_uri(), "UCWEB_SECRET_KEY": secrets.token_hex(32),
           # A killed worker's run is taken over seconds after it stops renewing its lease.
           "UCWEB_MAINTENANCE_LEASE_SECONDS": "5", "UCWEB_MAINTENANCE_BACKOFF_SECONDS": "1"}
    servers = (products(tmp_path / "first", **env), products(tmp_path / "second", **env))
    host = socket.gethostname()

    def one_leader():
        """both servers to be ready and to name the same beat, one of theirs, as the schedule's leader"""
        answers = [server.readiness() for server in servers]
        if any(status != 200 for status, _ in answers):
            return None
        named = {body["checks"]["beat"]["detail"] for _, body in answers}
        beats = {f"{host}:{server.pid('beat')} sends the schedule": server for server in servers}
        return len(named) == 1 and beats.get(named.pop())

    leader = wait_for(one_leader, timeout=60)
    [lease] = query(database, "SELECT holder FROM maintenance_lease WHERE name = 'beat'")
    assert lease["holder"] == f"{host}:{leader.pid('beat')}"
    def both_ticking():
        """both servers' beats to have ticked (the follower may start after the leader's server is ready)"""
        rows = query(database, "SELECT name, details FROM maintenance_processheartbeat "
                               "WHERE kind = 'BEAT' AND stopped_at IS NULL ORDER BY name")
        names = sorted(row["name"] for row in rows)
        return names == sorted(f"{host}:{server.pid('beat')}" for server in servers) and rows

    ticking = wait_for(both_ticking, timeout=60)
    assert [row["name"] for row in ticking if row["details"]["leading"]] == [lease["holder"]], ticking

    # A run killed with its worker: taken over once its lease has expired, and done exactly once.
    catalog = iceberg_catalog(servers[0], servers[0].admin_token())
    table = small_files_table(catalog, appends=30)
    before = fingerprint(table)
    assert data_files(table) == 30
    servers[1].manage("shell", "-c", REQUEST_OPTIMIZE)
    workers = {server.pid("worker") for server in servers}
    running_seen = []

    def plans() -> list[dict]:
        rows = query(database, "SELECT p.* FROM maintenance_maintenanceplan p JOIN catalog_table t "
                               "ON t.id = p.table_id WHERE t.name = 'events'")
        running = [row for row in rows if row["status"] == "RUNNING"]
        assert len(running) <= 1, rows
        running_seen.extend((row["attempts"], row["lease_owner"]) for row in running)
        return rows

    def running():
        """the OPTIMIZE run to be RUNNING on one of the two workers"""
        [plan] = plans()
        assert plan["status"] in ("PLANNED", "RUNNING"), plan
        return plan["status"] == "RUNNING" and holder_pid(plan["lease_owner"]) in workers and plan

    plan = wait_for(running, timeout=120, interval=0.1)
    assert plan["attempts"] == 1, plan
    killed = holder_pid(plan["lease_owner"])
    os.kill(killed, signal.SIGKILL)

    def succeeded():
        """the run to be taken over and to succeed"""
        [plan] = plans()
        assert plan["status"] in ("PLANNED", "RUNNING", "SUCCEEDED"), plan
        return plan["status"] == "SUCCEEDED" and plan

    plan = wait_for(succeeded, timeout=180)
    assert plan["attempts"] == 2 and plan["after"]["files"] == 1, plan
    takers = {holder_pid(owner) for attempt, owner in running_seen if attempt == 2}
    assert takers and killed not in takers and takers <= {server.pid("worker") for server in servers}, running_seen
    events = query(database, "SELECT outcome, details, created_at FROM catalog_auditevent "
                             "WHERE action = 'maintenanceOptimize' ORDER BY created_at, id")
    assert [(e["outcome"], e["details"]["attempt"], e["details"]["status"]) for e in events] == [
        ("FAILED", 1, "PLANNED"), ("SUCCESS", 2, "SUCCEEDED")], events
    assert "its lease expired" in events[0]["details"]["outcome"], events
    # The second attempt began only once the first had been given up: never two at a time.
    assert events[0]["created_at"] <= plan["started_at"], (events, plan)
    table = catalog.load_table("sales.events")
    assert fingerprint(table) == before and data_files(table) == 1
    assert [s.summary.operation.value for s in table.metadata.snapshots].count("replace") == 1

    def both_ready():
        """both servers to answer readiness 200 (the killed worker started again)"""
        return all(server.readiness()[0] == 200 for server in servers) and \
            all(server.pid("worker") != killed for server in servers)

    wait_for(both_ready, timeout=60)

    # The leading beat killed: the other server's beat takes the schedule over.
    leader = wait_for(one_leader, timeout=60)
    follower = next(server for server in servers if server is not leader)
    os.kill(leader.pid("beat"), signal.SIGKILL)

    def taken_over():
        """both servers' readiness to name the other server's beat as the leader"""
        expected = f"{host}:{follower.pid('beat')} sends the schedule"
        answers = [server.readiness()[1] for server in servers]
        return all(body and body["checks"]["beat"]["detail"] == expected for body in answers)

    wait_for(taken_over, timeout=60)
    [lease] = query(database, "SELECT holder FROM maintenance_lease WHERE name = 'beat'")
    assert lease["holder"] == f"{host}:{follower.pid('beat')}"
    for server in servers:
        assert server.problems() == [], server.problems()
