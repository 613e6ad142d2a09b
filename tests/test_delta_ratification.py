"""Commits to catalog-managed Delta tables (seed 000): ratification, publication, reads, the
bound on unpublished commits, metadata and UniForm changes, the purge on drop, the whole
protocol on S3, the maintenance operations reserved to the catalog, and commit retention."""

import json

import pytest
from unitycatalog.client.exceptions import ApiException
from unitycatalog.client.models import DeltaCommitInfo

from catalog.models import Column, Table
from catalog.storage import join, storage_for
from commits.models import DeltaCommit
from tests.delta_client import encode, log_name
from tests.delta_commit_support import commit_body, post_commit, state
from tests.delta_commit_support import table  # noqa: F401 - the fixture
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)


# -- ratify, publish, read ------------------------------------------------------------------------------
def test_write_publish_and_read(delta, table):
    table_id, location = table
    for version in range(1, 6):
        delta.append(table_id, location, version, f"part-{version}.parquet", publish=version <= 3)
    assert state(table_id) == (5, 3, 5)
    latest, files = delta.snapshot(table_id, location)
    assert latest == 5 and files == [f"part-{v}.parquet" for v in range(1, 6)]
    response = delta.get_commits(table_id, location, start=2, end=3)
    assert sorted(c.version for c in response.commits) == [2, 3] and response.latest_table_version == 5
    one = delta.get_commits(table_id, location, start=4, end=4)
    assert [c.version for c in one.commits] == [4]
    published = DeltaCommit.objects.filter(table_id=table_id, published_at__isnull=False).count()
    assert published == 3


def test_idempotent_retry_and_conflict(delta, table):
    table_id, location = table
    info = delta.stage_commit(location, 1, "a.parquet")
    delta.ratify(table_id, location, info)
    delta.ratify(table_id, location, info)  # a retry of the same proposal is answered 200
    other = delta.stage_commit(location, 1, "b.parquet")
    with pytest.raises(ApiException) as conflict:
        delta.ratify(table_id, location, other)
    assert conflict.value.status == 409 and json.loads(conflict.value.body)["error_code"] == "ALREADY_EXISTS"
    assert state(table_id) == (1, 0, 1)
    assert DeltaCommit.objects.get(table_id=table_id, version=1).file_name == info.file_name


@pytest.fixture
def no_worker(monkeypatch):
    """Tasks are sent to a broker no worker reads: nothing publishes for the client."""
    sent = []
    monkeypatch.setattr("maintenance.nudges.enqueue", lambda task_name, *args: sent.append((task_name, args)))
    return sent


def test_unpublished_commits_are_bounded(delta, table, settings, no_worker):
    """At the bound the server publishes the oldest commits itself (commits.publication); the 429
    remains for a table whose unpublished commits cannot be published: staged files gone."""
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 3
    table_id, location = table
    infos = [delta.append(table_id, location, v, f"p{v}.parquet", publish=False) for v in (1, 2, 3)]
    staged = {}
    for info in infos:
        url = join(location, "_delta_log", "_staged_commits", info.file_name)
        staged[url] = storage_for(url).read(url)
        storage_for(url).delete(url)
    with pytest.raises(ApiException) as exhausted:
        delta.append(table_id, location, 4, "p4.parquet", publish=False)
    assert exhausted.value.status == 429
    assert json.loads(exhausted.value.body)["error_code"] == "RESOURCE_EXHAUSTED"
    # From half the bound on, every ratification asked for publish-verify of this table.
    assert no_worker == [("maintenance.publish_verify_table", (table_id,))] * 3
    assert state(table_id) == (3, 0, 3)
    for url, data in staged.items():
        storage_for(url).put(url, data)
    for info in infos:
        delta.publish(location, info)
    # Backfill and the next commit in one request.
    info = delta.stage_commit(location, 4, "p4.parquet")
    delta.ratify(table_id, location, info, latest_backfilled_version=3)
    assert state(table_id) == (4, 3, 4)


