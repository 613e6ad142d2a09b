"""The product as the README starts it: `make run` in a fresh copy of the tree, worker and beat
included, once on the embedded defaults (SQLite, `file://`) and once on PostgreSQL and Redis.
Every wait is on a condition; the server's log stays free of errors throughout."""

from __future__ import annotations

import os
import signal

import pytest

from tests.celery_worker import Redis
from tests.helpers import wait_for
from tests.product import PostgresDatabase, Product

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("product")]

# Short periods so that a test sees the background half act in seconds, not minutes; the same
# settings a user may give.
FAST = {
    "UCWEB_HEARTBEAT_SECONDS": "1",
    "UCWEB_HEARTBEAT_STALE_SECONDS": "4",
    "UCWEB_WORKER_RESTART_SECONDS": "8",
    "UCWEB_PUBLISH_VERIFY_AFTER_SECONDS": "0",
    "UCWEB_MAINTENANCE_SCHEDULE_SECONDS": (
        "publish-verify=2,purge-pending=2,refresh-health-and-plans=3,run-due-maintenance=3"),
}


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


def test_the_log_is_free_of_errors(product):
    assert product.problems() == []
