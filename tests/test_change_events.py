"""Change events: every successful change becomes one CloudEvent, written in the change's
transaction and delivered after it commits to a real NATS JetStream and to a webhook, at least
once, in order per securable; refusals, reads and rolled-back changes send nothing."""

import os
import signal
import threading
import time
import uuid

import pytest
from django.db import connection, transaction

from catalog.choices import AuditAction
from catalog.models import AuditEvent, Catalog, ChangeEvent
from catalog.services import audit, change_events
from maintenance import change_events as change_events_delivery
from tests.celery_worker import Worker
from tests.change_events_support import in_order_per_securable
from tests.helpers import UC, grant, wait_for
from tests.query_pins import pins
from tests.test_query_counts import managed, measure, reader  # noqa: F401 - the pinned commit's fixtures
from tests.test_workers import broker, forget_connections  # noqa: F401 - the worker tests' Redis

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("workers")]


@pytest.fixture
def sinks(settings, nats_server, webhook):
    settings.UCWEB_EVENTS_NATS_URL = nats_server.url
    settings.UCWEB_EVENTS_WEBHOOK_URL = webhook.url
    return nats_server, webhook


def outbox() -> list[ChangeEvent]:
    return list(ChangeEvent.objects.order_by("sequence"))


def test_each_successful_change_is_one_event_delivered_to_nats_and_the_webhook(sinks, admin_client, make_client):
    """Tasks run inline here: the drain runs as each change commits."""
    nats_server, webhook = sinks
    assert admin_client.post(f"{UC}/catalogs", {"name": "sales"}, format="json").status_code == 200
    assert admin_client.post(f"{UC}/schemas", {"name": "eu", "catalog_name": "sales"},
                             format="json").status_code == 200
    assert admin_client.patch(f"{UC}/schemas/sales.eu", {"new_name": "europe"}, format="json").status_code == 200
    grant("alice", "catalog", "sales", "USE_CATALOG")
    assert admin_client.delete(f"{UC}/schemas/sales.europe").status_code == 200

    types = [row.type for row in outbox() if row.type not in ("createPrincipal", "issueToken")]  # grant()'s
    assert types[-5:] == ["createCatalog", "createSchema", "updateSchema", "updatePermissions", "deleteSchema"], types
    assert all(row.nats_delivered_at and row.webhook_delivered_at for row in outbox())

    ids = [str(row.event_id) for row in outbox()]
    assert webhook.ids() == ids
    received = {event["type"]: (headers, event) for headers, event in webhook.received}
    headers, event = received["createSchema"]
    assert headers["content-type"].startswith("application/cloudevents+json")
    sales = Catalog.objects.get(name="sales")
    assert event["data"]["securable_type"] == "schema" and event["subject"] == "sales.eu"
    assert event["source"] == "/ucweb" and event["type"] == "createSchema" and event["specversion"] == "1.0"
    created = received["createCatalog"][1]
    renamed = received["updateSchema"][1]
    assert renamed["subject"] == "sales.europe" and renamed["partitionkey"] == event["partitionkey"]
    assert created["partitionkey"] == str(sales.id) and created["data"]["principal"]

    published = nats_server.stream_messages()
    assert [message.event["id"] for message in published] == ids
    assert [message.headers["Nats-Msg-Id"] for message in published] == ids
    on_nats = published[ids.index(created["id"])]
    assert on_nats.subject == "ucweb.events.createCatalog"
    assert on_nats.event == {**created, "time": on_nats.event["time"]}  # (the webhook's was parsed to a datetime)


def test_the_subject_and_stream_are_configured_and_an_existing_stream_is_extended(sinks, settings, admin_client):
    import asyncio

    import nats

    nats_server, _ = sinks
    settings.UCWEB_EVENTS_WEBHOOK_URL = None
    settings.UCWEB_EVENTS_NATS_SUBJECT = "lake.{type}.changes"
    settings.UCWEB_EVENTS_NATS_STREAM = "LAKE"

    async def create_stream():
        client = await nats.connect(nats_server.url)
        await client.jetstream().add_stream(name="LAKE", subjects=["lake.other"])
        await client.close()

    asyncio.run(create_stream())
    assert admin_client.post(f"{UC}/catalogs", {"name": "configured"}, format="json").status_code == 200
    [message] = [m for m in nats_server.stream_messages("LAKE") if m.event["subject"] == "configured"]
    assert message.subject == "lake.createCatalog.changes" and message.event["type"] == "createCatalog"


