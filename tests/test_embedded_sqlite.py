"""The embedded default under write storms: `make run` on SQLite (no DATABASE_URL), with its two
granian worker processes, its worker and its beat all writing the one database file, while 8 writers race
on one catalog-managed Delta table through the legacy commit API and through /delta/v1, other
clients create and drop tables beside them, and the worker publishes, purges and compacts
(OPTIMIZE, a commit of its own on the raced table) in the background.

Every answer must be a success or a proper lost race (409 with the API's conflict type), never a
5xx, readiness included; the table's ratified versions must be 1..N with one commit each; and the
log must stay free of errors (no `database is locked`, no traceback), the worker's and the beat's
included. Before SQLite took its write lock when a transaction began (IMMEDIATE), a third of the
proposals of such a storm answered 500 `database is locked`."""

from __future__ import annotations

import io
import json
import threading
import time
import uuid
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import urllib3

from catalog.storage import join, storage_for
from tests.delta_client import encode
from tests.delta_v1_client import DeltaV1Client
from tests.helpers import UC, wait_for
from tests.product import FAST, Product

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("product_cluster")]

# The product's short periods (tests/product.py), so that the worker and the beat write their
# heartbeats, ticks, publications and purges to the same file all through the storm. Readiness is
# asked throughout and must stay 200: a heartbeat held back for 10 s would be a writer starved of
# the database, not a worker gone.
WRITERS = 8
PROPOSALS = 400  # per storm, over all writers
CHURNERS = 2
CHURN_ROUNDS = 4
LEGACY = f"{UC}/delta/preview/commits"


@pytest.fixture(scope="module")
def product(tmp_path_factory):
    running = Product(tmp_path_factory.mktemp("embedded-sqlite"), **FAST).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def token(product):
    return product.admin_token("storm-admin")


@pytest.fixture(scope="module")
def churn_schema(product, token):
    """Where tables are created and dropped beside the storm. Its tables are kept out of the
    catalog's own maintenance: a health refresh that meets a table dropped under it fails on the
    health row's foreign key, on either database; that is the planner's matter, and the writes of
    create, drop and purge are what these tables are for."""
    answer = urllib3.PoolManager().request(
        "POST", f"{product.url}{UC}/schemas", headers={"Authorization": f"Bearer {token}"},
        json={"name": "churn", "catalog_name": "unity", "properties": {"ucweb.maintenance.enabled": "false"}})
    assert answer.status == 200, answer.data
    return "churn"


def stage(location: str, version: int) -> tuple[str, int]:
    """A real data file (so that the catalog's own maintenance may read and compact it mid-storm)
    and a staged commit of `version` that adds it; (staged file name, size)."""
    buffer = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([version], pa.int64()), "city": ["x"]}), buffer)
    data_file = f"part-{uuid.uuid4()}.parquet"
    storage_for(join(location, data_file)).put(join(location, data_file), buffer.getvalue())
    payload = encode([
        {"commitInfo": {"inCommitTimestamp": 1700000000000 + version, "operation": "WRITE"}},
        {"add": {"path": data_file, "size": buffer.tell(), "modificationTime": 1700000000000,
                 "dataChange": True, "partitionValues": {}}},
    ])
    file_name = f"{version:020d}.{uuid.uuid4()}.json"
    url = join(location, "_delta_log", "_staged_commits", file_name)
    storage_for(url).put(url, payload)
    return file_name, len(payload)