def test_metadata_and_uniform_change_the_catalog_view(delta, table, admin_client):
    table_id, location = table
    properties = dict(Table.objects.get(id=table_id).properties)
    properties.update({"io.unitycatalog.tableId": table_id, "delta.enableInCommitTimestamps": "true", "team": "geo"})
    body = commit_body(table_id, location, 1, metadata={
        "description": "city events",
        "schema": [{"name": "id", "type": "long", "nullable": False}, {"name": "city", "type": "string"},
                   {"name": "at", "type": "timestamp", "nullable": False}],
        "properties": {"properties": properties},
    }, uniform={"iceberg": {"metadata_location": location + "/metadata/00001.metadata.json",
                            "converted_delta_version": 1, "converted_delta_timestamp": "2026-02-09T17:00:00.000000Z"}})
    response = post_commit(admin_client, body)
    assert response.status_code == 200, response.content
    info = admin_client.get(f"{UC}/tables/unity.default.events").json()
    assert info["comment"] == "city events" and info["properties"]["team"] == "geo"
    assert [(c["name"], c["type_name"]) for c in info["columns"]] == [("id", "LONG"), ("city", "STRING"), ("at", "TIMESTAMP")]
    assert Table.objects.get(id=table_id).uniform_iceberg["converted_delta_version"] == 1

    # The SDK's shape: schema as {columns: [ColumnInfo]}.
    body = commit_body(table_id, location, 2, metadata={"schema": {"columns": [
        {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "nullable": False}]}})
    assert post_commit(admin_client, body).status_code == 200
    assert list(Column.objects.filter(table_id=table_id).values_list("name", flat=True)) == ["id"]


def test_required_properties_cannot_be_removed(delta, table, admin_client):
    table_id, location = table
    table_row = Table.objects.get(id=table_id)
    table_row.properties = {"io.unitycatalog.tableId": table_id, "delta.enableInCommitTimestamps": "true"}
    table_row.save()
    body = commit_body(table_id, location, 1, metadata={"properties": {"team": "geo"}})
    response = post_commit(admin_client, body)
    assert response.status_code == 400 and "io.unitycatalog.tableId" in response.json()["message"]
    assert state(table_id) == (0, 0, 0)
    assert Table.objects.get(id=table_id).properties.get("team") is None


