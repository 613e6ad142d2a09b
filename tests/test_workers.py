"""Celery workers for real: a worker process, a real Redis broker and PostgreSQL."""

import json

import pytest
from kombu import pools
from django.db import connection

from catalog.models import StagingTable, Table
from catalog.storage import join, storage_for
from commits.models import DeltaCommit
from maintenance.models import MaintenancePlan, PurgeRequest, TableAlert, TableHealth
from tests.celery_worker import Redis, Worker
from tests.helpers import UC, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.xdist_group("workers")]


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """One Redis for the module, so that the broker address the app has pooled stays valid; the
    outage test stops and restarts it on the same port."""
    from ucweb.celery import app

    redis = Redis(tmp_path_factory.mktemp("redis"))
    redis.start()
    previous = app.conf.broker_url, app.conf.broker_transport_options, app.conf.broker_transport
    # What ucweb/settings.py configures for any broker but the folder one (the test run itself
    # has no broker): publishing gives up at once when Redis is down.
    app.conf.broker_url, app.conf.broker_transport_options = redis.url, {"max_retries": 0}
    app.conf.broker_transport = None  # the URL's (the embedded broker's transport is for its folder)
    forget_connections(app)
    yield redis
    redis.stop()
    app.conf.broker_url, app.conf.broker_transport_options, app.conf.broker_transport = previous
    forget_connections(app)


def forget_connections(app):
    """Celery pools connections to the broker it first talked to (even eager tasks create the
    pool): drop them so the next message goes to the broker configured now."""
    if app._pool is not None:
        app._pool.force_close_all()
    app._pool = None
    app.amqp._producer_pool = None
    # The pools closed above stay in kombu's registry, keyed by broker: without a reset the next
    # task sent to the same broker (eager tasks acquire a producer too) gets the closed pool.
    pools.reset()


@pytest.fixture
def worker(broker, tmp_path, settings):
    """A worker on the test database; the app in this process sends to the same broker."""
    from ucweb.celery import app

    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the database with the test, which needs PostgreSQL")
    settings.UCWEB_PUBLISH_VERIFY_AFTER_SECONDS = 0
    process = Worker(broker.url, {"UCWEB_PUBLISH_VERIFY_AFTER_SECONDS": "0", "UCWEB_STAGING_TTL_SECONDS": "1"},
                     tmp_path / "worker.log")
    app.conf.task_always_eager = False
    process.start()
    yield process
    process.stop()
    app.conf.task_always_eager = True
    print((tmp_path / "worker.log").read_text()[-3000:])


def send(name, *args):
    from ucweb.celery import app

    return app.send_task(name, args=args)


def test_publish_verify_publishes_what_a_client_left_staged(delta, worker):
    created = delta.create_table("unity", "default", "events")
    table_id, location = created.table_id, created.storage_location
    for version in (1, 2, 3):
        delta.append(table_id, location, version, f"p{version}.parquet", publish=False)
    assert Table.objects.get(id=table_id).latest_published_version == 0
    send("maintenance.publish_verify")
    wait_for(lambda: Table.objects.get(id=table_id).latest_published_version == 3, timeout=30)
    for version in (1, 2, 3):
        assert storage_for(location).exists(join(location, "_delta_log", f"{version:020d}.json"))
    assert DeltaCommit.objects.filter(table_id=table_id, published_at__isnull=True).count() == 0
    latest, files = delta.snapshot(table_id, location)
    assert latest == 3 and files == ["p1.parquet", "p2.parquet", "p3.parquet"]


def test_a_tampered_published_file_raises_an_alert(delta, worker):
    created = delta.create_table("unity", "default", "events")
    table_id, location = created.table_id, created.storage_location
    for version in (1, 2):
        delta.append(table_id, location, version, f"p{version}.parquet", publish=False)
    published = join(location, "_delta_log", f"{1:020d}.json")
    storage_for(published).put(published, b'{"commitInfo":{"operation":"FORGED"}}\n')
    send("maintenance.publish_verify")
    alert = wait_for(lambda: TableAlert.objects.filter(table_id=table_id).first(), timeout=30)
    assert alert.version == 1 and alert.kind == TableAlert.Kind.PUBLISHED_MISMATCH
    assert Table.objects.get(id=table_id).latest_published_version == 0


def test_a_dropped_table_leaves_no_files(delta, worker, admin_client):
    created = delta.create_table("unity", "default", "events")
    delta.append(created.table_id, created.storage_location, 1, "p1.parquet")
    assert admin_client.delete(f"{UC}/tables/unity.default.events").status_code == 200
    wait_for(lambda: PurgeRequest.objects.filter(done_at__isnull=False).exists(), timeout=30)
    assert storage_for(created.storage_location).list(created.storage_location) == []


