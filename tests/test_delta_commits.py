"""Catalog-managed Delta tables (seed 000): staging, creation from a real 0.json, ratification,
publication, reads, metrics, and every error row of the spec."""

import json
import uuid
from unittest import mock

import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from unitycatalog.client.exceptions import ApiException, BadRequestException, NotFoundException
from unitycatalog.client.models import DeltaCommitInfo

from catalog.models import AuditEvent, Catalog, Column, Schema, StagingTable, Table
from catalog.storage import join, storage_for
from commits.models import CommitReport, DeltaCommit
from tests.delta_client import encode, log_name, metadata_action, protocol_action, write_staged
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def table(delta):
    created = delta.create_table("unity", "default", "events")
    return created.table_id, created.storage_location


def state(table_id):
    row = Table.objects.get(id=table_id)
    return row.latest_version, row.latest_published_version, DeltaCommit.objects.filter(table=row).count()


def post_commit(client, body):
    return client.post(f"{UC}/delta/commit", body, format="json")


def commit_body(table_id, location, version, file_name=None, *, stage=True, **extra):
    """A commit proposal; with `stage`, its staged file is written first (1024 bytes)."""
    file_name = file_name or f"{version:020d}.{uuid.uuid4()}.json"
    if stage:
        write_staged(location, file_name, size=1024)
    body = {
        "table_id": table_id,
        "table_uri": location,
        "commit_info": {
            "version": version,
            "timestamp": 1704067200000 + version,
            "file_name": file_name,
            "file_size": 1024,
            "file_modification_timestamp": 1704067200000 + version,
        },
    }
    body.update(extra)
    return body


# -- creation ---------------------------------------------------------------------------------------
def test_staging_then_create_reads_version_zero(delta, storage_root):
    staging = delta.stage("unity", "default", "events")
    assert staging.staging_location.startswith(storage_root.as_uri())
    assert staging.staging_location.endswith(f"/tables/{staging.id}")
    delta.write_version_zero(staging.staging_location, staging.id)
    table = delta.finalize("unity", "default", "events", staging.staging_location)
    assert table.table_id == staging.id
    assert table.table_type == "MANAGED" and table.data_source_format == "DELTA"
    assert [(c.name, c.type_name, c.type_text, c.nullable) for c in table.columns] == [
        ("id", "LONG", "bigint", False), ("city", "STRING", "string", True)]
    assert state(table.table_id) == (0, 0, 0)
    response = delta.get_commits(table.table_id, table.storage_location)
    assert response.commits == [] and response.latest_table_version == 0
    assert StagingTable.objects.get(id=staging.id).finalized_at is not None


def test_staging_table_can_be_finalized_once(delta):
    staging = delta.stage("unity", "default", "events")
    delta.write_version_zero(staging.staging_location, staging.id)
    delta.finalize("unity", "default", "events", staging.staging_location)
    with pytest.raises(BadRequestException):
        delta.finalize("unity", "default", "events", staging.staging_location)
    assert Table.objects.filter(name="events").count() == 1


def test_staging_errors(delta, admin_client, make_client):
    response = admin_client.post(f"{UC}/staging-tables", {"name": "t", "catalog_name": "nope", "schema_name": "default"}, format="json")
    assert response.status_code == 404 and response.json()["error_code"] == "CATALOG_DOES_NOT_EXIST"
    response = admin_client.post(f"{UC}/staging-tables", {"name": "t", "catalog_name": "unity", "schema_name": "nope"}, format="json")
    assert response.status_code == 404 and response.json()["error_code"] == "SCHEMA_DOES_NOT_EXIST"
    delta.create_table("unity", "default", "events")
    response = admin_client.post(f"{UC}/staging-tables", {"name": "events", "catalog_name": "unity", "schema_name": "default"}, format="json")
    assert response.status_code == 400 and response.json()["error_code"] == "TABLE_ALREADY_EXISTS"
    # mallory holds nothing: catalog unity does not exist for her (no existence oracle) ...
    response = make_client("mallory").post(f"{UC}/staging-tables", {"name": "t", "catalog_name": "unity", "schema_name": "default"}, format="json")
    assert response.status_code == 404 and response.json()["error_code"] == "CATALOG_DOES_NOT_EXIST"
    # ... and once she sees the schema, creating in it still needs CREATE TABLE.
    admin_client.patch(f"{UC}/permissions/catalog/unity", {"changes": [
        {"principal": "mallory", "add": ["USE CATALOG", "USE SCHEMA"]}]}, format="json")
    response = make_client("mallory").post(f"{UC}/staging-tables", {"name": "t", "catalog_name": "unity", "schema_name": "default"}, format="json")
    assert response.status_code == 403 and response.json()["error_code"] == "PERMISSION_DENIED"
    assert StagingTable.objects.count() == 1


