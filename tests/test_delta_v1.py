"""The UC Delta REST API (`/delta/v1`, managed tables spec 1.0): the protocol end to end over HTTP,
the one ratification shared with the legacy `/delta/preview/commits` path, the bound on
unbackfilled commits with server-side publication, and every error row of the spec (status, error
type, nothing changed)."""

import json
import uuid

import pytest

from catalog.models import AuditEvent, StagingTable, Table
from catalog.storage import join, storage_for
from commits.models import CommitReport, DeltaCommit
from tests.delta_client import log_name
from tests.delta_v1_client import PROTOCOL, DeltaV1Client, DeltaV1Error
from tests.helpers import UC, grant

pytestmark = pytest.mark.django_db(transaction=True)
V1 = f"{UC}/delta/v1"
TABLES = f"{V1}/catalogs/unity/schemas/default/tables"


@pytest.fixture
def v1(live_server, bootstrap, make_token, storage_root):
    return DeltaV1Client(f"{live_server.url}{UC}", make_token("admin", admin=True))


@pytest.fixture
def table(v1):
    loaded = v1.create_table("unity", "default", "events")
    return {"name": "events", "table-uuid": loaded["metadata"]["table-uuid"], "location": loaded["metadata"]["location"]}


@pytest.fixture
def no_worker(monkeypatch):
    """Tasks go to a broker no worker reads: nothing publishes for the client."""
    sent = []
    monkeypatch.setattr("maintenance.tasks.enqueue", lambda task, *args: sent.append((task.name, args)))
    return sent


def state(table_id):
    row = Table.objects.get(id=table_id)
    commits = list(DeltaCommit.objects.filter(table=row).order_by("version").values_list("version", "file_name"))
    return row.latest_version, row.latest_published_version, commits, row.comment, row.properties, \
        list(row.columns.values_list("name", flat=True))


def error_of(response):
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) >= {"type", "code", "message"}, body
    assert body["error"]["code"] == response.status_code
    return body["error"]["type"]


def commit_entry(version, file_name=None, **changes):
    entry = {"version": version, "timestamp": 1704067200000 + version,
             "file-name": file_name or f"{version:020d}.{uuid.uuid4()}.json", "file-size": 1024,
             "file-modification-timestamp": 1704067200000 + version}
    entry.update(changes)
    return entry


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


def test_maintenance_policy_applies(v1, table):
    before = state(table["table-uuid"])
    with pytest.raises(DeltaV1Error) as refused:
        v1.commit(table, v1.stage_commit(table["location"], 1, "c.parquet", operation="OPTIMIZE"))
    assert refused.value.status == 403 and refused.value.type == "PermissionDeniedException"
    assert state(table["table-uuid"]) == before
    v1.commit(table, v1.stage_commit(table["location"], 1, "k.parquet", operation="CHECKPOINT"))