def test_refusals_reads_and_rolled_back_changes_send_nothing(sinks, admin_client, make_client, delta):
    nats_server, webhook = sinks
    created = delta.create_table("unity", "default", "orders")
    stranger = make_client("stranger")
    before = len(outbox())
    assert before >= 1 and webhook.ids() == [str(row.event_id) for row in outbox()]

    assert stranger.post(f"{UC}/catalogs", {"name": "nope"}, format="json").status_code == 403
    assert admin_client.post(f"{UC}/temporary-table-credentials",
                             {"table_id": created.table_id, "operation": "READ"}, format="json").status_code == 200
    refused_and_read = AuditEvent.objects.filter(action__in=["createCatalog", "generateTemporaryTableCredentials"])
    assert {(e.action, e.outcome) for e in refused_and_read} >= {
        ("createCatalog", "DENIED"), ("generateTemporaryTableCredentials", "SUCCESS")}

    with pytest.raises(RuntimeError), transaction.atomic():
        audit.record(principal="admin", action="createCatalog", securable_type="catalog", securable_name="ghost")
        assert ChangeEvent.objects.filter(subject="ghost").exists()  # written, in the transaction
        raise RuntimeError("the change fails after its audit event")

    assert len(outbox()) == before
    assert not ChangeEvent.objects.filter(subject="ghost").exists()
    assert len(webhook.ids()) == before and len(nats_server.stream_messages()) == before


def test_a_delta_commit_carries_its_version(sinks, delta):
    _, webhook = sinks
    created = delta.create_table("unity", "default", "versions")
    for version in (1, 2):
        delta.append(created.table_id, created.storage_location, version, f"p{version}.parquet")
    commits = [event for _, event in webhook.received if event["type"] == "commitDelta"]
    assert [event["data"]["details"]["version"] for event in commits if event["data"]["details"]["version"]] == [1, 2]
    assert {event["partitionkey"] for event in commits} == {created.table_id}


def test_an_event_the_webhook_refuses_holds_back_its_securable_only(sinks, settings, admin_client):
    _, webhook = sinks
    settings.UCWEB_EVENTS_NATS_URL = None
    settings.UCWEB_EVENTS_BACKOFF_SECONDS = 1
    webhook.refused_subject = "held"
    assert admin_client.post(f"{UC}/catalogs", {"name": "held"}, format="json").status_code == 200
    assert admin_client.patch(f"{UC}/catalogs/held", {"comment": "second"}, format="json").status_code == 200
    assert admin_client.post(f"{UC}/catalogs", {"name": "other"}, format="json").status_code == 200
    first, second = ChangeEvent.objects.filter(subject="held").order_by("sequence")
    assert first.webhook_delivered_at is None and first.webhook_attempts >= 1 and "500" in first.last_error
    assert second.webhook_delivered_at is None and second.webhook_attempts == 0, "held back, not tried"
    assert webhook.ids()[-1] == str(ChangeEvent.objects.get(subject="other").event_id), "other securables go on"

    webhook.refused_subject = None

    def delivered():
        """the held events to go out once their backoff is over"""
        change_events_delivery.drain()
        return all(row["webhook_delivered_at"] for row in change_events.delivery_state())

    wait_for(delivered, timeout=30, interval=0.5)
    assert webhook.ids()[-2:] == [str(first.event_id), str(second.event_id)]


def test_an_event_waits_for_an_earlier_one_of_its_securable_still_being_written(sinks):
    """A maintenance run records its event beside commits to the same table, without the table's
    lock: the earlier sequence number may still be in an open transaction when the later one
    commits. The drain sends neither until both can go in order."""
    nats_server, webhook = sinks
    table_id = uuid.uuid4()
    change = {"principal": "ucweb-maintenance", "action": AuditAction.UPDATE_TABLE, "securable_type": "table",
              "securable_name": "lake.sales.orders", "securable_id": table_id}
    written, release = threading.Event(), threading.Event()

    def earlier_writer():
        try:
            with transaction.atomic():
                audit.record(**change, details={"step": 1})
                written.set()
                release.wait(timeout=60)
        finally:
            connection.close()

    writer = threading.Thread(target=earlier_writer)
    writer.start()
    try:
        assert written.wait(timeout=30)
        audit.record(**change, details={"step": 2})  # committed; its drain runs now (tasks run inline)
        change_events_delivery.drain()
        assert webhook.ids() == [] and nats_server.stream_messages() == [], "the later event went out first"
    finally:
        release.set()
        writer.join(timeout=60)
    change_events_delivery.drain()
    in_sequence = [str(row.event_id) for row in outbox()]
    assert [row.data["details"]["step"] for row in outbox()] == [1, 2]
    assert webhook.ids() == in_sequence
    assert [message.event["id"] for message in nats_server.stream_messages()] == in_sequence


