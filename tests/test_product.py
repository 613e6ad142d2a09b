"""The product as the README starts it: `make run` in a fresh copy of the tree, worker and beat
included, once on the embedded defaults (SQLite, `file://`) and once on PostgreSQL and Redis.
Every wait is on a condition; the server's log stays free of errors throughout."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from catalog.storage import join, storage_for
from tests.celery_worker import Redis
from tests.delta_client import DeltaClient, log_name
from tests.helpers import UC, signal_group, wait_for
from tests.maintenance_delta_support import commit, live_files, read_rows, write_rows
from tests.product import FAST, PostgresDatabase, Product

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("product")]

@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def product(request, tmp_path_factory):
    home = tmp_path_factory.mktemp(f"product-{request.param}")
    env = dict(FAST)
    cleanup = []
    if request.param == "postgresql":
        database = PostgresDatabase().create()
        cleanup.append(database.drop)
        redis = Redis(home)
        redis.start()
        cleanup.append(redis.stop)
        env.update({"DATABASE_URL": database.url, "REDIS_URL": redis.url})
    running = Product(home, **env).start()
    try:
        yield running
    finally:
        running.stop()
        for step in reversed(cleanup):
            step()


def test_readiness_reports_every_part(product):
    status, body = product.readiness()
    assert status == 200, body
    checks = body["checks"]
    assert set(checks) == {"database", "broker", "worker", "beat", "engine"}
    assert all(checks[name]["status"] == "ok" for name in ("database", "broker", "worker", "beat")), checks
    assert checks["database"]["detail"] == ("sqlite" if "DATABASE_URL" not in product.env else "postgresql")
    # Java is on this machine and make run assembled the Iceberg runtime: maintenance can run.
    wait_for(lambda: product.readiness()[1]["checks"]["engine"]["status"] == "ok", timeout=180)
    assert product.get("/healthz") == (200, {"status": "ok"})


def test_a_killed_worker_makes_readiness_fail_until_it_is_back(product):
    killed = product.pid("worker")
    assert killed
    os.kill(killed, signal.SIGKILL)

    def unready():
        """readiness to report the worker gone (503)"""
        status, body = product.readiness()
        return status == 503 and body["checks"]["worker"]["status"] == "unavailable" and body

    body = wait_for(unready, timeout=60, interval=0.2)
    assert body["status"] == "unavailable"

    def back():
        """make run to start a new worker and readiness to turn 200 again"""
        status, _ = product.readiness()
        return status == 200 and product.pid("worker") not in (None, killed)

    wait_for(back, timeout=120)
    assert f"Celery worker (pid {killed}) exited" in product.log()


def test_a_killed_web_server_is_started_again(product):
    """granian gives up on its own after a worker crash loop; make run then starts it again
    instead of stopping ucweb. The killed one's worker processes end with it: none serves on
    unsupervised beside the new one."""
    from tests.server_process import children

    killed = product.pid("server")
    assert killed
    orphans = children(killed)
    assert orphans, "granian's worker processes"
    os.kill(killed, signal.SIGKILL)

    def back():
        """make run to start a new web server that answers"""
        return product.pid("server") not in (None, killed) and product.get("/healthz")[0] == 200

    wait_for(back, timeout=120)
    assert product.process.poll() is None
    assert f"web server (pid {killed}) exited" in product.log()

    def orphans_gone():
        """the killed web server's worker processes (its process group) to end"""
        return not signal_group(killed, 0)

    wait_for(orphans_gone, timeout=120)


@pytest.fixture(scope="module")
def token(product):
    return product.admin_token()


@pytest.fixture(scope="module")
def delta(product, token):
    client = DeltaClient(f"{product.url}{UC}", token)
    yield client
    client.close()


def plans(product, table_id: str) -> list[tuple[str, str, str]]:
    """(operation, status, outcome) of the table's maintenance plans, as the product recorded them."""
    return product.query("SELECT operation, status, outcome FROM maintenance_maintenanceplan "
                         "WHERE table_id = ? ORDER BY id", product.key(table_id))


def test_a_commit_the_client_never_publishes_is_published_by_the_worker(product, delta):
    created = delta.create_table("unity", "default", "unpublished")
    table_id, location = created.table_id, created.storage_location
    for version in (1, 2):
        delta.append(table_id, location, version, f"p{version}.parquet", publish=False)
    assert delta.get_commits(table_id, location).commits  # ratified, not published by the client

    def published():
        """the worker to publish both commits and record it"""
        storage = storage_for(location)
        return all(storage.exists(join(location, "_delta_log", log_name(v))) for v in (1, 2)) and product.query(
            "SELECT latest_published_version FROM catalog_table WHERE id = ?", product.key(table_id)) == [(2,)]

    wait_for(published, timeout=60)
    assert delta.snapshot(table_id, location) == (2, ["p1.parquet", "p2.parquet"])