class Storm:
    """`writers` threads that, until `proposals` proposals were made in all, read the latest
    version of one table and propose the next one, each through `api` ("legacy" or "v1"). Every
    answer is kept: (what, status, version, staged file name, error type)."""

    def __init__(self, product: Product, token: str, table: dict, *, api: str, writers: int, proposals: int):
        self.url, self.table, self.api = product.url, table, api
        self.http = urllib3.PoolManager(maxsize=writers, retries=False, timeout=urllib3.Timeout(total=120))
        self.auth = {"Authorization": f"Bearer {token}"}
        self.left, self.lock = proposals, threading.Lock()
        self.answers: list[tuple[str, int, int | None, str | None, str | None]] = []
        self.failures: list[BaseException] = []
        self.threads = [threading.Thread(target=self.writer, daemon=True) for _ in range(writers)]

    def take(self) -> bool:
        with self.lock:
            self.left -= 1
            return self.left >= 0

    def keep(self, what: str, response, version=None, file_name=None) -> dict | None:
        try:
            body = response.json()
        except ValueError:
            body = None
        error = None
        if response.status >= 400 and isinstance(body, dict):
            error = body.get("error", {}).get("type") if self.api == "v1" else body.get("error_code")
        with self.lock:
            self.answers.append((what, response.status, version, file_name, error))
        return body if response.status == 200 else None

    def latest(self) -> int | None:
        table = self.table
        if self.api == "v1":
            loaded = self.keep("read", self.http.request("GET", self.v1_path, headers=self.auth))
            return None if loaded is None else loaded["latest-table-version"]
        # A start past the end: the latest version, without the commits.
        answer = self.keep("read", self.http.request(
            "GET", self.url + LEGACY, headers=self.auth,
            fields={"table_id": table["id"], "table_uri": table["location"], "start_version": 10**9}))
        return None if answer is None else answer["latest_table_version"]

    @property
    def v1_path(self) -> str:
        return f"{self.url}{UC}/delta/v1/catalogs/unity/schemas/default/tables/{self.table['name']}"

    def propose(self, version: int) -> None:
        table = self.table
        file_name, size = stage(table["location"], version)
        if self.api == "v1":
            body = {"requirements": [{"type": "assert-table-uuid", "uuid": table["id"]}],
                    "updates": [{"action": "add-commit", "commit": {
                        "version": version, "timestamp": 1700000000000 + version, "file-name": file_name,
                        "file-size": size, "file-modification-timestamp": 1700000000000}}]}
            response = self.http.request("POST", self.v1_path, json=body, headers=self.auth)
        else:
            body = {"table_id": table["id"], "table_uri": table["location"], "commit_info": {
                "version": version, "timestamp": 1700000000000 + version, "file_name": file_name,
                "file_size": size, "file_modification_timestamp": 1700000000000}}
            response = self.http.request("POST", self.url + LEGACY, json=body, headers=self.auth)
        self.keep("commit", response, version, file_name)

    def writer(self) -> None:
        try:
            while self.take():
                latest = self.latest()
                if latest is not None:
                    self.propose(latest + 1)
        except BaseException as exc:  # reported by the test, not lost in a thread
            self.failures.append(exc)

    def __enter__(self) -> Storm:
        self.started = time.monotonic()
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        for thread in self.threads:
            thread.join()
        self.seconds = time.monotonic() - self.started


class Recorded(urllib3.PoolManager):
    """Keeps the status of every answer, whatever the client that reads it makes of its body."""

    def __init__(self, **options):
        super().__init__(**options)
        self.statuses: list[tuple[str, int]] = []

    def urlopen(self, method, url, *args, **kwargs):
        response = super().urlopen(method, url, *args, **kwargs)
        self.statuses.append((method, response.status))
        return response


class Churn(threading.Thread):
    """Creates a managed Delta table through /delta/v1 and drops it through the UC API, `rounds`
    times (each drop sends the worker a purge)."""

    def __init__(self, product: Product, token: str, schema: str, prefix: str, rounds: int):
        super().__init__(daemon=True)
        self.product, self.token, self.schema, self.prefix, self.rounds = product, token, schema, prefix, rounds
        self.http = Recorded(retries=False, timeout=urllib3.Timeout(total=120))
        self.failures: list[BaseException] = []

    def run(self) -> None:
        v1 = DeltaV1Client(f"{self.product.url}{UC}", self.token, pool=self.http)
        try:
            for index in range(self.rounds):
                name = f"{self.prefix}_{index}"
                v1.create_table("unity", self.schema, name)
                self.http.request("DELETE", f"{self.product.url}{UC}/tables/unity.{self.schema}.{name}",
                                  headers={"Authorization": f"Bearer {self.token}"})
        except BaseException as exc:  # reported by the test, not lost in a thread
            self.failures.append(exc)


class Readiness(threading.Thread):
    """Asks /readyz until told to stop; keeps every status, with the checks that failed."""

    def __init__(self, product: Product):
        super().__init__(daemon=True)
        self.product, self.done = product, threading.Event()
        self.answers: Counter = Counter()

    def run(self) -> None:
        while not self.done.is_set():
            status, body = self.product.readiness()
            failed = sorted(name for name, check in body["checks"].items() if check["status"] != "ok") \
                if isinstance(body, dict) and status != 200 else []
            self.answers[(status, *failed)] += 1

    def stop(self) -> Counter:
        self.done.set()
        self.join()
        return self.answers