# -- every error row of updateTable ----------------------------------------------------------------------
def _bad_updates(table_id):
    uuid_ok = [{"type": "assert-table-uuid", "uuid": table_id}]

    def req(updates, requirements=uuid_ok):
        return {"requirements": requirements, "updates": updates}

    add = {"action": "add-commit", "commit": commit_entry(1)}
    return {
        "requirements not an array": ({"requirements": "x", "updates": [add]}, 400, "BadRequestException"),
        "unknown action": (req([{"action": "drop-everything"}]), 400, "BadRequestException"),
        "unknown requirement": (req([add], uuid_ok + [{"type": "assert-nothing"}]), 400, "BadRequestException"),
        "no updates": (req([]), 400, "InvalidParameterValueException"),
        "no assert-table-uuid": (req([add], []), 400, "InvalidParameterValueException"),
        "two add-commits": (req([add, add]), 400, "InvalidParameterValueException"),
        "two uuid requirements": (req([add], uuid_ok * 2), 400, "InvalidParameterValueException"),
        "version 0": (req([{**add, "commit": commit_entry(0)}]), 400, "InvalidParameterValueException"),
        "negative timestamp": (req([{**add, "commit": commit_entry(1, timestamp=-5)}]), 400,
                               "InvalidParameterValueException"),
        "size 0": (req([{**add, "commit": commit_entry(1, **{"file-size": 0})}]), 400,
                   "InvalidParameterValueException"),
        "file name is a path": (req([{**add, "commit": commit_entry(1, "../../00000000000000000001.x.json")}]),
                                400, "InvalidParameterValueException"),
        "missing file name": (req([{**add, "commit": {k: v for k, v in commit_entry(1).items() if k != "file-name"}}]),
                              400, "InvalidParameterValueException"),
        "gap": (req([{**add, "commit": commit_entry(3)}]), 400, "InvalidParameterValueException"),
        "backfill above latest": (req([{"action": "set-latest-backfilled-version", "latest-published-version": 5}]),
                                  400, "InvalidParameterValueException"),
        "set and remove one key": (req([add, {"action": "set-properties", "updates": {"a": "1"}},
                                        {"action": "remove-properties", "removals": ["a"]}]), 400,
                                   "InvalidParameterValueException"),
        "server-derived key": (req([add, {"action": "set-properties", "updates": {"delta.minReaderVersion": "2"}}]),
                               400, "InvalidParameterValueException"),
        "properties not strings": (req([add, {"action": "set-properties", "updates": {"a": 1}}]), 400,
                                   "InvalidParameterValueException"),
        "columns without a commit": (req([{"action": "set-columns", "columns": {"type": "struct", "fields": []}}]),
                                     400, "InvalidParameterValueException"),
        "columns not a struct": (req([add, {"action": "set-columns", "columns": {"type": "array"}}]), 400,
                                 "InvalidParameterValueException"),
        "protocol without catalogManaged": (req([add, {"action": "set-protocol", "protocol": {
            **PROTOCOL, "reader-features": ["vacuumProtocolCheck"], "writer-features": ["inCommitTimestamp"]}}]),
            400, "InvalidParameterValueException"),
        "removing the table id": (req([add, {"action": "remove-properties", "removals": ["io.unitycatalog.tableId"]}]),
                                  400, "InvalidParameterValueException"),
        "unknown domain": (req([add, {"action": "set-domain-metadata", "updates": {"x.y": {}}}]), 400,
                           "InvalidParameterValueException"),
        "uniform outside the table": (req([{**add, "uniform": {"iceberg": {
            "metadata-location": "file:///elsewhere/m.json", "converted-delta-version": 1,
            "converted-delta-timestamp": 1}}}]), 400, "InvalidParameterValueException"),
        "snapshot version on a managed table": (req([{"action": "update-metadata-snapshot-version",
                                                      "last-commit-version": 1, "last-commit-timestamp-ms": 1}]),
                                                400, "InvalidParameterValueException"),
        "other table uuid": (req([add], [{"type": "assert-table-uuid", "uuid": str(uuid.uuid4())}]), 409,
                             "UpdateRequirementConflictException"),
        "stale etag": (req([add], uuid_ok + [{"type": "assert-etag", "etag": "old"}]), 409,
                       "UpdateRequirementConflictException"),
        "body is a list": ([add], 400, "InvalidParameterValueException"),
    }


@pytest.mark.parametrize("case", sorted(_bad_updates("t")))
def test_update_errors_change_nothing(table, admin_client, case):
    body, status, kind = _bad_updates(table["table-uuid"])[case]
    before = (state(table["table-uuid"]), AuditEvent.objects.filter(action="updateDeltaTable").count())
    response = admin_client.post(f"{TABLES}/events", body, format="json")
    assert response.status_code == status, response.content
    assert error_of(response) == kind
    assert (state(table["table-uuid"]), AuditEvent.objects.filter(action="updateDeltaTable").count()) == before