BAD_VERSION_ZERO = {
    "no catalogManaged": (lambda tid: [protocol_action(readerFeatures=["vacuumProtocolCheck"], writerFeatures=["inCommitTimestamp", "vacuumProtocolCheck"]), metadata_action(tid)], "catalogManaged"),
    "no inCommitTimestamp": (lambda tid: [protocol_action(writerFeatures=["catalogManaged", "vacuumProtocolCheck"]), metadata_action(tid)], "inCommitTimestamp"),
    "no vacuumProtocolCheck": (lambda tid: [protocol_action(readerFeatures=["catalogManaged"], writerFeatures=["catalogManaged", "inCommitTimestamp"]), metadata_action(tid)], "vacuumProtocolCheck"),
    "reader 2": (lambda tid: [protocol_action(minReaderVersion=2), metadata_action(tid)], "minReaderVersion"),
    "writer 6": (lambda tid: [protocol_action(minWriterVersion=6), metadata_action(tid)], "minWriterVersion"),
    "other table id": (lambda tid: [protocol_action(), metadata_action(str(uuid.uuid4()))], "io.unitycatalog.tableId"),
    "no protocol": (lambda tid: [metadata_action(tid)], "protocol"),
}


@pytest.mark.parametrize("case", sorted(BAD_VERSION_ZERO))
def test_create_rejects_a_version_zero_that_is_not_catalog_managed(delta, case):
    build, named = BAD_VERSION_ZERO[case]
    staging = delta.stage("unity", "default", "events")
    delta.write_version_zero(staging.staging_location, staging.id, actions=build(staging.id))
    with pytest.raises(BadRequestException) as error:
        delta.finalize("unity", "default", "events", staging.staging_location)
    body = json.loads(error.value.body)
    assert body["error_code"] == "INVALID_PARAMETER_VALUE" and named in body["message"]
    assert not Table.objects.filter(name="events").exists()
    assert StagingTable.objects.get(id=staging.id).finalized_at is None


def test_create_without_version_zero_or_staging(delta, admin_client):
    staging = delta.stage("unity", "default", "events")
    with pytest.raises(BadRequestException) as error:
        delta.finalize("unity", "default", "events", staging.staging_location)
    assert "Not a Delta table" in json.loads(error.value.body)["message"]
    with pytest.raises(NotFoundException) as missing:
        delta.finalize("unity", "default", "events", staging.staging_location + "-elsewhere")
    assert json.loads(missing.value.body)["error_code"] == "TABLE_DOES_NOT_EXIST"
    assert not Table.objects.exists()


