"""Several servers, several workers, one database: two ucweb servers started the README's way
(`make run`, each with its web server, Celery worker and beat) on one PostgreSQL database and one
Redis, sharing the managed storage and the secret key, under a Delta and an Iceberg commit storm
spread over both. Mid-storm one server's Celery worker is SIGKILLed (its supervisor starts it
again), then a whole server is (web server, worker and beat: a host lost); its writers go on
against the other server. Afterwards:
- Delta: the ratified versions are 1..latest, one winner per version, and every proposal told 200
  is the catalog's commit of its version (nothing lost);
- Iceberg: the snapshots form one chain with sequence numbers 1..N, one child per parent, and every
  snapshot whose commit was told 200 is in it;
- maintenance the catalog planned on the storm's table (checkpoints) ran, and every run that
  finished was finished once (one final audit event per run);
- both servers announce their changes to one NATS JetStream and one webhook: once the outbox says
  every change event is delivered to both, JetStream holds each event once (its id, `Nats-Msg-Id`,
  makes a redelivery by a worker killed mid-drain a duplicate it drops), the webhook got every
  event at least once and nothing else, each securable's events arrived in the order they were
  written, and the storm's tables announced each Delta version and each Iceberg metadata version
  once, in order, the commits told 200 among them;
- the surviving server's `/metrics` counts what the storm did through it, its worker's tasks
  included, and its backlog of unpublished commits drains to 0.
Every wait is on a condition."""

from __future__ import annotations

import os
import random
import secrets
import signal
import socket
import threading
import json
import time
import uuid
from collections import Counter, defaultdict

import pytest
import urllib3
from prometheus_client.parser import text_string_to_metric_families
from pyiceberg.table import CommitTableRequest, TableIdentifier
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate

from commits.formats.iceberg import metadata_version
from tests.celery_worker import Redis
from tests.change_events_support import in_order_per_securable
from tests.delta_client import write_staged
from tests.delta_v1_client import DeltaV1Client
from tests.helpers import UC, wait_for
from tests.product import FAST, PostgresDatabase, Product

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("product_cluster")]

DELTA_WRITERS, DELTA_COMMITS = 6, 100  # commits landed by the storm, over all its writers
ICEBERG_WRITERS, ICEBERG_COMMITS = 4, 40
LEGACY = f"{UC}/delta/preview/commits"
ICEBERG = "/api/catalog/v1/unity"
MACHINE_REDIS = ("127.0.0.1", 6379)
SERVER_ENV = {
    **FAST,
    # A killed worker's run is taken over seconds after it stops renewing its lease, and the
    # killed worker is started again soon.
    "UCWEB_MAINTENANCE_LEASE_SECONDS": "5", "UCWEB_MAINTENANCE_BACKOFF_SECONDS": "1",
    "UCWEB_WORKER_RESTART_SECONDS": "3",
    # The catalog plans checkpoints of the storm's table as it grows (its data files are names
    # only, so no compaction is planned on them).
    "UCWEB_CHECKPOINT_INTERVAL": "25", "UCWEB_OPTIMIZE_MIN_FILES": "1000000",
    "UCWEB_MAX_UNPUBLISHED_COMMITS": "1000000",
}


# -- what the servers share --------------------------------------------------------------------------
@pytest.fixture
def database():
    import psycopg

    try:
        created = PostgresDatabase().create()
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL is not running ({exc}); make test starts it")
    yield created
    created.drop()


@pytest.fixture
def redis_url(tmp_path):
    """A Redis database number of its own on the machine's Redis; without one running, a Redis
    server of the test's own."""
    import redis

    try:
        client = redis.Redis(*MACHINE_REDIS, socket_connect_timeout=2)
        client.ping()
    except redis.RedisError:
        server = Redis(tmp_path)
        try:
            server.start()
        except RuntimeError as exc:
            pytest.skip(f"no Redis: {exc}")
        yield server.url
        server.stop()
        return
    claim = f"ucweb-test-{uuid.uuid4()}"
    for number in range(1, 16):
        own = redis.Redis(*MACHINE_REDIS, db=number)
        if own.dbsize() == 0 and own.set("ucweb:claimed-by", claim, nx=True):
            break
    else:
        pytest.skip("every database number of the machine's Redis is in use")
    yield f"redis://{MACHINE_REDIS[0]}:{MACHINE_REDIS[1]}/{number}"
    own.flushdb()


