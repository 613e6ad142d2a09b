"""A fault storm on the real server (started as `make run` starts it, on PostgreSQL): 16 writers
commit to one managed Delta table while a granian worker is SIGKILLed and every database
connection of the server is terminated (pg_terminate_backend), twice each, mid-storm.

Each writer has a list of changes to land. For each change it reads the latest version, stages a
commit for the next one and proposes it: a 200 lands the change, a 409 sends it back to read the
latest version again, and anything else (an error status, a dropped connection) makes it send the
very same proposal again until the answer is a 200 (its commit was ratified, or a replay of one
that was) or a 409. Afterwards:
- no gap: the ratified versions are 1..latest;
- no double winner: every version has one commit, and no two proposals were told 200 for it;
- no lost commit: every proposal told 200 is the catalog's commit of its version, and the table
  read back holds every change of every writer exactly once."""

import os
import signal
import threading
import uuid
from collections import Counter, defaultdict

import pytest
import requests

from commits.models import DeltaCommit
from tests.delta_client import DeltaClient, write_staged
from tests.helpers import UC, terminate_other_connections, wait_for
from tests.server_process import running_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
WRITERS = 16
CHANGES_PER_WRITER = 12
STORM_SERVER = "ucweb-fault-storm"


@pytest.fixture
def server(tmp_path):
    # The server's connections carry a name of their own (libpq's PGAPPNAME), so that the storm
    # ends those and not the connections of this test process's live server.
    with running_server(tmp_path, UCWEB_MAX_UNPUBLISHED_COMMITS="1000000", PGAPPNAME=STORM_SERVER) as process:
        yield process



class Writer(threading.Thread):
    def __init__(self, index, base, token, table_id, location, outcomes, lock):
        super().__init__(daemon=True)
        self.index, self.base, self.table_id, self.location = index, base, table_id, location
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.outcomes, self.lock = outcomes, lock
        self.retries = 0
        self.error = None

    def latest(self) -> int:
        while True:
            try:
                response = self.session.get(f"{self.base}{UC}/delta/commits", timeout=60,
                                            params={"table_id": self.table_id, "table_uri": self.location})
                if response.status_code == 200:
                    return response.json()["latest_table_version"]
            except requests.RequestException:
                pass
            self.retries += 1

    def propose(self, body) -> int:
        """The final answer to one proposal: 200 or 409, after as many retries as it takes."""
        while True:
            try:
                response = self.session.post(f"{self.base}{UC}/delta/commit", json=body, timeout=60)
                if response.status_code in (200, 409):
                    return response.status_code
                assert response.status_code >= 500, f"{response.status_code} {response.text}"
            except (requests.ConnectionError, requests.Timeout):
                pass
            self.retries += 1

    def run(self):
        try:
            for change in range(CHANGES_PER_WRITER):
                data_file = f"writer{self.index}-change{change}.parquet"
                while True:
                    version = self.latest() + 1
                    file_name = f"{version:020d}.{uuid.uuid4()}.json"
                    size = write_staged(self.location, file_name, data_file=data_file)
                    status = self.propose({"table_id": self.table_id, "table_uri": self.location, "commit_info": {
                        "version": version, "timestamp": 1700000000000 + version, "file_name": file_name,
                        "file_size": size, "file_modification_timestamp": 1700000000000}})
                    with self.lock:
                        self.outcomes.append((version, file_name, data_file, status))
                    if status == 200:
                        break
        except BaseException as exc:  # reported by the test, not lost in a thread
            self.error = exc


def test_sixteen_writers_through_killed_workers_and_terminated_connections(server, make_token):
    token = make_token("admin", admin=True)
    delta = DeltaClient(f"{server.url}{UC}", token)
    created = delta.create_table("unity", "default", "storm")
    table_id, location = created.table_id, created.storage_location

    outcomes, lock = [], threading.Lock()
    writers = [Writer(i, server.url, token, table_id, location, outcomes, lock) for i in range(WRITERS)]
    for writer in writers:
        writer.start()

    total = WRITERS * CHANGES_PER_WRITER
    faults = []

    def ratified(count):
        def reached():
            """the storm to reach a number of ratified commits"""
            return DeltaCommit.objects.filter(table_id=table_id).count() >= count or not any(
                w.is_alive() for w in writers)
        return reached

    for step, at in enumerate((total // 5, 2 * total // 5, 3 * total // 5, 4 * total // 5)):
        wait_for(ratified(at), timeout=600)
        if step % 2 == 0:
            victim = server.workers()[0]
            os.kill(victim, signal.SIGKILL)
            faults.append(("SIGKILL worker", victim))
        else:
            faults.append(("pg_terminate_backend", terminate_other_connections(STORM_SERVER)))
    for writer in writers:
        writer.join(timeout=900)
    assert not any(writer.is_alive() for writer in writers), "every writer finished"
    errors = [writer.error for writer in writers if writer.error is not None]
    assert not errors, errors

    killed = [pid for kind, pid in faults if kind == "SIGKILL worker"]
    assert all(pid not in server.workers() for pid in killed) and len(server.workers()) == 2, \
        "the killed workers were replaced"
    assert all(count > 0 for kind, count in faults if kind == "pg_terminate_backend"), faults

    rows = dict(DeltaCommit.objects.filter(table_id=table_id).values_list("version", "file_name"))
    assert sorted(rows) == list(range(1, total + 1)), "no gap, and one version per change"
    winners = defaultdict(set)
    for version, file_name, _, status in outcomes:
        if status == 200:
            winners[version].add(file_name)
    assert all(len(names) == 1 for names in winners.values()), "no two proposals won one version"
    assert {version: names.pop() for version, names in winners.items()} == rows, "every 200 is recorded"
    assert all(version in rows for version, _, _, status in outcomes if status == 409)

    latest, live = delta.snapshot(table_id, location)
    expected = sorted(f"writer{w}-change{c}.parquet" for w in range(WRITERS) for c in range(CHANGES_PER_WRITER))
    assert latest == total and live == expected, "every change landed exactly once"
    landed = Counter(data for _, _, data, status in outcomes if status == 200)
    assert set(landed.values()) == {1}
    print(f"faults {faults}; proposals {Counter(s for *_, s in outcomes)}; "
          f"retries after errors {sum(w.retries for w in writers)}")
