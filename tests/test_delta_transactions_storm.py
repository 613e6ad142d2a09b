"""Multi-table Delta transactions on the real server process (started as `make run` starts it, on
PostgreSQL), through both Delta APIs at once.

Writers post transactions over overlapping sets of managed tables, each set in its own order.
Every staged commit of transaction T is named `<v>.<T>.json` and carries `commitInfo.txnId = T`,
so every reader path tells which transaction a version belongs to. A writer reads each table's
latest version, stages the next ones and posts; a 409 sends it back to read again, and a dropped
connection or a 5xx makes it send the very same request (same transaction id, same body) again.
Solo writers commit to the same tables one at a time through each API's one-table commit, which
locks one row: they too must never deadlock with the transactions.

While they run, a reader compares two rounds of reads of every table through loadTable, GET
commits and the published `_delta_log` (a publisher in this process runs the worker's
publish-verify): a transaction seen on one table in the first round must be seen on each of its
other tables in the second (ratified or published). Afterwards, for every transaction, all of its
tables hold its commit or none does; each version has one winner; no deadlock was reported."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse

import pytest
import requests
from django.db import connection

from catalog.models import Table
from commits.models import DeltaCommit, DeltaTransaction
from maintenance.publish import verify_table
from tests.delta_client import stage_commit
from tests.delta_v1_client import DeltaV1Client
from tests.helpers import UC, wait_for
from tests.server_process import running_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
NAMES = ["t0", "t1", "t2", "t3"]
SERVER = "ucweb-delta-transactions"  # the server's connections' application name (libpq's PGAPPNAME)


@pytest.fixture
def server(tmp_path):
    with running_server(tmp_path, UCWEB_MAX_UNPUBLISHED_COMMITS="1000000", PGAPPNAME=SERVER) as process:
        yield process


GRANIAN_CRASH_LOOP_SECONDS = 6


def writing_transactions() -> int:
    """The server's database transactions that have written something (a transaction id, or a row
    locked) and have not ended."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                       "AND backend_xid IS NOT NULL", [SERVER])
        return cursor.fetchone()[0]


@pytest.fixture
def lake(server, make_token):
    token = make_token("admin", admin=True)
    client = DeltaV1Client(f"{server.url}{UC}", token)
    tables = {}
    for name in NAMES:
        metadata = client.create_table("unity", "default", name)["metadata"]
        tables[name] = {"id": metadata["table-uuid"], "location": metadata["location"]}
    return token, tables


def txn_of(file_name: str) -> str:
    return file_name.split(".")[1]


class Writer(threading.Thread):
    def __init__(self, index, base, token, tables, plans, outcomes, lock, *, count, sizes, solo=False):
        super().__init__(daemon=True)
        self.solo, self.solos = solo, []  # a solo writer commits one table at a time, without a transaction
        self.index, self.base, self.tables, self.count, self.sizes = index, base, tables, count, sizes
        self.api = "v1" if index % 2 == 0 else "preview"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.plans, self.outcomes, self.lock = plans, outcomes, lock
        self.random = random.Random(index)
        self.resent = 0
        self.error = None

    def get(self, path, **params):
        while True:
            try:
                response = self.session.get(f"{self.base}{UC}{path}", params=params, timeout=60)
                if response.status_code == 200:
                    return response.json()
                assert response.status_code >= 500, f"{response.status_code} {response.text}"
            except requests.RequestException:  # refused, reset, or cut off mid-answer
                pass

    def latest(self, name) -> int:
        table = self.tables[name]
        if self.api == "v1":
            return self.get(f"/delta/v1/catalogs/unity/schemas/default/tables/{name}")["latest-table-version"]
        return self.get("/delta/preview/commits", table_id=table["id"], table_uri=table["location"])[
            "latest_table_version"]

    def item(self, name, txn):
        table = self.tables[name]
        version = self.latest(name) + 1
        file_name, size, now = stage_commit(table["location"], version, f"{txn}-{name}.parquet", txn_id=txn)
        staged = Path(urlparse(table["location"]).path) / "_delta_log" / "_staged_commits"
        (staged / file_name).rename(staged / f"{version:020d}.{txn}.json")  # the transaction, in its name
        commit = {"version": version, "timestamp": now, "file_name": f"{version:020d}.{txn}.json", "file_size": size,
                  "file_modification_timestamp": now}
        if self.api == "preview":
            return {"table_id": table["id"], "table_uri": table["location"], "commit_info": commit}
        return {"identifier": {"catalog": "unity", "schema": "default", "name": name},
                "requirements": [{"type": "assert-table-uuid", "uuid": table["id"]}],
                "updates": [{"action": "add-commit", "commit": {k.replace("_", "-"): v for k, v in commit.items()}}]}

    def post(self, body, path):
        """The final answer: 200 or 409, sending the same request again after a lost answer."""
        while True:
            try:
                response = self.session.post(f"{self.base}{UC}{path}", json=body, timeout=120)
                if response.status_code in (200, 409):
                    return response.status_code, response.json()
                assert response.status_code >= 500, f"{response.status_code} {response.text}"
            except requests.RequestException:  # refused, reset, or cut off mid-answer
                time.sleep(0.05)  # the server's workers are being replaced
            self.resent += 1

    def settle(self, txn, names, body) -> int:
        if self.solo:  # the one-table commit of its API
            name, item = names[0], body
            if self.api == "v1":
                item = {key: value for key, value in body.items() if key != "identifier"}
                status, _ = self.post(item, f"/delta/v1/catalogs/unity/schemas/default/tables/{name}")
            else:
                status, _ = self.post(item, "/delta/commit")
            if status == 200:
                self.solos.append((txn, name, item))
            return status
        path = "/delta/v1/transactions/commit" if self.api == "v1" else "/delta/preview/transactions/commit"
        status, answer = self.post(body, path)
        with self.lock:
            self.outcomes.append((txn, names, status, answer))
        return status

    def run(self):
        try:
            for _ in range(self.count):
                while True:
                    names = self.random.sample(NAMES, 1 if self.solo else self.random.choice(self.sizes))
                    txn = str(uuid.uuid4())
                    if not self.solo:
                        with self.lock:
                            self.plans[txn] = names
                    items = [self.item(name, txn) for name in names]
                    body = (items[0] if self.solo else {"transaction-id": txn, "table-changes": items}
                            if self.api == "v1" else {"transaction_id": txn, "commits": items})
                    if self.settle(txn, names, body) == 200:
                        break
        except BaseException as exc:  # reported by the test, not lost in a thread
            self.error = exc