# -- reading commits ---------------------------------------------------------------------------------
def test_get_commits_on_a_table_the_catalog_does_not_manage(admin_client, bootstrap, tmp_path):
    response = admin_client.post(f"{UC}/tables", {
        "name": "ext", "catalog_name": "unity", "schema_name": "default", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": tmp_path.as_uri(), "columns": []}, format="json")
    table_id = response.json()["table_id"]
    body = admin_client.get(f"{UC}/delta/preview/commits", {"table_id": table_id, "table_uri": tmp_path.as_uri()}).json()
    assert body == {"commits": [], "latest_table_version": -1}


def test_get_commits_pages(delta, table, settings):
    settings.UCWEB_DELTA_COMMITS_PAGE_SIZE = 4
    table_id, location = table
    for version in range(1, 10):
        delta.append(table_id, location, version, f"p{version}.parquet")
    seen, start = [], 0
    while True:
        page = delta.get_commits(table_id, location, start=start)
        versions = sorted(c.version for c in page.commits)
        seen += versions
        if not versions or versions[-1] >= page.latest_table_version:
            break
        start = versions[-1] + 1
    assert seen == list(range(1, 10))


# -- drop ------------------------------------------------------------------------------------------------
def test_dropping_a_managed_table_purges_its_files(delta, table, admin_client):
    table_id, location = table
    delta.append(table_id, location, 1, "p1.parquet")
    storage = storage_for(location)
    assert storage.list(location)
    assert admin_client.delete(f"{UC}/tables/unity.default.events").status_code == 200
    assert not Table.objects.filter(id=table_id).exists() and not DeltaCommit.objects.filter(table_id=table_id).exists()
    assert storage.list(location) == []


def test_version_zero_file_name_helper():
    assert log_name(7) == "00000000000000000007.json"
    assert encode([{"a": 1}]) == b'{"a": 1}\n'
    assert isinstance(DeltaCommitInfo(version=1, timestamp=1, file_name="x", file_size=1, file_modification_timestamp=1), DeltaCommitInfo)
    assert join("file:///a", "b") == "file:///a/b"


@pytest.mark.s3
def test_the_whole_protocol_on_s3(delta_s3, s3_storage_root, admin_client):
    created = delta_s3.create_table("unity", "default", "events")
    table_id, location = created.table_id, created.storage_location
    assert location.startswith(s3_storage_root + "/tables/")
    for version in range(1, 5):
        delta_s3.append(table_id, location, version, f"part-{version}.parquet", publish=version != 4)
    stale = delta_s3.stage_commit(location, 4, "loser.parquet")
    with pytest.raises(ApiException) as conflict:
        delta_s3.ratify(table_id, location, stale)
    assert conflict.value.status == 409
    latest, files = delta_s3.snapshot(table_id, location)
    assert latest == 4 and files == [f"part-{v}.parquet" for v in range(1, 5)]
    assert state(table_id) == (4, 3, 4)
    assert admin_client.delete(f"{UC}/tables/unity.default.events").status_code == 200
    assert storage_for(location).list(location) == []


# -- maintenance policy ---------------------------------------------------------------------------------
@pytest.mark.parametrize("operation", ["OPTIMIZE", "VACUUM START", "VACUUM END", "REORG"])
def test_maintenance_operations_are_the_catalogs(delta, table, operation):
    table_id, location = table
    info = delta.stage_commit(location, 1, "compacted.parquet", operation=operation)
    with pytest.raises(ApiException) as refused:
        delta.ratify(table_id, location, info)
    body = json.loads(refused.value.body)
    assert refused.value.status == 403 and body["error_code"] == "PERMISSION_DENIED"
    assert "ucweb.maintenance.client-operations" in body["message"]
    assert state(table_id) == (0, 0, 0)


def test_clients_may_write_checkpoint_and_ordinary_commits(delta, table):
    table_id, location = table
    for version, operation in enumerate(["WRITE", "MERGE", "DELETE", "CREATE TABLE AS SELECT"], start=1):
        delta.ratify(table_id, location, delta.stage_commit(location, version, f"p{version}.parquet", operation=operation))
    assert state(table_id)[0] == 4


@pytest.mark.parametrize("where", ["table", "schema"])
def test_a_policy_property_lets_clients_optimize(delta, table, where):
    from catalog.models import Schema

    table_id, location = table
    row = Table.objects.get(id=table_id) if where == "table" else Schema.objects.get(catalog__name="unity", name="default")
    row.properties = {**row.properties, "ucweb.maintenance.client-operations": "OPTIMIZE, VACUUM"}
    row.save()
    delta.ratify(table_id, location, delta.stage_commit(location, 1, "c.parquet", operation="OPTIMIZE"))
    delta.ratify(table_id, location, delta.stage_commit(location, 2, "v.parquet", operation="VACUUM END"))
    with pytest.raises(ApiException) as refused:
        delta.ratify(table_id, location, delta.stage_commit(location, 3, "r.parquet", operation="REORG"))
    assert refused.value.status == 403
    assert state(table_id)[0] == 2


def test_publish_verify_keeps_a_client_that_never_publishes_under_the_bound(delta, table, settings):
    """With tasks running (inline here; a worker in test_workers), a client that ratifies and
    never publishes is never refused: publish-verify publishes for it from half the bound on."""
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 4
    table_id, location = table
    for version in range(1, 13):
        delta.append(table_id, location, version, f"p{version}.parquet", publish=False)
    latest, published, _ = state(table_id)
    assert latest == 12 and published >= 12 - 4
    assert delta.snapshot(table_id, location) == (12, sorted(f"p{v}.parquet" for v in range(1, 13)))


def test_commit_history_retention(delta, table, settings):
    """By default every ratified commit is kept; UCWEB_DELTA_COMMIT_RETENTION keeps that many
    published ones (and every unpublished one)."""
    table_id, location = table
    for version in range(1, 6):
        delta.append(table_id, location, version, f"p{version}.parquet")
    assert DeltaCommit.objects.filter(table_id=table_id).count() == 5
    settings.UCWEB_DELTA_COMMIT_RETENTION = 2
    for version in range(6, 9):
        delta.append(table_id, location, version, f"p{version}.parquet", publish=version < 8)
    kept = sorted(DeltaCommit.objects.filter(table_id=table_id).values_list("version", flat=True))
    assert kept == [6, 7, 8]  # published 7 - 2 = 5 and below trimmed; unpublished 8 kept
    assert delta.snapshot(table_id, location) == (8, sorted(f"p{v}.parquet" for v in range(1, 9)))