def test_update_needs_modify_and_a_table(table, make_client, admin_client):
    body = {"requirements": [{"type": "assert-table-uuid", "uuid": table["table-uuid"]}],
            "updates": [{"action": "add-commit", "commit": commit_entry(1)}]}
    reader = make_client("reader")
    grant("reader", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT")
    before = state(table["table-uuid"])
    response = reader.post(f"{TABLES}/events", body, format="json")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    assert reader.get(f"{TABLES}/events").status_code == 200
    response = admin_client.post(f"{TABLES}/nope", body, format="json")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    response = make_client(None).post(f"{TABLES}/events", body, format="json")
    assert response.status_code == 401 and error_of(response) == "NotAuthorizedException"
    response = admin_client.post(f"{TABLES}/events", "{not json", content_type="application/json")
    assert response.status_code == 400 and error_of(response) == "BadRequestException"
    assert state(table["table-uuid"]) == before


# -- creation errors -------------------------------------------------------------------------------
def _create_body(staging, **changes):
    body = {"name": "fresh", "table-type": "MANAGED", "location": staging["location"],
            "columns": {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]},
            "properties": {"io.unitycatalog.tableId": staging["table-id"], "delta.enableInCommitTimestamps": "true"},
            "protocol": PROTOCOL, "last-commit-timestamp-ms": 1704067400000}
    body.update(changes)
    return body


def test_create_table_errors(v1, table, admin_client, make_client):
    staging = v1.call("POST", "catalogs/unity/schemas/default/staging-tables", {"name": "fresh"})
    cases = {
        "missing columns": (_create_body(staging, columns=None), 400, "InvalidParameterValueException"),
        "bad table type": (_create_body(staging, **{"table-type": "VIEW"}), 400, "InvalidParameterValueException"),
        "no protocol": (_create_body(staging, protocol=None), 400, "InvalidParameterValueException"),
        "no timestamp": (_create_body(staging, **{"last-commit-timestamp-ms": None}), 400,
                         "InvalidParameterValueException"),
        "no catalogManaged": (_create_body(staging, protocol={**PROTOCOL, "reader-features": []}), 400,
                              "InvalidParameterValueException"),
        "other table id": (_create_body(staging, properties={"io.unitycatalog.tableId": str(uuid.uuid4()),
                                                             "delta.enableInCommitTimestamps": "true"}),
                           400, "InvalidParameterValueException"),
        "partition column unknown": (_create_body(staging, **{"partition-columns": ["nope"]}), 400,
                                     "InvalidParameterValueException"),
        "uniform without the property": (_create_body(staging, uniform={"iceberg": {
            "metadata-location": staging["location"] + "/metadata/0.json", "converted-delta-version": 0,
            "converted-delta-timestamp": 1}}), 400, "InvalidParameterValueException"),
        "no staging table there": (_create_body(staging, location=staging["location"] + "-x"), 404,
                                   "NoSuchTableException"),
    }
    for case, (body, status, kind) in cases.items():
        response = admin_client.post(TABLES, body, format="json")
        assert response.status_code == status, (case, response.content)
        assert error_of(response) == kind, case
    # Staging names are not reserved: uniqueness is enforced at createTable.
    second = v1.call("POST", "catalogs/unity/schemas/default/staging-tables", {"name": "dup"})
    v1.create_table("unity", "default", "dup")
    response = admin_client.post(TABLES, _create_body(second, name="dup"), format="json")
    assert response.status_code == 409 and error_of(response) == "AlreadyExistsException"
    response = admin_client.post(TABLES, "{oops", content_type="application/json")
    assert response.status_code == 400 and error_of(response) == "BadRequestException"
    response = admin_client.post(f"{V1}/catalogs/unity/schemas/nope/tables", _create_body(staging), format="json")
    assert response.status_code == 404 and error_of(response) == "NoSuchSchemaException"
    writer = make_client("writer")
    grant("writer", "catalog", "unity", "USE CATALOG", "USE SCHEMA")
    response = writer.post(TABLES, _create_body(staging), format="json")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    assert not Table.objects.filter(name="fresh").exists()
    assert StagingTable.objects.get(id=staging["table-id"]).finalized_at is None
    # Version 0 was never written: declared columns make the table, version 0 is checked later.
    assert admin_client.post(TABLES, _create_body(staging), format="json").status_code == 200
    response = admin_client.post(TABLES, _create_body(staging, name="again"), format="json")
    assert response.status_code == 400 and error_of(response) == "InvalidParameterValueException"