def test_a_dropped_managed_table_is_purged(product, delta, token):
    created = delta.create_table("unity", "default", "dropped")
    delta.append(created.table_id, created.storage_location, 1, "p1.parquet")
    storage = storage_for(created.storage_location)
    assert storage.list(created.storage_location)
    status, _ = product.request("DELETE", f"{UC}/tables/unity.default.dropped", token)
    assert status == 200

    def purged():
        """the worker to delete the dropped table's files"""
        return storage.list(created.storage_location) == []

    wait_for(purged, timeout=60)


def test_a_delta_table_of_many_small_files_is_compacted_by_a_planned_run(product, delta):
    created = delta.create_table("unity", "default", "small_files")
    table_id, location = created.table_id, created.storage_location
    for version in range(1, 13):
        commit(delta, table_id, location, version, write_rows(location, version * 10, 10, f"v{version}"))
    before = read_rows(delta, table_id, location)
    assert len(live_files(delta, table_id, location)) == 12

    def compacted():
        """health to plan OPTIMIZE (no client reported metrics) and the worker to run it"""
        return ("OPTIMIZE", "SUCCEEDED") in [row[:2] for row in plans(product, table_id)]

    wait_for(compacted, timeout=120)
    assert len(live_files(delta, table_id, location)) < 12
    assert read_rows(delta, table_id, location).equals(before)


ICEBERG_ROWS = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("note", pa.string())])


def batch(first: int, count: int = 5) -> pa.Table:
    return pa.table({"id": list(range(first, first + count)), "note": [f"n{i}" for i in range(first, first + count)]},
                    schema=ICEBERG_ROWS)


def test_an_iceberg_table_of_small_appends_gets_health_a_plan_and_a_run_on_spark(product, token):
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import CommitFailedException

    catalog = RestCatalog("product", uri=f"{product.url}/api/catalog", warehouse="unity", token=token)
    table = catalog.create_table(("default", "appends"), schema=ICEBERG_ROWS)
    for number in range(60):
        table.append(batch(number * 5))
    table_id = str(table.metadata.table_uuid)
    assert len(table.refresh().inspect.data_files()) == 60

    def health_and_plan():
        """health of the Iceberg table (read from its own metadata) and an OPTIMIZE plan"""
        health = product.query("SELECT files_live, small_file_share FROM maintenance_tablehealth WHERE table_id = ?",
                               product.key(table_id))
        return health and "OPTIMIZE" in [row[0] for row in plans(product, table_id)] and health[0]

    files_live, small_share = wait_for(health_and_plan, timeout=120)
    assert files_live >= 10 and small_share == 1.0  # health may have been read during the appends

    # A writer that appends while the run rewrites the files loses nothing: the run either commits
    # on top of the appends or gives way to them and is planned again.
    def running():
        """the worker to start the OPTIMIZE run"""
        return ("OPTIMIZE", "RUNNING") in [row[:2] for row in plans(product, table_id)]

    wait_for(running, timeout=180, interval=0.1)
    written = []
    own = catalog.load_table(("default", "appends"))
    for first in range(10_000, 10_025, 5):
        while True:
            try:
                own.append(batch(first))
                break
            except CommitFailedException:
                own = catalog.load_table(("default", "appends"))
        written.append(first)

    def run_ended():
        """an OPTIMIZE run on Spark to succeed (none may fail)"""
        ended = [row for row in plans(product, table_id) if row[0] == "OPTIMIZE" and row[1] in ("SUCCEEDED", "FAILED")]
        return ended and ended[-1]

    ended = wait_for(run_ended, timeout=300, interval=0.5)
    assert ended[1] == "SUCCEEDED", ended
    result = catalog.load_table(("default", "appends")).scan().to_arrow().sort_by("id")
    expected = pa.concat_tables([batch(n * 5) for n in range(60)] + [batch(first) for first in written]).sort_by("id")
    assert result.equals(expected)
    assert len(catalog.load_table(("default", "appends")).inspect.data_files()) < 60


def test_without_java_readiness_says_so_and_iceberg_runs_are_skipped(tmp_path):
    """A machine whose Java is not where JAVA_HOME says: ucweb starts, readiness is degraded with the
    reason, and run_maintenance says SKIPPED and exits 3."""
    from pyiceberg.catalog.rest import RestCatalog

    no_java = Product(tmp_path, **FAST, JAVA_HOME=str(tmp_path / "no-jre"))
    no_java.start()
    try:
        def engine_checked():
            """the worker to report what its engine can do"""
            status, body = no_java.readiness()
            return status == 200 and body["checks"]["engine"]["status"] != "checking" and body

        body = wait_for(engine_checked, timeout=120)
        assert body["status"] == "degraded"
        assert body["checks"]["engine"]["status"] == "unavailable"
        assert "Java is not installed where JAVA_HOME points" in body["checks"]["engine"]["detail"]
        assert "WARNING: Iceberg maintenance is unavailable, its runs are SKIPPED" in no_java.log()

        catalog = RestCatalog("product", uri=f"{no_java.url}/api/catalog", warehouse="unity",
                              token=no_java.admin_token())
        catalog.create_table(("default", "no_java"), schema=ICEBERG_ROWS).append(batch(0))
        done = subprocess.run(
            [str(no_java.tree / ".venv" / "bin" / "python"), "manage.py", "run_maintenance", "unity.default.no_java",
             "--operation", "OPTIMIZE"], cwd=no_java.tree, env=no_java.env, capture_output=True, text=True,
            timeout=300)
        assert done.returncode == 3, (done.stdout, done.stderr)
        assert "OPTIMIZE unity.default.no_java: SKIPPED" in done.stdout
        assert "Java is not installed where JAVA_HOME points" in done.stdout
        assert no_java.problems() == []
    finally:
        no_java.stop()


