"""HTTP details of the Iceberg REST catalog (/api/catalog) that pyiceberg has no client for, sent
as requests to a live server next to pyiceberg's RestCatalog: ETag and If-None-Match,
snapshots=refs, the error envelope, Idempotency-Key (replays, and a retry after a server error),
pagination, and the S3 settings vended with a table on a real S3-compatible server (SeaweedFS),
without secrets."""

from __future__ import annotations

import uuid

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.partitioning import PartitionSpec

from catalog.models import AuditEvent, Table
from tests.pyiceberg_support import WAREHOUSE, error_of, file_only, new_table, rows
from tests.pyiceberg_support import catalog, connect, http, storage  # noqa: F401 - the fixtures

pytestmark = pytest.mark.django_db(transaction=True)


# -- ETag, snapshots=refs, errors -------------------------------------------------------------------
@file_only
def test_etag_and_snapshots_refs(catalog, http):
    table = new_table(catalog, partition_spec=PartitionSpec())
    table.append(rows((1, "2024-01-01T00:00", "a", 1.0)))
    with table.manage_snapshots() as manage:
        manage.create_tag(table.current_snapshot().snapshot_id, "v1")
    table = catalog.load_table(("default", "events"))
    table.append(rows((2, "2024-01-01T00:00", "a", 1.0)))
    table.append(rows((3, "2024-01-01T00:00", "a", 1.0)))

    path = "/namespaces/default/tables/events"
    full = http("GET", path)
    etag = full.headers["ETag"]
    assert full.status_code == 200 and etag.startswith('"') and len(full.json()["metadata"]["snapshots"]) == 3
    assert http("GET", path, params={"snapshots": "all"}).json() == full.json()

    not_modified = http("GET", path, headers={"If-None-Match": etag})
    assert not_modified.status_code == 304 and not_modified.content == b"" and not_modified.headers["ETag"] == etag
    assert http("GET", path, headers={"If-None-Match": f'"other", {etag}'}).status_code == 304
    assert http("GET", path, headers={"If-None-Match": '"other"'}).status_code == 200

    refs = http("GET", path, params={"snapshots": "refs"})
    metadata = refs.json()["metadata"]
    # main (the third append) and tag v1 (the first); the second is no ref's snapshot.
    assert sorted(s["snapshot-id"] for s in metadata["snapshots"]) == sorted(
        [metadata["refs"]["main"]["snapshot-id"], metadata["refs"]["v1"]["snapshot-id"]])
    assert refs.headers["ETag"] != etag  # another representation of the same version
    assert http("GET", path, params={"snapshots": "refs"}, headers={"If-None-Match": etag}).status_code == 200
    assert http("GET", path, params={"snapshots": "refs"},
                headers={"If-None-Match": refs.headers["ETag"]}).status_code == 304
    assert error_of(http("GET", path, params={"snapshots": "some"})) == (400, "BadRequestException")

    refs_catalog = RestCatalog("refs", uri=catalog.properties["uri"], warehouse=WAREHOUSE,
                               token=catalog.properties["token"], **{"snapshot-loading-mode": "refs"})
    assert len(refs_catalog.load_table(("default", "events")).snapshots()) == 2

    table.append(rows((4, "2024-01-01T00:00", "a", 1.0)))
    changed = http("GET", path, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag


@file_only
def test_error_envelope(catalog, http):
    table = new_table(catalog)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(("default", "missing"))
    assert error_of(http("GET", "/namespaces/default/tables/missing")) == (404, "NoSuchTableException")
    # Spark resolves `db.t.snapshots` by first loading table `snapshots` in namespace db.t.
    assert error_of(http("GET", "/namespaces/db%1Ft/tables/snapshots")) == (404, "NoSuchTableException")
    assert error_of(http("GET", "/namespaces/default%1Fevents/tables/snapshots")) == (404, "NoSuchTableException")
    assert error_of(http("GET", "/namespaces/nope/tables")) == (404, "NoSuchNamespaceException")
    assert error_of(http.root("GET", "/nowhere/namespaces"))[0] == 404

    path = "/namespaces/default/tables/events"
    location = table.metadata_location
    unknown = http("POST", path, {"requirements": [], "updates": [{"action": "make-it-fast"}]})
    assert error_of(unknown) == (400, "BadRequestException")
    bad_requirement = http("POST", path, {"requirements": [{"type": "assert-everything"}], "updates": []})
    assert error_of(bad_requirement) == (400, "BadRequestException")
    failed = http("POST", path, {
        "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 7}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
    })
    assert error_of(failed) == (409, "CommitFailedException")
    assert error_of(http("POST", path, {"requirements": [{"type": "assert-create"}], "updates": []})) == (
        409, "CommitFailedException")
    assert error_of(http("POST", path, ["not", "an", "object"])) == (400, "BadRequestException")
    assert error_of(http("POST", path, {"updates": [{"action": "set-properties"}]})) == (400, "BadRequestException")
    assert error_of(http("POST", "/namespaces/default/tables/missing", {"updates": []})) == (
        404, "NoSuchTableException")
    malformed = http.session.post(http.base + path, data=b"{not json", headers={"Content-Type": "application/json"},
                                  timeout=30)
    assert error_of(malformed) == (400, "BadRequestException")
    assert catalog.load_table(("default", "events")).metadata_location == location
    assert "k" not in catalog.load_table(("default", "events")).properties

    anonymous = requests.get(http.base + "/namespaces", timeout=30)
    assert error_of(anonymous) == (401, "NotAuthorizedException")


# -- idempotency, pagination ------------------------------------------------------------------------
def _create_body(name: str) -> dict:
    return {"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True}]}}


@file_only
def test_idempotency_key(catalog, http):
    key = str(uuid.uuid4())
    first = http("POST", "/namespaces/default/tables", _create_body("once"), headers={"Idempotency-Key": key})
    assert first.status_code == 200, first.text
    replay = http("POST", "/namespaces/default/tables", _create_body("once"), headers={"Idempotency-Key": key})
    assert replay.status_code == 200 and replay.json() == first.json()
    assert Table.objects.filter(name="once").count() == 1
    assert AuditEvent.objects.filter(action="createIcebergTable", securable_name="unity.default.once").count() == 1

    other_key = http("POST", "/namespaces/default/tables", _create_body("once"),
                     headers={"Idempotency-Key": str(uuid.uuid4())})
    assert error_of(other_key) == (409, "AlreadyExistsException")
    no_key = http("POST", "/namespaces/default/tables", _create_body("once"))
    assert error_of(no_key) == (409, "AlreadyExistsException")

    # A commit replays too: the second request with the key does not append another snapshot.
    table = catalog.load_table(("default", "once"))
    commit_key = str(uuid.uuid4())
    body = {"requirements": [{"type": "assert-table-uuid", "uuid": str(table.metadata.table_uuid)}],
            "updates": [{"action": "set-properties", "updates": {"n": "1"}}]}
    committed = http("POST", "/namespaces/default/tables/once", body, headers={"Idempotency-Key": commit_key})
    again = http("POST", "/namespaces/default/tables/once", body, headers={"Idempotency-Key": commit_key})
    assert committed.status_code == again.status_code == 200
    assert again.json()["metadata-location"] == committed.json()["metadata-location"]
    assert catalog.load_table(("default", "once")).metadata_location == committed.json()["metadata-location"]

    # A final 4xx is replayed as well; the key of one request cannot serve another.
    failing_key = str(uuid.uuid4())
    stale = {"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 9}], "updates": []}
    assert error_of(http("POST", "/namespaces/default/tables/once", stale,
                         headers={"Idempotency-Key": failing_key})) == (409, "CommitFailedException")
    assert error_of(http("POST", "/namespaces/default/tables/once", stale,
                         headers={"Idempotency-Key": failing_key})) == (409, "CommitFailedException")
    reused = http("DELETE", "/namespaces/default/tables/once", headers={"Idempotency-Key": key})
    assert error_of(reused) == (422, "UnprocessableEntityException")
    assert catalog.table_exists(("default", "once"))


@file_only
def test_idempotency_key_of_a_server_error_can_be_retried(http, monkeypatch):
    from commits import iceberg as service

    original = service.create_table

    def broken(**kwargs):
        raise RuntimeError("storage went away")

    key = str(uuid.uuid4())
    monkeypatch.setattr(service, "create_table", broken)
    failed = http("POST", "/namespaces/default/tables", _create_body("flaky"), headers={"Idempotency-Key": key})
    assert failed.status_code == 500
    monkeypatch.setattr(service, "create_table", original)
    retried = http("POST", "/namespaces/default/tables", _create_body("flaky"), headers={"Idempotency-Key": key})
    assert retried.status_code == 200, retried.text
    replayed = http("POST", "/namespaces/default/tables", _create_body("flaky"), headers={"Idempotency-Key": key})
    assert replayed.status_code == 200 and replayed.json() == retried.json()
    assert replayed.headers["ETag"] == retried.headers["ETag"]


@file_only
def test_pagination(catalog, http):
    for name in ("c", "a", "b"):
        catalog.create_namespace(f"ns_{name}")
        new_table(catalog, name)
    everything = http("GET", "/namespaces/default/tables").json()
    assert [t["name"] for t in everything["identifiers"]] == ["a", "b", "c"] and "next-page-token" not in everything

    names, token, pages = [], "", 0
    while token is not None and pages < 10:
        page = http("GET", "/namespaces/default/tables", params={"pageToken": token, "pageSize": 2}).json()
        names += [t["name"] for t in page["identifiers"]]
        token, pages = page.get("next-page-token"), pages + 1
    assert names == ["a", "b", "c"] and pages == 2
    first = http("GET", "/namespaces", params={"pageToken": "", "pageSize": 1}).json()
    assert len(first["namespaces"]) == 1 and first["next-page-token"]
    paged = RestCatalog("paged", uri=catalog.properties["uri"], warehouse=WAREHOUSE,
                        token=catalog.properties["token"], **{"rest-page-size": "1"})
    assert paged.list_tables("default") == [("default", "a"), ("default", "b"), ("default", "c")]


# -- S3 settings ------------------------------------------------------------------------------------
@pytest.mark.s3
@pytest.mark.parametrize("storage", ["s3"], indirect=True)
def test_s3_settings_are_vended_without_secrets(catalog, http, s3_server):
    table = new_table(catalog)
    config = http("GET", "/namespaces/default/tables/events").json()["config"]
    assert config["s3.endpoint"] == s3_server.endpoint_url
    assert config["s3.path-style-access"] == "true" and config["s3.region"] == s3_server.region
    assert not any("secret" in key or "access-key" in key for key in config)
    credentials = http("GET", "/namespaces/default/tables/events/credentials").json()["storage-credentials"]
    assert credentials == [{"prefix": table.metadata.location, "config": config}]
