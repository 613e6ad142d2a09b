"""The UC Delta REST API (`/delta/v1`, managed tables spec 1.0): the protocol end to end over HTTP
(configuration, staging, creation, loading, commits, etags, UniForm), the one ratification shared
with the legacy `/delta/preview/commits` path, the bound on unbackfilled commits with server-side
publication, backfill reports and the commit retention, the maintenance policy, and the whole
protocol on S3."""

import uuid

import pytest

from catalog.models import Table
from catalog.storage import join, storage_for
from commits.models import DeltaCommit
from tests.delta_client import log_name
from tests.delta_v1_client import DeltaV1Client, DeltaV1Error
from tests.delta_v1_support import TABLES, V1, error_of, state
from tests.delta_v1_support import table, v1  # noqa: F401 - the fixtures
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def no_worker(monkeypatch):
    """Tasks go to a broker no worker reads: nothing publishes for the client."""
    sent = []
    monkeypatch.setattr("maintenance.nudges.enqueue", lambda task_name, *args: sent.append((task_name, args)))
    return sent


# -- configuration, creation, loading ------------------------------------------------------------------
def test_config_negotiates_version_1_0(v1, admin_client):
    config = v1.call("GET", "config?catalog=unity&protocol-versions=1.3,2.1")
    assert config["protocol-version"] == "1.0"
    assert "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}" in config["endpoints"]
    assert "GET /v1/staging-tables/{table_id}/credentials" in config["endpoints"]
    for query, status, kind in [
        ("protocol-versions=1.0", 400, "InvalidParameterValueException"),
        ("catalog=unity", 400, "InvalidParameterValueException"),
        ("catalog=unity&protocol-versions=2.0", 400, "InvalidParameterValueException"),
        ("catalog=unity&protocol-versions=one", 400, "InvalidParameterValueException"),
        ("catalog=nope&protocol-versions=1.0", 404, "NoSuchCatalogException"),
    ]:
        response = admin_client.get(f"{V1}/config?{query}")
        assert response.status_code == status and error_of(response) == kind, query
    assert "1.0" in admin_client.get(f"{V1}/config?catalog=unity&protocol-versions=2.0").json()["error"]["message"]


def test_staging_create_and_load(v1, storage_root):
    staging = v1.call("POST", "catalogs/unity/schemas/default/staging-tables", {"name": "events"})
    assert staging["table-type"] == "MANAGED" and staging["location"].startswith(storage_root.as_uri())
    assert "catalogManaged" in staging["required-protocol"]["reader-features"]
    assert staging["required-properties"]["io.unitycatalog.tableId"] == staging["table-id"]
    [credential] = staging["storage-credentials"]
    assert credential["prefix"] == staging["location"] and credential["operation"] == "READ_WRITE"
    refreshed = v1.call("GET", f"staging-tables/{staging['table-id']}/credentials")
    assert refreshed["storage-credentials"][0]["prefix"] == staging["location"]

    loaded = v1.create_table("unity", "default", "events2")
    metadata = loaded["metadata"]
    assert metadata["table-type"] == "MANAGED" and loaded["latest-table-version"] == 0 and loaded["commits"] == []
    assert metadata["columns"]["fields"][0] == {"name": "id", "type": "long", "nullable": False, "metadata": {}}
    properties = metadata["properties"]
    assert properties["delta.feature.catalogManaged"] == "supported"
    assert properties["delta.minReaderVersion"] == "3" and properties["delta.lastUpdateVersion"] == "0"
    assert properties["io.unitycatalog.tableId"] == metadata["table-uuid"]
    row = Table.objects.get(id=metadata["table-uuid"])
    assert (row.latest_version, row.latest_published_version) == (0, 0)  # 0.json was read and checked
    assert v1.load("unity", "default", "events2")["metadata"]["etag"] == metadata["etag"]
    # The legacy UC API lists the same row.
    assert v1.http.request("GET", f"{v1.root[:-len('/delta/v1')]}/tables/unity.default.events2",
                           headers={"Authorization": f"Bearer {v1.token}"}).status == 200