def test_a_worker_that_cannot_start_stops_make_run_loudly(tmp_path):
    """No "started" for what did not start: a worker that exits at once, again and again, stops
    ucweb with an error (here it cannot start: its concurrency is not a number)."""
    broken = Product(tmp_path, UCWEB_WORKER_CONCURRENCY="many", UCWEB_WORKER_RESTART_SECONDS="0",
                     UCWEB_WORKER_MAX_QUICK_FAILURES="2").launch()
    try:
        assert broken.process.wait(timeout=300) != 0
    finally:
        broken.stop()
    log = broken.log()
    assert "ucweb: ERROR: the Celery worker exited 2 times within a minute of starting" in log, log[-3000:]
    assert "ucweb: WARNING: the Celery worker" in log  # the first exit: started again
    assert not [line for line in log.splitlines() if "ucweb worker" in line and "is ready" in line]


def test_ctrl_c_stops_every_part_once_and_for_all(tmp_path):
    """Ctrl+C in the terminal of a ready `make run` (SIGINT to its foreground process group) stops
    the web server, the worker and the beat: none is started again, no web server worker is left
    waiting for a stop it missed (granian would kill it only after UCWEB_STOP_SECONDS, here half an
    hour), and no process of any part is left."""
    product = Product(tmp_path, **FAST, UCWEB_STOP_SECONDS="1800").start()
    try:
        wait_for(lambda: len(product.part_groups()) == 3, timeout=60)
        parts = product.part_groups()
        os.killpg(product.process.pid, signal.SIGINT)
        product.process.wait(timeout=300)

        def gone():
            """every process of every part to end"""
            return not [group for group in parts if signal_group(group, 0)]

        wait_for(gone, timeout=120)
        log = product.log()
        assert "starting it again" not in log, log[-3000:]
        assert product.problems() == []
    finally:
        product.stop()


def test_a_stop_repeated_to_the_whole_group_ends_make_run_only_with_its_parts(tmp_path):
    """`kill` of make run's whole process group again and again until its script ends (an impatient
    operator, a service manager that signals every process): the script ends only once the web
    server, the worker and the beat have ended, and none of them is started again or left behind.
    Each supervisor passes one SIGTERM on to its part: granian's main process that got a second one
    inside its handler of the first would hang for good, and the script with it."""
    from tests.server_process import children

    product = Product(tmp_path, **FAST).start()
    try:
        wait_for(lambda: len(product.part_groups()) == 3, timeout=60)
        parts = product.part_groups()
        script = children(product.process.pid)  # bash scripts/run_server.sh, as make started it
        assert len(script) == 1, script

        def script_ended():
            """make run's script to end, its process group signalled again meanwhile"""
            if not running(script[0]):
                return True
            signal_group(product.process.pid, signal.SIGTERM)
            return False

        wait_for(script_ended, timeout=300, interval=0.5)
        left = subprocess.run(["ps", "-eo", "pid,ppid,pgid,stat,args"], capture_output=True, text=True).stdout
        left = "\n".join(line for line in left.splitlines() if any(f" {group} " in line for group in parts))
        assert [group for group in parts if signal_group(group, 0)] == [], f"a part outlived the script:\n{left}"
        assert "starting it again" not in product.log(), product.log()[-3000:]
    finally:
        product.stop()


def running(pid: int) -> bool:
    """Whether process `pid` exists and has not ended (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def test_a_second_make_run_on_a_taken_port_refuses_to_start(product, tmp_path):
    """granian binds its port with SO_REUSEPORT: a second server on a taken port would start without
    a word and take about half of the new connections, serving a database of its own. A second
    `make run` on the port of a running one says why and exits before it touches anything (no
    database, no var folder); the first one serves on."""
    second = Product(tmp_path, UCWEB_PORT=str(product.port)).launch()
    try:
        assert second.process.wait(timeout=300) != 0
    finally:
        second.stop()
    log = second.log()
    assert f"ucweb: ERROR: 127.0.0.1:{product.port} is in use" in log, log[-3000:]
    assert "ucweb is starting" not in log
    assert not second.var.exists()
    assert product.get("/readyz")[0] == 200


def test_the_log_is_free_of_errors(product):
    assert product.problems() == []