def test_staging_errors(v1, table, admin_client, make_client):
    staging_url = f"{V1}/catalogs/unity/schemas/default/staging-tables"
    count = StagingTable.objects.count()
    for body, url, status, kind in [
        ({}, staging_url, 400, "InvalidParameterValueException"),
        ({"name": "events"}, staging_url, 409, "AlreadyExistsException"),
        ({"name": "x"}, f"{V1}/catalogs/unity/schemas/nope/staging-tables", 404, "NoSuchSchemaException"),
        ({"name": "x"}, f"{V1}/catalogs/nope/schemas/default/staging-tables", 404, "NoSuchCatalogException"),
    ]:
        response = admin_client.post(url, body, format="json")
        assert response.status_code == status and error_of(response) == kind, body
    response = admin_client.post(staging_url, "{oops", content_type="application/json")
    assert response.status_code == 400 and error_of(response) == "BadRequestException"
    # A catalog the caller may not see answers as a missing one (no existence oracle).
    response = make_client("mallory").post(staging_url, {"name": "x"}, format="json")
    assert response.status_code == 404 and error_of(response) == "NoSuchCatalogException"
    assert StagingTable.objects.count() == count
    staging = v1.call("POST", "catalogs/unity/schemas/default/staging-tables", {"name": "x"})
    response = make_client("mallory").get(f"{V1}/staging-tables/{staging['table-id']}/credentials")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    for unknown in (str(uuid.uuid4()), table["table-uuid"]):  # a finalized staging table is a table now
        response = admin_client.get(f"{V1}/staging-tables/{unknown}/credentials")
        assert response.status_code == 404 and error_of(response) == "NoSuchTableException"