@pytest.fixture
def servers(tmp_path, database, redis_url, nats_server, webhook):
    storage = tmp_path / "storage"
    storage.mkdir()
    env = {**SERVER_ENV, "DATABASE_URL": database.url, "REDIS_URL": redis_url, "UCWEB_STORAGE_ROOT": storage.as_uri(),
           "UCWEB_SECRET_KEY": secrets.token_hex(32), "UCWEB_ENCRYPTION_KEY": secrets.token_hex(32),
           "UCWEB_EVENTS_NATS_URL": nats_server.url, "UCWEB_EVENTS_WEBHOOK_URL": webhook.url}
    started = []
    try:
        # The second starts once the first has migrated the fresh database and bootstrapped it.
        started.append(Product(tmp_path / "first", **env).launch())

        def prepared():
            """the first server to have migrated and bootstrapped the database"""
            assert started[0].process.poll() is None, started[0].log()[-4000:]
            return "ucweb is starting on" in started[0].log()

        wait_for(prepared, timeout=300)
        started.append(Product(tmp_path / "second", **env).launch())
        yield [product.wait_ready() for product in started]
    finally:
        for product in started:
            product.stop()


# -- the storm ---------------------------------------------------------------------------------------
class Writers:
    """Threads that land `goal` commits in all, each first through its own server (alternating);
    a request that gets no answer (its server is gone) is sent again, unchanged, to the other
    server, which the writer then keeps. Every answer is kept with the server that gave it."""

    def __init__(self, urls: list[str], token: str, count: int, goal: int):
        self.urls, self.goal = urls, goal
        self.http = urllib3.PoolManager(maxsize=count, retries=False, timeout=urllib3.Timeout(total=60))
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.lock = threading.Lock()
        self.landed = 0
        self.answers: list[tuple] = []  # (what, server, status, version, proposal)
        self.failures: list[BaseException] = []
        self.threads = [threading.Thread(target=self.run, args=(index,), daemon=True) for index in range(count)]

    def start(self) -> Writers:
        for thread in self.threads:
            thread.start()
        return self

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=600)
        assert not any(thread.is_alive() for thread in self.threads), "every writer finished"

    def send(self, home: list[int], method: str, path: str, **kwargs):
        """(server index, answer): the writer's server, or the other one when it does not answer."""
        while True:
            try:
                return home[0], self.http.request(method, self.urls[home[0]] + path, headers=self.headers,
                                                  **kwargs)
            except urllib3.exceptions.HTTPError:
                home[0] = 1 - home[0]
                time.sleep(0.05)

    def keep(self, what, server, status, version=None, proposal=None) -> None:
        with self.lock:
            self.answers.append((what, server, status, version, proposal))
            if what == "commit" and status == 200:
                self.landed += 1

    def more(self) -> bool:
        with self.lock:
            return self.landed < self.goal

    def run(self, index: int) -> None:
        home = [index % 2]
        try:
            while self.more():
                self.one(home)
        except BaseException as exc:  # reported by the test, not lost in a thread
            self.failures.append(exc)