def test_only_the_creator_of_a_staging_table_finalizes_it(delta, make_client):
    from catalog.services import grants
    from catalog.models import Catalog, Principal

    staging = delta.stage("unity", "default", "events")
    delta.write_version_zero(staging.staging_location, staging.id)
    client = make_client("bob")
    catalog = Catalog.objects.get(name="unity")
    schema = catalog.schemas.get(name="default")
    admin = Principal.objects.get(name="admin")
    grants.update_assignments(securable_type="catalog", securable=catalog, caller=admin, access=None,
                              changes=[{"principal": "bob", "add": ["USE CATALOG"], "remove": []}])
    grants.update_assignments(securable_type="schema", securable=schema, caller=admin, access=None,
                              changes=[{"principal": "bob", "add": ["USE SCHEMA", "CREATE TABLE"], "remove": []}])
    response = client.post(f"{UC}/tables", {
        "name": "events", "catalog_name": "unity", "schema_name": "default", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": staging.staging_location, "columns": []}, format="json")
    assert response.status_code == 403, response.content
    assert not Table.objects.exists()


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
    monkeypatch.setattr("maintenance.tasks.enqueue", lambda task, *args: sent.append((task.name, args)))
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


# -- every error row of "Write a Commit" -----------------------------------------------------------------
def _bad_commits(table_id, location, *, stage=False):
    ok = commit_body(table_id, location, 1, stage=stage)
    no_info = {k: v for k, v in ok.items() if k != "commit_info"}
    def info(**changes):
        return {**ok, "commit_info": {**ok["commit_info"], **changes}}
    return {
        "missing table_id": ({**ok, "table_id": None}, 400, "INVALID_PARAMETER_VALUE"),
        "table_id not a uuid": ({**ok, "table_id": "nope"}, 400, "INVALID_PARAMETER_VALUE"),
        "unknown table": ({**ok, "table_id": str(uuid.uuid4())}, 404, "TABLE_DOES_NOT_EXIST"),
        "missing table_uri": ({**ok, "table_uri": None}, 400, "INVALID_PARAMETER_VALUE"),
        "other table_uri": ({**ok, "table_uri": location + "x"}, 400, "INVALID_PARAMETER_VALUE"),
        "nothing to do": (no_info, 400, "INVALID_PARAMETER_VALUE"),
        "version 0": (info(version=0), 400, "INVALID_PARAMETER_VALUE"),
        "negative version": (info(version=-1), 400, "INVALID_PARAMETER_VALUE"),
        "version as text": (info(version="one"), 400, "INVALID_PARAMETER_VALUE"),
        "gap": (info(version=3), 400, "INVALID_PARAMETER_VALUE"),
        "timestamp 0": (info(timestamp=0), 400, "INVALID_PARAMETER_VALUE"),
        "no file name": (info(file_name=""), 400, "INVALID_PARAMETER_VALUE"),
        "file name is a path": (info(file_name="../../x.json"), 400, "INVALID_PARAMETER_VALUE"),
        "size 0": (info(file_size=0), 400, "INVALID_PARAMETER_VALUE"),
        "mtime 0": (info(file_modification_timestamp=0), 400, "INVALID_PARAMETER_VALUE"),
        "published above latest": ({**no_info, "latest_published_version": 5}, 400, "INVALID_PARAMETER_VALUE"),
        "backfill with metadata": ({**no_info, "latest_published_version": 0, "metadata": {"description": "x"}}, 400, "INVALID_PARAMETER_VALUE"),
        "schema not an array": ({**ok, "metadata": {"schema": "id long"}}, 400, "INVALID_PARAMETER_VALUE"),
        "properties not strings": ({**ok, "metadata": {"properties": {"a": 1}}}, 400, "INVALID_PARAMETER_VALUE"),
        "uniform without location": ({**ok, "uniform": {"iceberg": {"converted_delta_version": 1}}}, 400, "INVALID_PARAMETER_VALUE"),
        "body is a list": ([ok], 400, "INVALID_PARAMETER_VALUE"),
    }


@pytest.mark.parametrize("case", sorted(_bad_commits("t", "l")))
def test_write_commit_errors_change_nothing(table, admin_client, case):
    table_id, location = table
    body, status, code = _bad_commits(table_id, location, stage=True)[case]
    before = (state(table_id), AuditEvent.objects.filter(action="commitDelta").count())
    response = post_commit(admin_client, body)
    assert response.status_code == status, response.content
    assert response.json()["error_code"] == code
    assert (state(table_id), AuditEvent.objects.filter(action="commitDelta").count()) == before


def test_write_commit_needs_modify(table, make_client):
    from catalog.models import Catalog, Principal
    from catalog.services import grants

    table_id, location = table
    admin = Principal.objects.get(name="admin")
    reader = make_client("reader")
    catalog = Catalog.objects.get(name="unity")
    grants.update_assignments(securable_type="catalog", securable=catalog, caller=admin, access=None,
                              changes=[{"principal": "reader", "add": ["USE CATALOG", "USE SCHEMA", "SELECT"], "remove": []}])
    response = post_commit(reader, commit_body(table_id, location, 1))
    assert response.status_code == 403 and response.json()["error_code"] == "PERMISSION_DENIED"
    assert reader.get(f"{UC}/delta/commits", {"table_id": table_id, "table_uri": location}).status_code == 200
    assert state(table_id) == (0, 0, 0)


# -- get commits errors --------------------------------------------------------------------------------
def test_get_commits_errors(table, admin_client, make_client):
    table_id, location = table
    get = lambda **params: admin_client.get(f"{UC}/delta/commits", params)  # noqa: E731
    assert get(table_id=table_id, table_uri=location, start_version=-1).status_code == 400
    assert get(table_id=table_id, table_uri=location, start_version=3, end_version=2).status_code == 400
    assert get(table_uri=location).status_code == 400
    assert get(table_id=str(uuid.uuid4()), table_uri=location).json()["error_code"] == "TABLE_DOES_NOT_EXIST"
    assert get(table_id=table_id, table_uri="file:///elsewhere").status_code == 400
    # A table the caller may not see answers as a missing one (no existence oracle).
    assert make_client("nobody").get(f"{UC}/delta/commits", {"table_id": table_id, "table_uri": location}).status_code == 404


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


# -- metrics ---------------------------------------------------------------------------------------------
def test_metrics_are_stored_and_validated(delta, table, admin_client):
    table_id, location = table
    delta.append(table_id, location, 1, "p1.parquet")
    report = {"commit_version": 1, "num_files_added": 10, "num_bytes_added": 1000, "num_rows_inserted": 5,
              "file_size_histogram": {"sorted_bin_boundaries": [0, 1024, 2048], "file_counts": [100, 40, 5],
                                      "total_bytes": [10, 20, 30]}}
    body = {"table_id": table_id, "table_uri": location, "report": {"commit_report": report}}
    assert admin_client.post(f"{UC}/delta/metrics", body, format="json").status_code == 200
    stored = CommitReport.objects.get(table_id=table_id)
    assert stored.commit_version == 1 and stored.num_rows_inserted == 5
    assert stored.file_size_histogram["file_counts"] == [100, 40, 5]
    bad = {
        "unequal lengths": {**report, "file_size_histogram": {**report["file_size_histogram"], "file_counts": [1]}},
        "first boundary": {**report, "file_size_histogram": {**report["file_size_histogram"], "sorted_bin_boundaries": [1, 2, 3]}},
        "negative count": {**report, "file_size_histogram": {**report["file_size_histogram"], "file_counts": [1, -1, 1]}},
        "negative files": {**report, "num_files_added": -3},
        "no version": {k: v for k, v in report.items() if k != "commit_version"},
        "future version": {**report, "commit_version": 9},
    }
    for name, commit_report in bad.items():
        body = {"table_id": table_id, "table_uri": location, "report": {"commit_report": commit_report}}
        response = admin_client.post(f"{UC}/delta/metrics", body, format="json")
        assert response.status_code == 400, name
    assert CommitReport.objects.count() == 1


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


# -- the hot path's hand-written SQL is the ORM's -------------------------------------------------------
def _fields_of(row):
    return {field.attname: getattr(row, field.attname) for field in row._meta.concrete_fields}


def test_the_table_row_reads_as_the_orm_reads_it(delta, table, bootstrap):
    """commits.rows reads tables and columns with SQL written once; the instances hold what the
    ORM's own queries give (conversions included), and a grantee's privileges come with the row."""
    from django.db.models import prefetch_related_objects

    from catalog import authz
    from catalog.models import Grant, Principal
    from commits import rows

    orm = Table.objects.select_related("schema__catalog").get(id=table[0])
    orm.comment, orm.properties, orm.uniform_iceberg = "c", {"k": "v"}, {"metadata_location": "s3://m"}
    orm.save()
    Column.objects.create(table=orm, name="b", type_text="string", type_json='{"type":"string"}', type_name="STRING",
                          position=11, partition_index=0)
    Column.objects.create(table=orm, name="a", type_text="bigint", type_json='{"type":"long"}', type_name="LONG",
                          position=10, nullable=False)
    admin = Principal.objects.get(name="admin")
    bob = Principal.objects.create(name="bob")
    Grant.objects.create(securable_type="table", securable_id=orm.id, securable_name=orm.full_name,
                         principal="bob", privilege="SELECT")
    for caller, where, params in [(admin, rows.BY_ID, [rows.table_id(orm.id)]),
                                  (bob, rows.by_name(2), ["unity", "nothing", "default", orm.name])]:
        with transaction.atomic():
            [read] = rows.tables(caller, where, params, for_update=True, pending=True)
        assert _fields_of(read) == _fields_of(orm)
        assert _fields_of(read.schema) == _fields_of(orm.schema)
        assert _fields_of(read.schema.catalog) == _fields_of(orm.schema.catalog)
        assert read.schema._stored_path == orm.schema.path
        if connection.vendor == "postgresql":  # the pending commits are a column of PostgreSQL's SQL only
            assert read.pending == []
        assert authz.access_to_read(caller, read).has("SELECT")
        rows.read_columns(read)
        prefetch_related_objects([orm], "columns")
        assert [_fields_of(c) for c in read.columns.all()] == [_fields_of(c) for c in orm.columns.all()]
        assert [c.name for c in read.columns.all()][-2:] == ["a", "b"]
        assert read.columns.filter(position=10).count() == 1
    assert rows.tables(admin, rows.BY_ID, [rows.table_id(uuid.uuid4())]) == []


def test_the_table_row_is_locked_only_in_a_transaction_and_only_by_the_modules_conditions(delta, table, bootstrap):
    from catalog.models import Principal
    from commits import rows

    admin = Principal.objects.get(name="admin")
    params = [rows.table_id(table[0])]
    if connection.features.has_select_for_update:  # as QuerySet.select_for_update in autocommit
        with pytest.raises(TransactionManagementError):
            rows.tables(admin, rows.BY_ID, params, for_update=True)
    assert len(rows.tables(admin, rows.BY_ID, params)) == 1
    for where in (rows.BY_ID.replace("%s", f"'{table[0]}'"), rows.BY_ID + " OR TRUE", rows.by_name(2) + " "):
        with pytest.raises(ValueError):
            rows.tables(admin, where, params)


def test_the_conversions_of_the_table_row_are_the_connections_of_each_query(delta, table, bootstrap):
    """The statement is cached for the process; the converters are asked of the connection that
    runs each query (SQLite's are its methods; each thread has its own connection)."""
    from catalog.models import Principal
    from commits import rows

    admin = Principal.objects.get(name="admin")
    params = [rows.table_id(table[0])]
    rows.read_columns(rows.tables(admin, rows.BY_ID, params)[0])  # the statements are cached now
    asked = []
    ask = connection.ops.get_db_converters

    def recording(expression):
        asked.append(expression)
        return ask(expression)

    with mock.patch.object(connection.ops, "get_db_converters", recording):
        [read] = rows.tables(admin, rows.BY_ID, params)
        rows.read_columns(read)
    converted = [model for model in (Table, Schema, Catalog, Column)
                 if any(connection.ops.get_db_converters(f.get_col(model._meta.db_table)) +
                        f.get_col(model._meta.db_table).get_db_converters(connection)
                        for f in model._meta.concrete_fields)]
    assert {expression.target.model for expression in asked} == set(converted)


def _plain(statement):
    """SQL and parameters, with JSON parameters as the values they wrap (adapters do not compare)."""
    sql, params = statement
    return sql, [getattr(value, "obj", value) for value in params]


def test_the_commit_statement_is_the_orms(table):
    """commits.one_statement writes each part's SQL once per process; it is the SQL, and the
    values are the parameters, that the ORM's insert and update compilers make for the same rows."""
    from django.db import connection
    from django.db.models import Q
    from django.db.models.sql import InsertQuery, UpdateQuery
    from django.utils import timezone

    from catalog.services import audit
    from commits import one_statement

    row = Table.objects.get(id=table[0])
    row.properties, row.comment = {"a": "b"}, "c"  # (None is a NULL parameter where the ORM writes NULL)
    row.uniform_iceberg = {"metadata_location": "s3://x"}
    commit = DeltaCommit(table=row, version=7, timestamp=1, file_name="f.json", file_size=2,
                         file_modification_timestamp=3, file_sha256="ab", ratified_by="me", txn_id=None)
    event = audit.event(principal="me", action="commitDelta", securable_type="table", securable_name="a.b.c",
                        securable_id=row.id, details={"version": 7})
    now = timezone.now()
    for new in (commit, event):
        meta = new._meta
        fields = [f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field]
        query = InsertQuery(type(new))
        query.insert_values(fields, [new])
        with mock.patch("django.utils.timezone.now", return_value=now):  # the same auto_now_add
            ours = one_statement._insert(new)
            [(sql, params)] = query.get_compiler(connection=connection).as_sql()
        assert _plain(ours) == _plain((sql, params))
    names = ["latest_version", "updated_at", "updated_by", "properties", "uniform_iceberg", "comment"]
    query = UpdateQuery(Table)
    query.add_update_fields([(Table._meta.get_field(name), None, Table._meta.get_field(name).pre_save(row, False))
                             for name in sorted(names)])
    query.add_q(Q(pk=row.pk))
    sql, params = query.get_compiler(connection=connection).as_sql()
    assert _plain(one_statement._update(row, names)) == _plain((sql, params))
