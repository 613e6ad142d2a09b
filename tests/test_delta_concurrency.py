"""Concurrent writers on PostgreSQL: for every version of a table exactly one proposal wins, no
version is skipped, every loser is told 409, and every winner's commit is recorded. Writers of
the legacy path (/delta/commit) and of the Delta REST API (/delta/v1 updateTable) race on the
same tables through the one ratification."""

import random
import threading
import uuid
from collections import Counter

import pytest
import urllib3
from django.db import connection

from commits.models import DeltaCommit
from tests.delta_client import write_staged
from tests.helpers import UC

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture(autouse=True)
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("row locking is tested on PostgreSQL (set DATABASE_URL)")


def race(base_url, token, tables, *, writers, attempts, v1_writers=0):
    """Each writer reads the latest version and proposes the next one, until `attempts`
    proposals have been made in all. The first `v1_writers` writers use /delta/v1 (loadTable,
    then updateTable with add-commit), the others the legacy path. Returns the outcome of every
    proposal."""
    http = urllib3.PoolManager(maxsize=writers)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    outcomes, lock = [], threading.Lock()
    remaining = [attempts]

    def take() -> bool:
        with lock:
            if remaining[0] == 0:
                return False
            remaining[0] -= 1
            return True

    def v1_writer(seed):
        rng = random.Random(seed)
        while take():
            table_id, location, name = rng.choice(tables)
            path = f"{base_url}{UC}/delta/v1/catalogs/unity/schemas/default/tables/{name}"
            latest = http.request("GET", path, headers=headers).json()["latest-table-version"]
            version = latest + 1
            file_name = f"{version:020d}.{uuid.uuid4()}.json"
            size = write_staged(location, file_name)
            body = {
                "requirements": [{"type": "assert-table-uuid", "uuid": table_id}],
                "updates": [{"action": "add-commit", "commit": {
                    "version": version, "timestamp": 1700000000000 + version, "file-name": file_name,
                    "file-size": size, "file-modification-timestamp": 1700000000000}}],
            }
            response = http.request("POST", path, json=body, headers=headers)
            if response.status == 409:
                assert response.json()["error"]["type"] == "CommitVersionConflictException", response.data
            with lock:
                outcomes.append((table_id, version, file_name, response.status))

    def writer(seed):
        if seed < v1_writers:
            return v1_writer(seed)
        rng = random.Random(seed)
        while take():
            table_id, location, _ = rng.choice(tables)
            latest = http.request(
                "GET", f"{base_url}{UC}/delta/commits", fields={"table_id": table_id, "table_uri": location},
                headers={"Authorization": headers["Authorization"]},
            ).json()["latest_table_version"]
            version = latest + 1
            file_name = f"{version:020d}.{uuid.uuid4()}.json"
            size = write_staged(location, file_name)
            body = {
                "table_id": table_id, "table_uri": location,
                "commit_info": {"version": version, "timestamp": 1700000000000 + version, "file_name": file_name,
                                "file_size": size, "file_modification_timestamp": 1700000000000},
            }
            response = http.request("POST", f"{base_url}{UC}/delta/commit", json=body, headers=headers)
            with lock:
                outcomes.append((table_id, version, file_name, response.status))

    threads = [threading.Thread(target=writer, args=(seed,)) for seed in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def check(outcomes, tables):
    statuses = Counter(status for *_, status in outcomes)
    assert set(statuses) <= {200, 409}, statuses
    for table_id, *_ in tables:
        winners = {version: name for t, version, name, status in outcomes if t == table_id and status == 200}
        rows = dict(DeltaCommit.objects.filter(table_id=table_id).values_list("version", "file_name"))
        assert rows == winners, "every winner is recorded, and only winners"
        assert sorted(rows) == list(range(1, len(rows) + 1)), "versions are contiguous from 1"
        losers = [v for t, v, _, s in outcomes if t == table_id and s == 409]
        assert all(v in rows for v in losers), "a 409 is only ever for a version that has a winner"
    return statuses


def make_tables(delta, count):
    tables = []
    for index in range(count):
        created = delta.create_table("unity", "default", f"race_{index}")
        tables.append((created.table_id, created.storage_location, f"race_{index}"))
    return tables


def test_sixteen_writers_on_one_table(delta, live_server, settings):
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 10**9
    tables = make_tables(delta, 1)
    outcomes = race(live_server.url, delta.token, tables, writers=16, attempts=2000)
    statuses = check(outcomes, tables)
    assert len(outcomes) == 2000 and statuses[200] > 0 and statuses[409] > 0


def test_sixteen_writers_on_fifty_tables(delta, live_server, settings):
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 10**9
    tables = make_tables(delta, 50)
    outcomes = race(live_server.url, delta.token, tables, writers=16, attempts=2000)
    statuses = check(outcomes, tables)
    assert len(outcomes) == 2000 and statuses[200] > 0


def test_sixteen_writers_on_one_table_through_both_apis(delta, live_server, settings):
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 10**9
    tables = make_tables(delta, 1)
    outcomes = race(live_server.url, delta.token, tables, writers=16, attempts=2000, v1_writers=8)
    statuses = check(outcomes, tables)
    assert len(outcomes) == 2000 and statuses[200] > 0 and statuses[409] > 0


def test_sixteen_writers_on_fifty_tables_through_both_apis(delta, live_server, settings):
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 10**9
    tables = make_tables(delta, 50)
    outcomes = race(live_server.url, delta.token, tables, writers=16, attempts=2000, v1_writers=8)
    statuses = check(outcomes, tables)
    assert len(outcomes) == 2000 and statuses[200] > 0