def test_the_outbox_keeps_a_bounded_history_of_delivered_events(sinks, settings, admin_client):
    _, webhook = sinks
    settings.UCWEB_EVENTS_NATS_URL = None
    settings.UCWEB_EVENTS_KEEP_DELIVERED = 3
    for name in ("a1", "a2", "a3", "a4", "a5"):
        assert admin_client.post(f"{UC}/catalogs", {"name": name}, format="json").status_code == 200
    assert [row.subject for row in outbox()] == ["a3", "a4", "a5"]
    created = [event["subject"] for _, event in webhook.received if event["type"] == "createCatalog"]
    assert created[-5:] == ["a1", "a2", "a3", "a4", "a5"], "the forgotten ones were delivered first"


def test_the_event_of_a_delta_commit_adds_no_round_trip(settings, reader, managed):
    """The outbox row is one more part of the commit's one statement (commits.one_statement): the
    commit sends as many queries as its pin, which is measured without events."""
    from catalog.signals import change_events_written
    from maintenance.receivers import deliver_change_events
    from tests.delta_client import write_staged

    settings.UCWEB_EVENTS_WEBHOOK_URL = "http://127.0.0.1:9/never-called"
    versions = iter(range(3, 10))

    def commit():
        version = next(versions)
        size = write_staged(managed.storage_location, f"{version}.json")
        return reader.post(f"{UC}/delta/commit", {
            "table_id": managed.table_id, "table_uri": managed.storage_location,
            "commit_info": {"version": version, "timestamp": 1, "file_name": f"{version}.json", "file_size": size,
                            "file_modification_timestamp": 1}}, format="json")

    # Not delivered here: what is counted is the commit's own queries.
    change_events_written.disconnect(dispatch_uid="maintenance.change_events")
    try:
        assert measure(commit, 200) == pins()["delta commit"]
    finally:
        change_events_written.connect(deliver_change_events, dispatch_uid="maintenance.change_events")
    assert [row.data["details"]["version"] for row in ChangeEvent.objects.filter(type="commitDelta")] == [3, 4]


# -- with a real worker -------------------------------------------------------------------------------

@pytest.fixture
def event_worker(broker, sinks, tmp_path, settings):  # noqa: F811 - the fixture imported above
    """A Celery worker delivering to this test's NATS and webhook; the test process sends to the
    same broker (tasks are not run inline)."""
    from ucweb.celery import app

    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the database with the test, which needs PostgreSQL")
    nats_server, webhook = sinks
    env = {"UCWEB_EVENTS_NATS_URL": nats_server.url, "UCWEB_EVENTS_WEBHOOK_URL": webhook.url}
    workers = []

    def start() -> Worker:
        worker = Worker(broker.url, env, tmp_path / "worker.log")
        worker.start()
        workers.append(worker)
        return worker

    app.conf.task_always_eager = False
    yield start
    for worker in workers:
        worker.stop()
    app.conf.task_always_eager = True
    print((tmp_path / "worker.log").read_text()[-3000:])


def send_drain():
    from ucweb.celery import app

    app.send_task("maintenance.deliver_change_events")


def make_changes(admin_client, prefix: str, schemas: int, updates: int) -> None:
    """`schemas` schemas of catalog unity, each updated `updates` times: events of several
    securables, interleaved."""
    for index in range(schemas):
        assert admin_client.post(f"{UC}/schemas", {"name": f"{prefix}{index}", "catalog_name": "unity"},
                                 format="json").status_code == 200
    for round_ in range(updates):
        for index in range(schemas):
            assert admin_client.patch(f"{UC}/schemas/unity.{prefix}{index}", {"comment": f"round {round_}"},
                                      format="json").status_code == 200