class DeltaWriters(Writers):
    def __init__(self, urls, token, table: dict):
        super().__init__(urls, token, DELTA_WRITERS, DELTA_COMMITS)
        self.table = table

    def one(self, home) -> None:
        table = self.table
        server, answer = self.send(home, "GET", LEGACY, fields={
            "table_id": table["id"], "table_uri": table["location"], "start_version": 10**9})
        self.keep("read", server, answer.status)
        if answer.status != 200:
            return
        version = answer.json()["latest_table_version"] + 1
        file_name = f"{version:020d}.{uuid.uuid4()}.json"
        size = write_staged(table["location"], file_name, data_file=f"{file_name}.parquet")
        body = {"table_id": table["id"], "table_uri": table["location"], "commit_info": {
            "version": version, "timestamp": 1700000000000 + version, "file_name": file_name, "file_size": size,
            "file_modification_timestamp": 1700000000000}}
        server, answer = self.send(home, "POST", LEGACY, json=body)
        self.keep("commit", server, answer.status, version, file_name)


class IcebergWriters(Writers):
    def __init__(self, urls, token, path: str):
        super().__init__(urls, token, ICEBERG_WRITERS, ICEBERG_COMMITS)
        self.path = path
        self.metadata_locations: dict[int, str] = {}  # snapshot told 200 → the metadata file it answered

    def one(self, home) -> None:
        server, answer = self.send(home, "GET", self.path)
        self.keep("read", server, answer.status)
        if answer.status != 200:
            return
        metadata = answer.json()["metadata"]
        parent = metadata.get("current-snapshot-id")
        snapshot = random.getrandbits(62)
        # The request pyiceberg sends for an append (its own models): a snapshot on top of the
        # current one, whose manifest list nobody reads here.
        body = CommitTableRequest(
            identifier=TableIdentifier(namespace=["storm"], name="events"),
            requirements=[AssertRefSnapshotId(ref="main", snapshot_id=parent)],
            updates=[AddSnapshotUpdate(snapshot=Snapshot(
                snapshot_id=snapshot, parent_snapshot_id=parent,
                sequence_number=metadata.get("last-sequence-number", 0) + 1, timestamp_ms=int(time.time() * 1000),
                manifest_list=f"{metadata['location']}/metadata/snap-{snapshot}.avro",
                summary=Summary(Operation.APPEND), schema_id=0)),
                SetSnapshotRefUpdate(ref_name="main", type="branch", snapshot_id=snapshot)],
        ).model_dump_json().encode()
        server, answer = self.send(home, "POST", self.path, body=body)
        if answer.status == 200:
            self.metadata_locations[snapshot] = answer.json()["metadata-location"]
        self.keep("commit", server, answer.status, parent, snapshot)


# -- reading the outcome -----------------------------------------------------------------------------
def query(database: PostgresDatabase, sql: str, *params) -> list[tuple]:
    import psycopg

    with psycopg.connect(database.url) as conn:
        return conn.execute(sql, params).fetchall()


