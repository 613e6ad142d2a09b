"""Writers racing on one hot table: a proposal of a version taken already is refused (409) without
taking the table row's lock, even while another transaction holds it, and a proposal that waited
for the lock while the version was taken is refused too, with nothing written. Both commit paths,
with and without the backfill report delta-spark sends with every commit."""

import threading
import uuid
from contextlib import contextmanager

import psycopg
import pytest
import urllib3
from django.db import connection

from catalog.models import Table
from commits.models import DeltaCommit
from tests.delta_client import write_staged
from tests.helpers import UC, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture(autouse=True)
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("row locking is tested on PostgreSQL (set DATABASE_URL)")


def other_connection() -> psycopg.Connection:
    settings = connection.settings_dict
    return psycopg.connect(host=settings["HOST"] or "127.0.0.1", port=settings["PORT"] or 5432,
                           user=settings["USER"] or "postgres", password=settings["PASSWORD"] or None,
                           dbname=settings["NAME"])


class Proposer:
    """Sends proposals of a version of one table by either path, each on a thread of its own."""

    def __init__(self, base_url: str, token: str, table_id: str, location: str, name: str):
        self.http = urllib3.PoolManager()
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.base_url, self.table_id, self.location, self.name = base_url, table_id, location, name

    def propose(self, version: int, api: str, backfilled: int | None = None) -> urllib3.BaseHTTPResponse:
        """A proposal of `version`; with `backfilled`, carrying that backfill report as well."""
        file_name = f"{version:020d}.{uuid.uuid4()}.json"
        size = write_staged(self.location, file_name)
        commit = {"version": version, "timestamp": 1700000000000 + version, "file_name": file_name,
                  "file_size": size, "file_modification_timestamp": 1700000000000}
        if api == "v1":
            path = f"{self.base_url}{UC}/delta/v1/catalogs/unity/schemas/default/tables/{self.name}"
            updates = [{"action": "add-commit", "commit": {k.replace("_", "-"): v for k, v in commit.items()}}]
            if backfilled is not None:
                updates.append({"action": "set-latest-backfilled-version", "latest-published-version": backfilled})
            return self.http.request("POST", path, headers=self.headers, json={
                "requirements": [{"type": "assert-table-uuid", "uuid": self.table_id}], "updates": updates})
        body = {"table_id": self.table_id, "table_uri": self.location, "commit_info": commit}
        if backfilled is not None:
            body["latest_backfilled_version"] = backfilled
        return self.http.request("POST", f"{self.base_url}{UC}/delta/commit", headers=self.headers, json=body)

    def in_background(self, version: int, api: str, backfilled: int | None = None) -> tuple[threading.Thread, list]:
        answers = []
        thread = threading.Thread(target=lambda: answers.append(self.propose(version, api, backfilled)), daemon=True)
        thread.start()
        return thread, answers


@pytest.fixture
def hot(delta, live_server, settings):
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 10**9
    created = delta.create_table("unity", "default", "hot")
    proposer = Proposer(live_server.url, delta.token, created.table_id, created.storage_location, "hot")
    assert proposer.propose(1, "legacy").status == 200
    return proposer


def expect_conflict(response, api: str) -> None:
    assert response.status == 409, response.data
    if api == "v1":
        assert response.json()["error"]["type"] == "CommitVersionConflictException", response.data


BACKFILLS = pytest.mark.parametrize("backfilled", [None, 0], ids=["commit", "with-known-backfill"])


@BACKFILLS
@pytest.mark.parametrize("api", ["legacy", "v1"])
def test_a_taken_version_is_refused_while_another_transaction_holds_the_row_lock(hot, api, backfilled):
    with other_connection() as holder:
        holder.execute(f"SELECT 1 FROM {Table._meta.db_table} WHERE id = %s FOR UPDATE", [hot.table_id])
        thread, answers = hot.in_background(1, api, backfilled)
        # A refusal that waited for the lock would wait for this transaction, which stays open.
        thread.join(timeout=120)
        assert not thread.is_alive(), "the stale proposal waited for the row lock"
        holder.rollback()
    expect_conflict(answers[0], api)
    assert DeltaCommit.objects.filter(table_id=hot.table_id).count() == 1


def waiting_for_a_lock() -> bool:
    """a server request to wait for the table row's lock"""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                       "AND datname = current_database()")
        return cursor.fetchone()[0] > 0


@contextmanager
def queued_behind_a_lock(hot, version: int, api: str, backfilled: int | None = None):
    """A proposal of `version`, sent while another transaction (yielded) holds the row's lock,
    once it waits for that lock; then its thread and its answers."""
    with other_connection() as holder:
        holder.execute(f"SELECT 1 FROM {Table._meta.db_table} WHERE id = %s FOR UPDATE", [hot.table_id])
        thread, answers = hot.in_background(version, api, backfilled)
        wait_for(waiting_for_a_lock, timeout=120)
        yield holder, answers
    thread.join(timeout=120)
    assert not thread.is_alive()


@BACKFILLS
@pytest.mark.parametrize("api", ["legacy", "v1"])
def test_a_proposal_that_waited_while_its_version_was_taken_is_refused(hot, api, backfilled):
    with queued_behind_a_lock(hot, 2, api, backfilled) as (winner, answers):
        # Another writer takes version 2 (its row change only) while this proposal of 2 is queued.
        winner.execute(f"UPDATE {Table._meta.db_table} SET latest_version = 2 WHERE id = %s", [hot.table_id])
        winner.commit()
    expect_conflict(answers[0], api)
    assert not DeltaCommit.objects.filter(table_id=hot.table_id, version=2).exists()
    assert Table.objects.get(id=hot.table_id).latest_version == 2


@BACKFILLS
@pytest.mark.parametrize("api", ["legacy", "v1"])
def test_the_next_version_still_waits_for_the_lock_and_wins_after_it(hot, api, backfilled):
    with queued_behind_a_lock(hot, 2, api, backfilled) as (holder, answers):
        assert not answers, "the proposal of the next version waits for the lock"
        holder.rollback()
    assert answers[0].status == 200, answers[0].data
    assert DeltaCommit.objects.filter(table_id=hot.table_id, version=2).exists()


def test_a_taken_version_with_a_backfill_above_the_latest_gets_the_locked_paths_answer(hot):
    """The report is checked before the version under the lock: 400, whichever path answers, and
    the table is as it was."""
    before = Table.objects.get(id=hot.table_id)
    answer = hot.propose(1, "legacy", backfilled=5)
    assert answer.status == 400, answer.data
    assert "above the latest version" in answer.json()["message"], answer.data
    after = Table.objects.get(id=hot.table_id)
    assert (after.latest_version, after.latest_published_version) == (before.latest_version,
                                                                      before.latest_published_version)
    assert DeltaCommit.objects.filter(table_id=hot.table_id).count() == 1


def test_a_taken_version_with_a_new_backfill_report_is_refused_under_the_lock(hot):
    """/delta/v1: a report of a version not yet known published may make the server publish, so
    it is taken under the lock, where the taken version is refused after it: 409, and the
    published version moved by the report stays as the lock's transaction left it (rolled back)."""
    assert hot.propose(2, "v1").status == 200
    before = Table.objects.get(id=hot.table_id)
    assert before.latest_published_version < 2
    answer = hot.propose(2, "v1", backfilled=2)
    expect_conflict(answer, "v1")
    after = Table.objects.get(id=hot.table_id)
    assert (after.latest_version, after.latest_published_version) == (2, before.latest_published_version)
    assert DeltaCommit.objects.filter(table_id=hot.table_id).count() == 2