def test_write_publish_backfill_and_read(v1, table):
    first = v1.append(table, 1, "a.parquet")
    etag = v1.load("unity", "default", "events")["metadata"]["etag"]
    second = v1.append(table, 2, "b.parquet", publish=False)
    third = v1.append(table, 3, "c.parquet", publish=False)
    loaded = v1.load("unity", "default", "events")
    assert loaded["latest-table-version"] == 3
    assert [c["version"] for c in loaded["commits"]] == [3, 2]  # unbackfilled only, newest first
    assert [c["file-name"] for c in loaded["commits"]] == [third["file-name"], second["file-name"]]
    assert loaded["metadata"]["etag"] == etag  # data-only commits and backfills leave the etag
    assert v1.snapshot("unity", "default", "events") == (3, ["a.parquet", "b.parquet", "c.parquet"])
    assert first["version"] == 1


def test_one_ratification_for_both_paths(v1, table, delta):
    """A commit ratified through /delta/v1 is listed by the legacy GET commits, and one ratified
    through the legacy path is in loadTable's commits."""
    v1.append(table, 1, "v1.parquet", publish=False)
    legacy = delta.get_commits(table["table-uuid"], table["location"])
    assert legacy.latest_table_version == 1 and [c.version for c in legacy.commits] == [1]
    info = delta.stage_commit(table["location"], 2, "legacy.parquet")
    delta.ratify(table["table-uuid"], table["location"], info)
    loaded = v1.load("unity", "default", "events")
    assert loaded["latest-table-version"] == 2
    assert [c["file-name"] for c in loaded["commits"]][0] == info.file_name
    # The legacy path cannot take version 2 again, and /delta/v1 cannot take it either.
    with pytest.raises(DeltaV1Error) as taken:
        v1.commit(table, v1.stage_commit(table["location"], 2, "late.parquet"))
    assert taken.value.status == 409 and taken.value.type == "CommitVersionConflictException"
    assert v1.snapshot("unity", "default", "events") == (2, ["legacy.parquet", "v1.parquet"])


def test_idempotent_replay_and_taken_version(v1, table):
    commit = v1.stage_commit(table["location"], 1, "a.parquet")
    v1.commit(table, commit)
    before = state(table["table-uuid"])
    replay = v1.commit(table, commit, extra=[{"action": "set-table-comment", "comment": "ignored"}])
    assert replay["latest-table-version"] == 1  # a whole-request no-op: 200, nothing applied
    assert state(table["table-uuid"]) == before
    with pytest.raises(DeltaV1Error) as conflict:
        v1.commit(table, v1.stage_commit(table["location"], 1, "b.parquet"))
    assert conflict.value.status == 409 and conflict.value.type == "CommitVersionConflictException"
    assert state(table["table-uuid"]) == before


def test_a_retry_under_a_new_version_never_ratifies_the_same_data_twice(v1, table):
    """delta-io/delta#7700: after a lost response a client may rebuild and propose the same
    transaction (the same commitInfo.txnId) as the next version. It is refused."""
    txn = str(uuid.uuid4())
    v1.commit(table, v1.stage_commit(table["location"], 1, "a.parquet", txn_id=txn))
    before = state(table["table-uuid"])
    with pytest.raises(DeltaV1Error) as again:
        v1.commit(table, v1.stage_commit(table["location"], 2, "a.parquet", txn_id=txn))
    assert again.value.status == 409 and again.value.type == "CommitVersionConflictException"
    assert txn in again.value.body["error"]["message"]
    assert state(table["table-uuid"]) == before
    assert v1.snapshot("unity", "default", "events") == (1, ["a.parquet"])