def scrape(product: Product, token: str) -> dict[tuple, float]:
    status, text = product.get("/metrics", token)
    assert status == 200, text
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def metric(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def finished_runs(database: PostgresDatabase):
    """(plans, final audit events per plan) read in one snapshot, once no run is RUNNING."""
    import psycopg

    with psycopg.connect(database.url) as conn:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        plans = conn.execute("SELECT id, operation, status, attempts FROM maintenance_maintenanceplan").fetchall()
        if any(status == "RUNNING" for _, _, status, _ in plans):
            return None
        finals = Counter(plan for plan, in conn.execute(
            "SELECT (details->>'plan')::int FROM catalog_auditevent WHERE action LIKE 'maintenance%' "
            "AND details->>'status' IN ('SUCCEEDED', 'SKIPPED', 'FAILED')"))
    return plans, finals


def outbox_when_delivered(database: PostgresDatabase) -> list[tuple] | None:
    """(event id, partition key, type, data) of every change event in the outbox, in the order they
    were written, once every one is delivered to NATS and to the webhook; None before."""
    rows = query(database, "SELECT event_id::text, partition_key, type, data, "
                           "nats_delivered_at IS NOT NULL AND webhook_delivered_at IS NOT NULL "
                           "FROM catalog_changeevent ORDER BY sequence")
    if not rows or not all(delivered for *_, delivered in rows):
        return None
    return [row[:4] for row in rows]


def delivery_state(product: Product) -> list[dict]:
    """The outbox as an operator reads it on a server (`catalog.services.change_events.delivery_state()`)."""
    printed = product.manage("shell", "-c", "import json; from catalog.services import change_events; "
                                            "print(json.dumps(change_events.delivery_state(), default=str))")
    return json.loads(printed.strip().splitlines()[-1])


def table_versions(events: list[dict], table_id: str) -> list[int]:
    """The versions a table's commit events announce, in the order given: a Delta commit's version,
    an Iceberg commit's metadata file's."""
    return [event["data"]["details"]["version"] if event["type"] == "commitDelta"
            else metadata_version(event["data"]["details"]["metadata_location"])
            for event in events if event["partitionkey"] == table_id
            and event["type"] in ("commitDelta", "commitIcebergTable")]


def first_arrivals(events: list[dict]) -> list[dict]:
    """Each event as it first arrived (a redelivery is the same id again)."""
    by_id = {}
    for event in events:
        by_id.setdefault(event["id"], event)
    return list(by_id.values())


# -- the test ----------------------------------------------------------------------------------------
def test_two_servers_two_workers_one_database_through_a_storm_and_a_lost_server(servers, database, nats_server,
                                                                                  webhook):
    first, second = servers
    # A drain then lasts through much of the storm, so the killed workers may die in the middle of
    # one and its events go out again.
    webhook.delay = 0.05
    token = first.admin_token("storm-admin")
    urls = [first.url, second.url]
    delta = DeltaV1Client(f"{first.url}{UC}", token).create_table("unity", "default", "storm")
    table = {"id": delta["metadata"]["table-uuid"], "location": delta["metadata"]["location"]}
    http = urllib3.PoolManager(retries=False)
    auth = {"Authorization": f"Bearer {token}"}
    made = http.request("POST", f"{second.url}{ICEBERG}/namespaces", headers=auth, json={
        "namespace": ["storm"], "properties": {"ucweb.maintenance.enabled": "false"}})
    assert made.status == 200, made.data
    made = http.request("POST", f"{second.url}{ICEBERG}/namespaces/storm/tables", headers=auth, json={
        "name": "events", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": False}]}})
    assert made.status == 200, made.data

    began = time.monotonic()
    storms = [DeltaWriters(urls, token, table).start(),
              IcebergWriters(urls, token, f"{ICEBERG}/namespaces/storm/tables/events").start()]
    deltas, icebergs = storms

    def landed(share):
        def reached():
            """the storms to land a share of their commits"""
            return all(storm.landed >= share * storm.goal or storm.failures for storm in storms)
        return reached

    wait_for(landed(0.3), timeout=300)
    killed_worker = second.pid("worker")
    os.kill(killed_worker, signal.SIGKILL)
    wait_for(landed(0.5), timeout=300)
    first.kill_outright()  # the whole first server: web, worker and beat
    for storm in storms:
        storm.join()
    stormed = time.monotonic()
    assert not deltas.failures and not icebergs.failures, (deltas.failures, icebergs.failures)

    # No answer is a 5xx; reads succeed, and a commit either lands or loses its race.
    statuses = Counter((kind, what, status) for kind, storm in (("delta", deltas), ("iceberg", icebergs))
                       for what, _, status, *_ in storm.answers)
    assert set(statuses) <= {("delta", "read", 200), ("delta", "commit", 200), ("delta", "commit", 409),
                             ("iceberg", "read", 200), ("iceberg", "commit", 200),
                             ("iceberg", "commit", 409)}, statuses
    served = Counter(server for storm in storms for _, server, *_ in storm.answers)
    assert served[0] > 0 and served[1] > 0, "the storms went through both servers"

    # Delta: no gap, one winner per version, nothing lost.
    commits = dict(query(database, "SELECT version, file_name FROM commits_deltacommit WHERE table_id = %s",
                         table["id"]))
    [(latest,)] = query(database, "SELECT latest_version FROM catalog_table WHERE id = %s", table["id"])
    assert sorted(commits) == list(range(1, latest + 1)), "versions 1..latest, without a gap"
    winners = defaultdict(set)
    for what, _, status, version, file_name in deltas.answers:
        if what == "commit" and status == 200:
            winners[version].add(file_name)
    assert all(len(names) == 1 for names in winners.values()), "one winner per version"
    assert all(commits[version] == names.pop() for version, names in list(winners.items())), "every 200 is kept"
    assert len(winners) >= DELTA_COMMITS and all(
        version in commits for what, _, status, version, _ in deltas.answers if what == "commit" and status == 409)

    # Iceberg: one chain, sequence numbers 1..N, every 200 in it.
    [(iceberg_table, metadata)] = query(database, "SELECT t.id::text, m.metadata_json FROM commits_icebergmetadata m "
                                                  "JOIN catalog_table t ON t.id = m.table_id WHERE t.name = 'events'")
    metadata = json.loads(metadata)
    snapshots = {s["snapshot-id"]: s for s in metadata["snapshots"]}
    chain, current = [], metadata["current-snapshot-id"]
    while current is not None:
        chain.append(current)
        current = snapshots[current].get("parent-snapshot-id")
    assert sorted(chain) == sorted(snapshots), "every snapshot is on the one chain of main"
    assert [snapshots[s]["sequence-number"] for s in reversed(chain)] == list(range(1, len(chain) + 1))
    told_200 = {snapshot for what, _, status, _, snapshot in icebergs.answers if what == "commit" and status == 200}
    assert told_200 <= set(snapshots) and len(told_200) >= ICEBERG_COMMITS, "every 200 is kept"
    parents = Counter(parent for what, _, status, parent, _ in icebergs.answers if what == "commit" and status == 200)
    assert set(parents.values()) == {1}, "one winner per parent snapshot"

    # Maintenance: the surviving server's worker and beat carry on; every run finished once.
    def backlog_drained():
        """the surviving server's worker to publish every ratified commit (its /metrics shows no backlog)"""
        return metric(scrape(second, token), "ucweb_delta_unpublished_commits") == 0

    wait_for(backlog_drained, timeout=120)

    def runs_settled():
        """a planned checkpoint to have run and no run to be RUNNING"""
        found = finished_runs(database)
        return found and any(status == "SUCCEEDED" for _, _, status, _ in found[0]) and found

    plans, finals = wait_for(runs_settled, timeout=180)
    assert {operation for _, operation, _, _ in plans} == {"CHECKPOINT"}, plans
    for plan, _, status, attempts in plans:
        assert finals[plan] == (status in ("SUCCEEDED", "SKIPPED", "FAILED")), (plan, status, finals)
        assert attempts >= (status != "PLANNED"), plans

    # Change events: written by both servers, drained by whichever worker held the drain (one of
    # them killed, maybe mid-drain), to one JetStream and one webhook.
    def events_delivered():
        """the workers to deliver every change event of the outbox to NATS and to the webhook"""
        return outbox_when_delivered(database)

    written = wait_for(events_delivered, timeout=300, interval=1)
    written_ids = {event_id for event_id, *_ in written}
    on_nats = [message.event for message in nats_server.stream_messages()]
    hooked = [event for _, event in list(webhook.received)]
    # Read after the sinks, the outbox holds every event they can have got (it forgets none of
    # them: UCWEB_EVENTS_KEEP_DELIVERED is far above their number).
    outbox = {str(row["event_id"]) for row in delivery_state(second)}
    duplicates = [event_id for event_id, count in Counter(event["id"] for event in on_nats).items() if count > 1]
    assert not duplicates, f"JetStream holds each event once; more than once: {duplicates}"
    assert written_ids <= {event["id"] for event in on_nats} <= outbox, "JetStream holds the outbox's events"
    assert written_ids <= set(webhook.ids()), "the webhook got every event of the outbox"
    assert set(webhook.ids()) <= outbox, "the webhook got only events of the outbox"

    written_order = {}
    for event_id, partition_key, *_ in written:
        written_order.setdefault(partition_key, []).append(event_id)

    def arrival_order(events: list[dict]) -> dict[str, list[str]]:
        """Each securable's events of the delivered outbox, in the order they first arrived."""
        order = {key: [event_id for event_id in ids if event_id in written_ids]
                 for key, ids in in_order_per_securable(events).items()}
        return {key: ids for key, ids in order.items() if ids}

    assert arrival_order(on_nats) == written_order, "NATS: each securable's events in the order they were written"
    assert arrival_order(hooked) == written_order, "webhook: each securable's events in the order they were written"

    # The storm's commits: each ratified version announced once, in order, the 200s among them
    # (an Iceberg commit's version is its metadata file's, its snapshot's sequence number).
    outbox_events = [{"id": event_id, "partitionkey": key, "type": kind, "data": data}
                     for event_id, key, kind, data in written]
    iceberg_versions = list(range(1, len(chain) + 1))
    assert table_versions(outbox_events, table["id"]) == sorted(commits), "one event per ratified Delta version"
    assert table_versions(outbox_events, iceberg_table) == iceberg_versions, "one event per Iceberg commit"
    announced_locations = {event["data"]["details"]["metadata_location"] for event in outbox_events
                          if event["partitionkey"] == iceberg_table and event["type"] == "commitIcebergTable"}
    assert set(icebergs.metadata_locations.values()) <= announced_locations, "every Iceberg commit told 200 announced"
    assert all(metadata_version(icebergs.metadata_locations[snapshot]) == snapshots[snapshot]["sequence-number"]
               for snapshot in told_200)
    for sink, events in (("NATS", on_nats), ("webhook", hooked)):
        assert table_versions(first_arrivals(events), table["id"]) == sorted(commits), sink
        assert table_versions(first_arrivals(events), iceberg_table) == iceberg_versions, sink

    # What the surviving server counts is what the storm did through it.
    samples = scrape(second, token)
    through_second = Counter((kind, status) for kind, storm in (("delta", deltas), ("iceberg", icebergs))
                             for what, server, status, *_ in storm.answers if what == "commit" and server == 1)
    routes = {"delta": ("delta-legacy", "api/2.1/unity-catalog/delta/preview/commits"),
              "iceberg": ("iceberg", "api/catalog/v1/<str:prefix>/namespaces/<str:namespace>/tables/<str:table>")}
    for (kind, status), count in through_second.items():
        protocol, route = routes[kind]
        assert metric(samples, "ucweb_http_request_duration_seconds_count", protocol=protocol, route=route,
                      method="POST", status=str(status)) == count, (kind, status, count)
        if status == 409:
            assert metric(samples, "ucweb_commits_total", format=kind, outcome="conflict") == count, (kind, count)
    assert 0 < metric(samples, "ucweb_commits_total", format="delta", outcome="ratified") <= len(commits)
    assert 0 < metric(samples, "ucweb_commits_total", format="iceberg", outcome="ratified") <= len(snapshots)
    # The worker's own metrics (it runs in other processes) are in the server's scrape.
    assert metric(samples, "ucweb_celery_task_duration_seconds_count", task="maintenance.publish_verify",
                  state="SUCCESS") > 0
    assert metric(samples, "ucweb_celery_task_queue_wait_seconds_count", task="maintenance.publish_verify") > 0
    assert ("ucweb_celery_queue_depth", (("queue", "celery"),)) in samples
    assert metric(samples, "ucweb_db_pool_connections", state="open") > 0
    print(f"delta {len(commits)} versions, iceberg {len(snapshots)} snapshots; answers {dict(statuses)}; "
          f"served {dict(served)}; plans {Counter(status for _, _, status, _ in plans)}; change events "
          f"{len(written)}, {len(hooked)} webhook deliveries, {len(on_nats)} in JetStream; storm "
          f"{stormed - began:.0f} s, then {time.monotonic() - stormed:.0f} s until maintenance settled")
    assert second.problems() == [], second.problems()