# -- credentials, metrics, lifecycle -------------------------------------------------------------------
def test_table_credentials(v1, table, admin_client, make_client):
    read = v1.call("GET", "catalogs/unity/schemas/default/tables/events/credentials?operation=READ")
    assert read["storage-credentials"][0]["prefix"] == table["location"]
    assert read["storage-credentials"][0]["operation"] == "READ"
    response = admin_client.get(f"{TABLES}/events/credentials?operation=WRITE")
    assert response.status_code == 400 and error_of(response) == "BadRequestException"
    response = admin_client.get(f"{TABLES}/nope/credentials?operation=READ")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    reader = make_client("reader")
    grant("reader", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT")
    assert reader.get(f"{TABLES}/events/credentials?operation=READ").status_code == 200
    response = reader.get(f"{TABLES}/events/credentials?operation=READ_WRITE")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"


def test_path_credentials_follow_the_uc_rules(v1, table, admin_client, make_client, tmp_path):
    response = admin_client.get(f"{V1}/temporary-path-credentials",
                                {"location": table["location"], "operation": "READ"})
    assert response.status_code in (400, 403)  # managed storage is never a path
    response = make_client("mallory").get(f"{V1}/temporary-path-credentials",
                                          {"location": (tmp_path / "x").as_uri(), "operation": "READ"})
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    response = admin_client.get(f"{V1}/temporary-path-credentials", {"location": "file:///x", "operation": "ALL"})
    assert response.status_code == 400 and error_of(response) == "BadRequestException"


def test_metrics(v1, table, admin_client, make_client):
    report = {"table-id": table["table-uuid"], "report": {"commit-report": {
        "num-files-added": 10, "num-rows-inserted": 1000,
        "file-size-histogram": {"sorted-bin-boundaries": [0, 1024], "file-counts": [9, 1],
                                "total-bytes": [900, 2048], "commit-version": 0}}}}
    response = admin_client.post(f"{TABLES}/events/metrics", report, format="json")
    assert response.status_code == 204, response.content
    stored = CommitReport.objects.get(table_id=table["table-uuid"])
    assert (stored.num_files_added, stored.num_rows_inserted, stored.commit_version) == (10, 1000, 0)
    for body, status, kind in [
        ({**report, "table-id": str(uuid.uuid4())}, 400, "InvalidParameterValueException"),
        ({"table-id": table["table-uuid"], "report": {"commit-report": {"file-size-histogram": {
            "sorted-bin-boundaries": [0, 1], "file-counts": [1], "total-bytes": [1, 2]}}}}, 400,
         "InvalidParameterValueException"),
        ({"report": {}}, 400, "InvalidParameterValueException"),
    ]:
        response = admin_client.post(f"{TABLES}/events/metrics", body, format="json")
        assert response.status_code == status and error_of(response) == kind, body
    response = admin_client.post(f"{TABLES}/events/metrics", "{oops", content_type="application/json")
    assert response.status_code == 400 and error_of(response) == "BadRequestException"
    response = admin_client.post(f"{TABLES}/nope/metrics", report, format="json")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    response = make_client("mallory").post(f"{TABLES}/events/metrics", report, format="json")
    assert response.status_code == 404 and error_of(response) == "NoSuchCatalogException"  # hidden: as missing
    assert CommitReport.objects.count() == 1


def test_exists_list_rename_and_delete(v1, table, admin_client, make_client):
    assert admin_client.head(f"{TABLES}/events").status_code == 204
    assert admin_client.head(f"{TABLES}/nope").status_code == 404
    listed = admin_client.get(TABLES).json()
    assert [t["name"] for t in listed["tables"]] == ["events"]
    v1.create_table("unity", "default", "other")
    response = admin_client.post(f"{TABLES}/events/rename", {"new-name": "other"}, format="json")
    assert response.status_code == 409 and error_of(response) == "AlreadyExistsException"
    writer = make_client("writer")
    grant("writer", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "MODIFY", "SELECT")
    response = writer.post(f"{TABLES}/events/rename", {"new-name": "renamed"}, format="json")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    response = admin_client.post(f"{TABLES}/events/rename", {}, format="json")
    assert response.status_code == 400 and error_of(response) == "InvalidParameterValueException"
    assert admin_client.post(f"{TABLES}/events/rename", {"new-name": "renamed"}, format="json").status_code == 204
    assert admin_client.head(f"{TABLES}/events").status_code == 404
    assert admin_client.get(f"{TABLES}/renamed").json()["metadata"]["table-uuid"] == table["table-uuid"]
    response = writer.delete(f"{TABLES}/renamed")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    response = admin_client.delete(f"{TABLES}/events")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    assert admin_client.delete(f"{TABLES}/renamed").status_code == 204
    response = admin_client.get(f"{TABLES}/renamed")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    assert not Table.objects.filter(id=table["table-uuid"]).exists()


def test_load_errors_and_other_formats(v1, table, admin_client, make_client, tmp_path):
    response = admin_client.get(f"{V1}/catalogs/unity/schemas/nope/tables/events")
    assert response.status_code == 404 and error_of(response) == "NoSuchSchemaException"
    response = make_client("mallory").get(f"{TABLES}/events")
    assert response.status_code == 404 and error_of(response) == "NoSuchCatalogException"  # hidden: as missing
    response = admin_client.post(f"{UC}/tables", {
        "name": "flat", "catalog_name": "unity", "schema_name": "default", "table_type": "EXTERNAL",
        "data_source_format": "PARQUET", "storage_location": (tmp_path / "flat").as_uri()}, format="json")
    assert response.status_code == 200, response.content
    response = admin_client.get(f"{TABLES}/flat")
    assert response.status_code == 400 and error_of(response) == "UnsupportedTableFormatException"
    assert admin_client.head(f"{TABLES}/flat").status_code == 204
    response = admin_client.post(f"{UC}/tables", {
        "name": "outside", "catalog_name": "unity", "schema_name": "default", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": (tmp_path / "outside").as_uri()}, format="json")
    assert response.status_code == 200, response.content
    loaded = admin_client.get(f"{TABLES}/outside").json()
    assert loaded["metadata"]["table-type"] == "EXTERNAL"
    assert "commits" not in loaded and "latest-table-version" not in loaded
    assert "delta.feature.catalogManaged" not in loaded["metadata"]["properties"]


def test_errors_use_the_delta_envelope_by_view_not_by_path(admin_client):
    """The UC API keeps its own envelope and statuses for the same condition."""
    response = admin_client.get(f"{UC}/tables/unity.default.nope")
    assert response.status_code == 404 and response.json()["error_code"] == "TABLE_DOES_NOT_EXIST"
    response = admin_client.get(f"{TABLES}/nope")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    assert json.loads(response.content)["error"]["message"]


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