def assert_delivered_once_in_order(nats_server, webhook, *, sinks=("nats", "webhook")):
    expected = {}
    for row in outbox():
        expected.setdefault(row.partition_key, []).append(str(row.event_id))
    if "nats" in sinks:
        messages = [message.event for message in nats_server.stream_messages()]
        assert sorted(event["id"] for event in messages) == sorted(str(row.event_id) for row in outbox()), \
            "JetStream holds every event once (a redelivery is a duplicate it drops)"
        assert in_order_per_securable(messages) == expected
    if "webhook" in sinks:
        received = [event for _, event in webhook.received]
        assert set(webhook.ids()) == {str(row.event_id) for row in outbox()}
        assert in_order_per_securable(received) == expected


@pytest.mark.slow
def test_a_worker_killed_mid_drain_loses_nothing(event_worker, sinks, admin_client):
    nats_server, webhook = sinks
    webhook.delay = 0.05  # a drain of the whole outbox takes seconds
    first = event_worker()
    make_changes(admin_client, "k", schemas=8, updates=10)
    total = ChangeEvent.objects.count()
    send_drain()

    def some_delivered():
        """the worker to deliver part of the outbox"""
        return len(webhook.received) >= 20

    wait_for(some_delivered, timeout=120)
    os.killpg(first.process.pid, signal.SIGKILL)
    first.process.wait(timeout=30)
    pending = ChangeEvent.objects.filter(webhook_delivered_at__isnull=True).count()
    assert 0 < pending < total, "the worker was killed in the middle of the drain"

    event_worker()
    send_drain()

    def all_delivered():
        """a new worker to deliver the rest"""
        return not ChangeEvent.objects.filter(webhook_delivered_at__isnull=True).exists() and \
            not ChangeEvent.objects.filter(nats_delivered_at__isnull=True).exists()

    wait_for(all_delivered, timeout=180, interval=1)
    assert_delivered_once_in_order(nats_server, webhook)


@pytest.mark.slow
def test_events_wait_while_nats_is_down_for_a_minute_then_arrive_in_order(event_worker, sinks, admin_client,
                                                                           settings):
    nats_server, webhook = sinks
    event_worker()
    make_changes(admin_client, "up", schemas=3, updates=2)

    def delivered_to_nats():
        """every event so far to reach NATS"""
        return not ChangeEvent.objects.filter(nats_delivered_at__isnull=True).exists()

    wait_for(delivered_to_nats, timeout=60)
    nats_server.stop()
    make_changes(admin_client, "down", schemas=3, updates=3)
    waiting = set(ChangeEvent.objects.filter(nats_delivered_at__isnull=True).values_list("sequence", flat=True))
    assert len(waiting) == 12

    outage_ends = time.monotonic() + 60
    while time.monotonic() < outage_ends:  # drains keep coming, as the beat sends them
        send_drain()
        time.sleep(5)
        assert set(ChangeEvent.objects.filter(nats_delivered_at__isnull=True)
                   .values_list("sequence", flat=True)) == waiting, "nothing reaches a NATS that is down"
    assert not ChangeEvent.objects.filter(webhook_delivered_at__isnull=True).exists(), \
        "the webhook is not held up by NATS"

    nats_server.start()
    send_drain()
    wait_for(delivered_to_nats, timeout=120, interval=1)
    assert_delivered_once_in_order(nats_server, webhook)


@pytest.mark.slow
def test_the_product_started_as_the_readme_says_delivers_change_events(tmp_path, nats_server, webhook):
    import json
    import urllib.request

    from tests.product import FAST, Product

    product = Product(tmp_path, **FAST, UCWEB_EVENTS_NATS_URL=nats_server.url,
                      UCWEB_EVENTS_WEBHOOK_URL=webhook.url).start()
    try:
        request = urllib.request.Request(
            f"{product.url}{UC}/catalogs", method="POST", data=json.dumps({"name": "announced"}).encode(),
            headers={"Authorization": f"Bearer {product.admin_token()}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            catalog_id = json.loads(response.read())["id"]

        def announced():
            """the product's worker to deliver the catalog's creation to the webhook and to NATS"""
            hooked = [event for _, event in webhook.received if event["type"] == "createCatalog"
                      and event["subject"] == "announced"]
            published = [message.event for message in nats_server.stream_messages()
                         if message.event["subject"] == "announced"]
            return hooked and published and (hooked, published)

        hooked, published = wait_for(announced, timeout=120, interval=1)
        assert [event["id"] for event in hooked] == [event["id"] for event in published]
        assert hooked[0]["partitionkey"] == catalog_id and published[0]["data"]["securable_id"] == catalog_id
        assert product.problems() == []
    finally:
        product.stop()
