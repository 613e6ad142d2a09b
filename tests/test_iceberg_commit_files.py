"""A commit's metadata file is written while its rows are sent to the database (commits.iceberg
.FileWrites): the commit still answers only once its file is there, and a file that cannot be
written leaves every table of the commit as it was, audited as a failure."""

from __future__ import annotations

import threading

import pytest

from catalog.models import AuditEvent
from catalog.storage import StorageError, storage_for
from catalog.storage.local import LocalStorage
from commits import iceberg as iceberg_commits
from commits.models import IcebergMetadata

pytestmark = pytest.mark.django_db(transaction=True)
ICEBERG = "/api/catalog/v1/unity"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


@pytest.fixture
def tables(admin_client, storage_root):
    """Iceberg tables unity.default.a and unity.default.b: their uuids by name."""
    uuids = {}
    for name in ("a", "b"):
        response = admin_client.post(f"{ICEBERG}/namespaces/default/tables", {"name": name, "schema": SCHEMA},
                                     format="json")
        assert response.status_code == 200, response.content
        uuids[name] = response.json()["metadata"]["table-uuid"]
    return uuids


def _change(uuids, name, value):
    return {"requirements": [{"type": "assert-table-uuid", "uuid": uuids[name]}],
            "updates": [{"action": "set-properties", "updates": {"k": value}}]}


def _locations():
    return {row.table.name: row.metadata_location for row in IcebergMetadata.objects.select_related("table")}


def test_the_answer_waits_for_the_file(admin_client, tables, monkeypatch):
    """The file is written on another thread, slower than the statement: the commit answers once
    it is there, and names it."""
    put = LocalStorage.put_if_absent
    threads = []

    def slow_put(self, url, data):
        threads.append(threading.current_thread())
        threading.Event().wait(0.3)
        return put(self, url, data)

    monkeypatch.setattr(LocalStorage, "put_if_absent", slow_put)
    response = admin_client.post(f"{ICEBERG}/namespaces/default/tables/a", _change(tables, "a", "1"), format="json")
    assert response.status_code == 200, response.content
    location = response.json()["metadata-location"]
    assert storage_for(location).exists(location)
    assert _locations()["a"] == location
    assert threads and threads[0] is not threading.current_thread()


def test_a_file_that_cannot_be_written_changes_nothing(admin_client, tables, monkeypatch):
    before = _locations()
    events = AuditEvent.objects.filter(action="commitIcebergTable")
    succeeded = events.exclude(outcome="FAILED").count()
    put = LocalStorage.put_if_absent
    folder_of_b = IcebergMetadata.objects.get(table__name="b").table.storage_location.rstrip("/") + "/"

    def failing_put(self, url, data):
        if url.startswith(folder_of_b):
            raise StorageError("disk full")
        return put(self, url, data)

    monkeypatch.setattr(LocalStorage, "put_if_absent", failing_put)
    response = admin_client.post(f"{ICEBERG}/namespaces/default/tables/b", _change(tables, "b", "1"), format="json")
    assert response.status_code == 400, response.content
    assert "disk full" in response.json()["error"]["message"]
    # In a transaction of two tables, the one whose file was written is not changed either.
    response = admin_client.post(f"{ICEBERG}/transactions/commit", {"table-changes": [
        {"identifier": {"namespace": ["default"], "name": name}, **_change(tables, name, "2")} for name in ("a", "b")]},
        format="json")
    assert response.status_code == 400, response.content
    assert _locations() == before
    assert events.exclude(outcome="FAILED").count() == succeeded
    assert events.filter(outcome="FAILED").count() == 2  # both attempts are audited, as failures


def test_writes_past_the_bound_are_written_by_the_commit(admin_client, tables, monkeypatch):
    """With every writer thread taken, a commit writes its own file, and lands the same."""
    monkeypatch.setattr(iceberg_commits, "_in_flight", threading.BoundedSemaphore(1))
    assert iceberg_commits._in_flight.acquire(blocking=False)
    response = admin_client.post(f"{ICEBERG}/namespaces/default/tables/a", _change(tables, "a", "3"), format="json")
    assert response.status_code == 200, response.content
    location = response.json()["metadata-location"]
    assert storage_for(location).exists(location) and _locations()["a"] == location