def test_etag_moves_only_with_metadata(v1, table):
    etag0 = v1.load("unity", "default", "events")["metadata"]["etag"]
    v1.commit(table, v1.stage_commit(table["location"], 1, "a.parquet"), etag=etag0)
    v1.commit(table, v1.stage_commit(table["location"], 2, "b.parquet"), etag=etag0)  # data only: still E0
    columns = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "city", "type": "string", "nullable": True, "metadata": {"comment": "where"}},
        {"name": "tags", "type": {"type": "array", "element-type": "string", "contains-null": True},
         "nullable": True, "metadata": {}}]}
    changed = v1.commit(table, v1.stage_commit(table["location"], 3, "c.parquet"), etag=etag0, extra=[
        {"action": "set-columns", "columns": columns},
        {"action": "set-properties", "updates": {"team": "geo"}},
        {"action": "set-domain-metadata", "updates": {"delta.clustering": {"clusteringColumns": [["id"]]}}}])
    etag1 = changed["metadata"]["etag"]
    assert etag1 != etag0
    assert changed["metadata"]["columns"] == columns
    assert changed["metadata"]["properties"]["team"] == "geo"
    assert changed["metadata"]["properties"]["delta.clusteringColumns"] == '[["id"]]'
    assert changed["metadata"]["last-commit-version"] == 3
    before = state(table["table-uuid"])
    with pytest.raises(DeltaV1Error) as stale:
        v1.commit(table, v1.stage_commit(table["location"], 4, "d.parquet"), etag=etag0,
                  extra=[{"action": "set-properties", "updates": {"team": "ops"}}])
    assert stale.value.status == 409 and stale.value.type == "UpdateRequirementConflictException"
    assert state(table["table-uuid"]) == before
    # A comment has no Delta log representation: it may change without a commit.
    commented = v1.update(table, [{"action": "set-table-comment", "comment": "city events"}], etag=etag1)
    assert commented["metadata"]["etag"] != etag1 and commented["latest-table-version"] == 3
    assert Table.objects.get(id=table["table-uuid"]).comment == "city events"


def test_uniform_travels_with_the_commit(v1, table):
    location = table["location"]
    uniform = {"iceberg": {"metadata-location": f"{location}/metadata/00001.metadata.json",
                           "converted-delta-version": 1, "converted-delta-timestamp": 1704067200000}}
    loaded = v1.update(table, [
        {"action": "add-commit", "commit": v1.stage_commit(location, 1, "a.parquet"), "uniform": uniform},
        {"action": "set-properties", "updates": {"delta.universalFormat.enabledFormats": "iceberg"}}])
    assert loaded["uniform"] == uniform
    before = state(table["table-uuid"])
    with pytest.raises(DeltaV1Error) as missing:
        v1.commit(table, v1.stage_commit(location, 2, "b.parquet"))
    assert missing.value.status == 400 and missing.value.type == "InvalidParameterValueException"
    stale = {"iceberg": {**uniform["iceberg"], "converted-delta-version": 2, "base-converted-delta-version": 0}}
    with pytest.raises(DeltaV1Error) as base:
        v1.update(table, [{"action": "add-commit", "commit": v1.stage_commit(location, 2, "b.parquet"),
                           "uniform": stale}])
    assert base.value.status == 409 and base.value.type == "UpdateRequirementConflictException"
    assert state(table["table-uuid"]) == before


# -- the bound on unbackfilled commits ----------------------------------------------------------------
def test_the_server_publishes_at_the_bound(v1, table, settings, no_worker):
    """A client that never publishes, and no worker: at the bound the server publishes the oldest
    ratified commits itself, in the request, so the client never meets a 429."""
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 4
    commits = [v1.append(table, version, f"p{version}.parquet", publish=False) for version in range(1, 13)]
    row = Table.objects.get(id=table["table-uuid"])
    assert row.latest_version == 12 and 12 - row.latest_published_version <= 4
    for commit in commits[: row.latest_published_version]:
        staged = join(table["location"], "_delta_log", "_staged_commits", commit["file-name"])
        published = join(table["location"], "_delta_log", log_name(commit["version"]))
        assert storage_for(published).read(published) == storage_for(staged).read(staged)
    assert v1.snapshot("unity", "default", "events") == (12, sorted(f"p{v}.parquet" for v in range(1, 13)))


def test_429_only_when_publication_is_impossible(v1, table, settings, no_worker, delta):
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 3
    commits = [v1.append(table, version, f"p{version}.parquet", publish=False) for version in (1, 2, 3)]
    for commit in commits:  # the staged files are gone and nothing was published
        url = join(table["location"], "_delta_log", "_staged_commits", commit["file-name"])
        storage_for(url).delete(url)
    before = state(table["table-uuid"])
    with pytest.raises(DeltaV1Error) as exhausted:
        v1.commit(table, v1.stage_commit(table["location"], 4, "p4.parquet"))
    assert exhausted.value.status == 429 and exhausted.value.type == "ResourceExhaustedException"
    assert state(table["table-uuid"]) == before
    # The legacy path meets the same bound on the same table.
    with pytest.raises(Exception) as legacy:
        delta.ratify(table["table-uuid"], table["location"], delta.stage_commit(table["location"], 4, "p4.parquet"))
    assert legacy.value.status == 429
    assert state(table["table-uuid"]) == before