def make_table(product: Product, token: str, name: str) -> dict:
    created = DeltaV1Client(f"{product.url}{UC}", token).create_table("unity", "default", name)
    return {"id": created["metadata"]["table-uuid"], "location": created["metadata"]["location"], "name": name}


def ratified(product: Product, token: str, table: dict) -> dict[int, str]:
    """Version → staged file name of every commit the catalog ratified, read back page by page."""
    http = urllib3.PoolManager()
    commits, start = {}, 0
    while True:
        answer = http.request("GET", product.url + LEGACY, headers={"Authorization": f"Bearer {token}"},
                              fields={"table_id": table["id"], "table_uri": table["location"],
                                      "start_version": start})
        assert answer.status == 200, answer.data
        page = answer.json()
        commits.update({commit["version"]: commit["file_name"] for commit in page["commits"]})
        if not page["commits"] or max(commits) >= page["latest_table_version"]:
            return commits
        start = max(commits) + 1


def by_the_catalog(table: dict, file_name: str) -> bool:
    """Whether a ratified commit is the catalog's own maintenance commit (OPTIMIZE mid-storm)."""
    url = join(table["location"], "_delta_log", "_staged_commits", file_name)
    first = json.loads(storage_for(url).read(url).decode().splitlines()[0])
    return first["commitInfo"].get("engineInfo") == "ucweb-maintenance"


CONFLICT = {"legacy": "ALREADY_EXISTS", "v1": "CommitVersionConflictException"}


@pytest.mark.parametrize("api", ["legacy", "v1"])
def test_writers_on_one_table_get_no_5xx(product, token, churn_schema, api):
    table = make_table(product, token, f"storm_{api}")
    churners = [Churn(product, token, churn_schema, f"{api}_{index}", CHURN_ROUNDS) for index in range(CHURNERS)]
    readiness = Readiness(product)
    readiness.start()
    with Storm(product, token, table, api=api, writers=WRITERS, proposals=PROPOSALS) as storm:
        for churner in churners:
            churner.start()
    for churner in churners:
        churner.join()
    ready = readiness.stop()

    statuses = Counter((what, status, error) for what, status, *_, error in storm.answers)
    churned = Counter(answer for churner in churners for answer in churner.http.statuses)
    assert all(status < 500 for _, status, _ in statuses) and all(status < 500 for _, status in churned), (
        statuses, churned)
    assert not storm.failures and not any(churner.failures for churner in churners), (
        storm.failures, [churner.failures for churner in churners])
    assert set(statuses) <= {("read", 200, None), ("commit", 200, None), ("commit", 409, CONFLICT[api])}, statuses
    # Per table: a staging table and a table created, then the table dropped.
    assert churned == {("POST", 200): 2 * CHURNERS * CHURN_ROUNDS, ("DELETE", 200): CHURNERS * CHURN_ROUNDS}, churned
    assert set(ready) == {(200,)}, ready

    commits = ratified(product, token, table)
    assert sorted(commits) == list(range(1, len(commits) + 1)), "versions are 1..N, without a gap"
    winners = [(version, name) for what, status, version, name, _ in storm.answers
               if what == "commit" and status == 200]
    assert len({version for version, _ in winners}) == len(winners), "one winner per version"
    assert all(commits[version] == name for version, name in winners), "every winner is the commit of its version"
    assert all(version in commits for what, status, version, *_ in storm.answers
               if what == "commit" and status == 409), "a 409 is only for a version that has a winner"
    print(f"{api}: {len(winners)} commits in {storm.seconds:.1f} s ({len(winners) / storm.seconds:.1f}/s), "
          f"answers {dict(statuses)}, churn {dict(churned)}, readiness {dict(ready)}")
    assert len(winners) > 1 and statuses[("commit", 409, CONFLICT[api])] > 0, statuses
    ours = {name for _, name in winners}
    assert all(by_the_catalog(table, name) for name in commits.values() if name not in ours), \
        "every other version is the catalog's own"

    def published():
        """the worker to publish what the storm left unpublished (loadTable lists no commit)"""
        return DeltaV1Client(f"{product.url}{UC}", token).load("unity", "default", table["name"])["commits"] == []

    wait_for(published, timeout=60)
    assert product.problems() == []