def published(location: str) -> set[str]:
    """The transactions of the published versions (>= 1) of a table's `_delta_log`."""
    found = set()
    log = Path(urlparse(location).path) / "_delta_log"
    for path in log.glob("*.json"):
        if path.name == f"{0:020d}.json":
            continue
        try:
            first = json.loads(path.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            continue  # being written: seen in a later round
        found.add(first["commitInfo"]["txnId"])
    return found


class Reader(threading.Thread):
    """Two rounds of reads of every table, compared, until told to stop."""

    def __init__(self, base, token, tables, plans, lock):
        super().__init__(daemon=True)
        self.base, self.tables, self.plans, self.lock = base, tables, plans, lock
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.stop, self.rounds, self.seen, self.partial = threading.Event(), 0, 0, []

    def view(self):
        seen = {}
        for name, table in self.tables.items():
            loaded = self.session.get(f"{self.base}{UC}/delta/v1/catalogs/unity/schemas/default/tables/{name}",
                                      timeout=60)
            commits = self.session.get(f"{self.base}{UC}/delta/preview/commits", timeout=60,
                                       params={"table_id": table["id"], "table_uri": table["location"]})
            if loaded.status_code != 200 or commits.status_code != 200:
                return None
            seen[name] = {"loadTable": {txn_of(c["file-name"]) for c in loaded.json()["commits"]},
                          "commits": {txn_of(c["file_name"]) for c in commits.json()["commits"]},
                          "_delta_log": published(table["location"])}
        return seen

    def run(self):
        while not self.stop.is_set():
            try:
                first, second = self.view(), self.view()
            except requests.RequestException:
                continue
            if first is None or second is None:
                continue
            self.rounds += 1
            with self.lock:
                plans = dict(self.plans)
            for name, paths in first.items():
                for path, txns in paths.items():
                    for txn in txns:
                        self.seen += 1
                        for other in plans.get(txn, ()):  # a solo writer's commit has no others
                            if (txn not in second[other]["loadTable"] | second[other]["_delta_log"]
                                    or txn not in second[other]["commits"] | second[other]["_delta_log"]):
                                self.partial.append((txn, name, path, other))


def publisher(tables, stop: threading.Event):
    """The worker's publish-verify, over and over, as fast as it goes."""
    try:
        while not stop.is_set():
            for table in tables.values():
                verify_table(table["id"])
    finally:
        connection.close()


def run_writers(server, token, tables, *, writers, count, sizes, faults=None, solos=0):
    """`writers` writers of transactions (half through each API) and `solos` writers of one-table
    commits, on the same tables."""
    plans, outcomes, lock = {}, [], threading.Lock()
    crew = [Writer(i, server.url, token, tables, plans, outcomes, lock, count=count, sizes=sizes, solo=i >= writers)
            for i in range(writers + solos)]
    reader = Reader(server.url, token, tables, plans, lock)
    stop = threading.Event()
    publishing = threading.Thread(target=publisher, args=(tables, stop), daemon=True)
    for thread in (*crew, reader, publishing):
        thread.start()
    if faults is not None:
        faults(crew)
    for writer in crew:
        writer.join(timeout=900)
    wait_for(lambda: reader.rounds >= 3 or not reader.is_alive(), timeout=300)
    reader.stop.set()
    stop.set()
    reader.join(timeout=120)
    publishing.join(timeout=120)
    assert not any(writer.is_alive() for writer in crew), "every writer finished"
    errors = [writer.error for writer in crew if writer.error is not None]
    assert not errors, errors
    return plans, outcomes, reader, sum(writer.resent for writer in crew), [s for w in crew for s in w.solos]


def answered(answer, tables) -> dict:
    """Each table's version in a transaction's answer, by table name."""
    if "results" in answer:
        return {result["identifier"]["name"]: result["latest-table-version"] for result in answer["results"]}
    names = {table["id"]: name for name, table in tables.items()}
    return {names[result["table_id"]]: result["latest_table_version"] for result in answer["commits"]}


def check_all_or_nothing(tables, plans, outcomes):
    by_table = {name: dict(DeltaCommit.objects.filter(table_id=t["id"]).values_list("version", "file_name"))
                for name, t in tables.items()}
    for name, versions in by_table.items():
        latest = Table.objects.get(id=tables[name]["id"]).latest_version
        assert sorted(versions) == list(range(1, latest + 1)), f"{name}: no gap, one commit per version"
    holding = {}
    for name, versions in by_table.items():
        for version, file_name in versions.items():
            holding.setdefault(txn_of(file_name), {})[name] = version
    for txn, names in plans.items():
        assert set(holding.get(txn, {})) in (set(), set(names)), f"transaction {txn}: all of {names} or none"
    won = {txn: answer for txn, _, status, answer in outcomes if status == 200}
    for txn, answer in won.items():
        assert holding[txn] == answered(answer, tables), f"transaction {txn} holds the versions it was answered"
    lost = {txn for txn, _, status, _ in outcomes if status == 409}
    assert not lost & set(holding), "a refused transaction left no version"
    committed = set(DeltaTransaction.objects.values_list("transaction_id", flat=True))
    assert committed == set(holding) & set(plans), "the transaction ids recorded are those of the transactions ratified"
    return won


def test_overlapping_transactions_and_one_table_commits_through_both_apis(server, lake):
    token, tables = lake
    plans, outcomes, reader, _, solos = run_writers(server, token, tables, writers=4, count=6, sizes=(2, 3), solos=2)
    won = check_all_or_nothing(tables, plans, outcomes)
    assert len(won) == 24 and len(solos) == 12
    for txn, name, item in solos:
        version = (item.get("commit_info") or item["updates"][0]["commit"])["version"]
        assert DeltaCommit.objects.filter(table_id=tables[name]["id"], version=version,
                                          file_name__contains=txn).exists(), "each one-table commit told 200 landed"
    assert reader.rounds >= 3 and reader.seen > 0, (reader.rounds, reader.seen)
    assert not reader.partial, f"a transaction seen on one table and not on another: {reader.partial[:5]}"
    assert "deadlock" not in server.log().lower()
    print(f"outcomes {sum(1 for o in outcomes if o[2] == 200)} ratified, "
          f"{sum(1 for o in outcomes if o[2] == 409)} refused; reader rounds {reader.rounds}")


def test_a_killed_worker_leaves_every_transaction_whole(server, lake):
    token, tables = lake

    kills = []

    def kill_twice(crew):
        """Twice, once a transaction is being written: SIGKILL every worker of the server."""
        respawned_at = None
        for _ in range(2):
            def in_flight():
                """a transaction of the server to be under way, on workers past granian's crash-loop
                window (a worker that dies within 5.5 s of its respawn makes granian exit)"""
                settled = respawned_at is None or time.monotonic() - respawned_at > GRANIAN_CRASH_LOOP_SECONDS
                return (settled and writing_transactions() > 0) or not any(writer.is_alive() for writer in crew)
            wait_for(in_flight, timeout=600, interval=0.01)
            victims = server.workers()
            for victim in victims:
                os.kill(victim, signal.SIGKILL)
            kills.append(victims)
            wait_for(lambda: len(server.workers()) == 2 and not set(server.workers()) & set(victims), timeout=120)
            respawned_at = time.monotonic()

    plans, outcomes, reader, resent, _ = run_writers(server, token, tables, writers=4, count=4, sizes=(3, 4),
                                                  faults=kill_twice)
    assert len(kills) == 2 and all(kills)
    check_all_or_nothing(tables, plans, outcomes)
    assert not reader.partial, f"a transaction seen on one table and not on another: {reader.partial[:5]}"
    print(f"requests sent again after a lost answer: {resent}")