def test_a_backfill_report_never_forgets_an_unpublished_commit(v1, table):
    """UC OSS #1912: a premature set-latest-backfilled-version must not drop the only record of a
    commit. The server publishes it when it can; otherwise the report is refused."""
    kept = v1.append(table, 1, "a.parquet", publish=False)
    v1.backfill(table, 1)  # not published by the client: the server copies the staged file
    published = join(table["location"], "_delta_log", log_name(1))
    assert storage_for(published).exists(published)
    assert Table.objects.get(id=table["table-uuid"]).latest_published_version == 1
    lost = v1.append(table, 2, "b.parquet", publish=False)
    url = join(table["location"], "_delta_log", "_staged_commits", lost["file-name"])
    storage_for(url).delete(url)
    before = state(table["table-uuid"])
    with pytest.raises(DeltaV1Error) as refused:
        v1.backfill(table, 2)
    assert refused.value.status == 400 and refused.value.type == "InvalidParameterValueException"
    assert state(table["table-uuid"]) == before
    assert [c["version"] for c in v1.load("unity", "default", "events")["commits"]] == [2]
    assert kept["version"] == 1


def test_retention_never_trims_a_commit_whose_log_file_was_not_seen(delta, table, settings):
    """UC OSS #1912 on the legacy path: a premature backfill report does not let the retention
    forget the only record of a commit; it goes once `_delta_log/<v>.json` exists."""
    settings.UCWEB_DELTA_COMMIT_RETENTION = 0
    table_id, location = table["table-uuid"], table["location"]
    info = delta.stage_commit(location, 1, "a.parquet")
    delta.ratify(table_id, location, info)
    delta.backfill(table_id, location, 1)  # reported, never copied
    assert list(DeltaCommit.objects.filter(table_id=table_id).values_list("version", flat=True)) == [1]
    delta.publish(location, info)
    delta.append(table_id, location, 2, "b.parquet")  # published and reported: both may go now
    assert not DeltaCommit.objects.filter(table_id=table_id).exists()


def test_maintenance_policy_applies(v1, table):
    before = state(table["table-uuid"])
    with pytest.raises(DeltaV1Error) as refused:
        v1.commit(table, v1.stage_commit(table["location"], 1, "c.parquet", operation="OPTIMIZE"))
    assert refused.value.status == 403 and refused.value.type == "PermissionDeniedException"
    assert state(table["table-uuid"]) == before
    v1.commit(table, v1.stage_commit(table["location"], 1, "k.parquet", operation="CHECKPOINT"))


# -- the protocol on S3 -------------------------------------------------------------------------------
def test_the_protocol_on_s3(live_server, bootstrap, make_token, s3_storage_root, settings, no_worker, monkeypatch,
                           admin_client):
    """On a real S3 server: creation from a 0.json on S3, commits, server-side publication at the
    bound (a conditional PUT copy), the read path, and the purge on delete."""
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 3
    v1 = DeltaV1Client(f"{live_server.url}{UC}", make_token("admin", admin=True))
    loaded = v1.create_table("unity", "default", "events")
    table = {"name": "events", "table-uuid": loaded["metadata"]["table-uuid"],
             "location": loaded["metadata"]["location"]}
    assert table["location"].startswith(s3_storage_root + "/tables/")
    for version in range(1, 8):
        v1.append(table, version, f"part-{version}.parquet", publish=False)
    row = Table.objects.get(id=table["table-uuid"])
    assert row.latest_version == 7 and row.latest_published_version >= 4
    published = join(table["location"], "_delta_log", log_name(row.latest_published_version))
    assert storage_for(published).exists(published)
    assert v1.snapshot("unity", "default", "events") == (7, [f"part-{v}.parquet" for v in range(1, 8)])
    with pytest.raises(DeltaV1Error) as conflict:
        v1.commit(table, v1.stage_commit(table["location"], 7, "loser.parquet"))
    assert conflict.value.status == 409 and conflict.value.type == "CommitVersionConflictException"
    monkeypatch.undo()  # tasks run again: the purge of the dropped table
    assert admin_client.delete(f"{TABLES}/events").status_code == 204
    assert storage_for(table["location"]).list(table["location"]) == []