def test_abandoned_staging_tables_expire(delta, worker):
    staging = delta.stage("unity", "default", "abandoned")
    delta.write_version_zero(staging.staging_location, staging.id)
    import time

    time.sleep(1.5)
    send("maintenance.expire_staging_tables")
    wait_for(lambda: not StagingTable.objects.filter(id=staging.id).exists(), timeout=30)
    send("maintenance.purge_pending")
    wait_for(lambda: storage_for(staging.staging_location).list(staging.staging_location) == [], timeout=30)


def test_metrics_become_health_and_plans(delta, worker, admin_client):
    created = delta.create_table("unity", "default", "events")
    delta.append(created.table_id, created.storage_location, 1, "p1.parquet")
    histogram = {"sorted_bin_boundaries": [0, 1024, 8 * 1024 * 1024, 128 * 1024 * 1024],
                 "file_counts": [30, 50, 10, 0], "total_bytes": [15_000, 2_000_000, 400_000_000, 0]}
    report = {"commit_version": 1, "num_files_added": 90, "num_rows_inserted": 1000, "file_size_histogram": histogram}
    response = admin_client.post(f"{UC}/delta/metrics", {"table_id": created.table_id, "table_uri": created.storage_location,
                                                         "report": {"commit_report": report}}, format="json")
    assert response.status_code == 200
    send("maintenance.refresh_health")
    plan = wait_for(lambda: MaintenancePlan.objects.filter(table_id=created.table_id).first(), timeout=30)
    assert plan.operation == MaintenancePlan.Operation.OPTIMIZE and "89%" in plan.reason
    health = TableHealth.objects.get(table_id=created.table_id)
    assert (health.files_live, health.rows_inserted) == (90, 1000)
    assert abs(health.small_file_share - 80 / 90) < 1e-9


def test_commits_keep_answering_while_redis_is_down(delta, worker, broker, admin_client):
    created = delta.create_table("unity", "default", "events")
    table_id, location = created.table_id, created.storage_location
    delta.append(table_id, location, 1, "p1.parquet")
    other = delta.create_table("unity", "default", "doomed")
    broker.stop()
    for version in range(2, 12):
        delta.append(table_id, location, version, f"p{version}.parquet")
    assert admin_client.delete(f"{UC}/tables/unity.default.doomed").status_code == 200

    def the_worker_lost_its_broker():
        """the worker's log says it cannot reach the broker and keeps retrying"""
        return "consumer: Cannot connect to" in worker.log.read_text()

    # The outage lasts until the worker is in it: its consumer has failed to reconnect.
    wait_for(the_worker_lost_its_broker, timeout=60)
    assert Table.objects.get(id=table_id).latest_version == 11
    assert PurgeRequest.objects.filter(done_at__isnull=True).count() == 1
    broker.start()  # the same port: worker and app reconnect
    send("maintenance.purge_pending")
    wait_for(lambda: not PurgeRequest.objects.filter(done_at__isnull=True).exists(), timeout=60)
    assert storage_for(other.storage_location).list(other.storage_location) == []
    latest, files = delta.snapshot(table_id, location)
    assert latest == 11 and len(files) == 11
    assert json.loads(json.dumps(files)) == sorted(f"p{v}.parquet" for v in range(1, 12))


def test_a_client_that_never_publishes_never_hits_the_bound(delta, worker, settings):
    """The worker publishes for a client that ratifies and never publishes: the client keeps
    committing past UCWEB_MAX_UNPUBLISHED_COMMITS without a 429, and reads a complete table.
    When the worker is slower than the client, the server publishes at the bound itself."""
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 4
    created = delta.create_table("unity", "default", "events")
    table_id, location = created.table_id, created.storage_location
    for version in range(1, 13):
        delta.append(table_id, location, version, f"p{version}.parquet", publish=False)
    # The last commits stay below half the bound; the periodic sweep publishes them.
    send("maintenance.publish_verify")
    wait_for(lambda: Table.objects.get(id=table_id).latest_published_version == 12, timeout=30)
    latest, files = delta.snapshot(table_id, location)
    assert latest == 12 and files == sorted(f"p{v}.parquet" for v in range(1, 13))


def test_a_worker_runs_the_due_maintenance(delta, worker):
    """The beat's task on a real worker: a planned OPTIMIZE of a managed Delta table runs there."""
    from maintenance import runs
    from tests.test_maintenance_delta import make_table

    table_id, _ = make_table(delta, 12)
    plan = runs.request_run(table=Table.objects.get(id=table_id), operation="OPTIMIZE")
    send("maintenance.run_due")
    done = wait_for(lambda: MaintenancePlan.objects.filter(id=plan.id, status="SUCCEEDED").first(), timeout=120)
    assert done.before["files"] == 12 and done.after["files"] == 1
    assert Table.objects.get(id=table_id).latest_version == 13
