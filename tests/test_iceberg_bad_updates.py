"""Malformed Iceberg commits, sent as raw HTTP: ids outside the int/long the spec gives them,
negative sequence numbers and timestamps, a commit that asks for nothing, shapes pyiceberg's
models choke on. Each is a 400 in the Iceberg error envelope, and nothing changes: the metadata
location, the stored metadata and the files under the table are what they were."""

import hashlib
import json
import uuid

import pytest
import requests

from catalog.models import Table
from catalog.storage import join, storage_for
from commits.models import IcebergMetadata

pytestmark = pytest.mark.django_db(transaction=True)
TABLE = "/namespaces/default/tables/events"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
BIG = 2**63
INT32_OVER = 2**31
# Stands for the location of the table `events` in a request body (it is known once created): the
# files a commit names lie inside the table, so that each case is refused for what it is about.
EVENTS = "<events-location>"


@pytest.fixture(params=["file", pytest.param("s3", marks=pytest.mark.s3)])
def ice(request, live_server, bootstrap, make_token):
    request.getfixturevalue("storage_root" if request.param == "file" else "s3_storage_root")
    base = f"{live_server.url}/api/catalog/v1/unity"
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {make_token('admin', admin=True)}"

    location = None

    def call(method, path, body=None, **kwargs):
        if body is not None and location is not None:
            body = json.loads(json.dumps(body).replace(EVENTS, location))
        return session.request(method, base + path, json=body, timeout=30, **kwargs)

    created = call("POST", "/namespaces/default/tables", {"name": "events", "schema": SCHEMA})
    assert created.status_code == 200, created.text
    location = created.json()["metadata"]["location"]
    return call


def snapshot(**overrides):
    return {"snapshot-id": 1001, "sequence-number": 1, "timestamp-ms": 1735689600000,
            "manifest-list": f"{EVENTS}/metadata/snap-1001.avro", "summary": {"operation": "append"}, "schema-id": 0,
            **overrides}


def add_snapshot(**overrides):
    return {"updates": [{"action": "add-snapshot", "snapshot": snapshot(**overrides)}]}


def add_field(field_id, **extra):
    return {"updates": [{"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False},
        {"id": field_id, "name": "extra", "type": "long", "required": False, **extra}]}}]}


BAD = {
    # The cases of the issue.
    "snapshot-id 2^63": add_snapshot(**{"snapshot-id": BIG}),
    "field id 2^63": add_field(BIG),
    "sequence-number -3": add_snapshot(**{"sequence-number": -3}),
    "timestamp-ms -1": add_snapshot(**{"timestamp-ms": -1}),
    "sequence-number null": add_snapshot(**{"sequence-number": None}),
    "empty body": {},
    "no requirement and no update": {"requirements": [], "updates": []},
    # The same ranges elsewhere.
    "snapshot-id 2^63 as text": add_snapshot(**{"snapshot-id": str(BIG)}),
    "snapshot-id -2^63-1": add_snapshot(**{"snapshot-id": -BIG - 1}),
    "parent-snapshot-id 2^63": add_snapshot(**{"parent-snapshot-id": BIG}),
    "field id 2^31": add_field(INT32_OVER),
    "last-column-id 2^31": {"updates": [{"action": "add-schema", "last-column-id": INT32_OVER, "schema": {
        "type": "struct", "schema-id": 1, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}}]},
    "list element-id 2^31": add_field(2, type={"type": "list", "element-id": INT32_OVER, "element": "int",
                                               "element-required": False}),
    "schema-id 2^31": {"updates": [{"action": "set-current-schema", "schema-id": INT32_OVER}]},
    "spec field-id 2^31": {"updates": [{"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": 1, "field-id": INT32_OVER, "transform": "identity", "name": "id_part"}]}}]},
    "sort source-id 2^31": {"updates": [{"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
        {"source-id": INT32_OVER, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}}]},
    "ref snapshot-id 2^63": {"updates": [{"action": "set-snapshot-ref", "ref-name": "b", "type": "branch",
                                          "snapshot-id": BIG}]},
    "ref max-ref-age-ms -1": {"updates": [{"action": "set-snapshot-ref", "ref-name": "b", "type": "branch",
                                           "snapshot-id": 1, "max-ref-age-ms": -1}]},
    "remove-snapshots 2^63": {"updates": [{"action": "remove-snapshots", "snapshot-ids": [BIG]}]},
    "statistics size -1": {"updates": [{"action": "set-statistics", "snapshot-id": 1, "statistics": {
        "snapshot-id": 1, "statistics-path": f"{EVENTS}/metadata/stats.puffin", "file-size-in-bytes": -1,
        "file-footer-size-in-bytes": 1, "blob-metadata": []}}]},
    "requirement snapshot-id 2^63": {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                                                       "snapshot-id": BIG}],
                                     "updates": [{"action": "set-properties", "updates": {"k": "v"}}]},
    "format-version 2^31": {"updates": [{"action": "upgrade-format-version", "format-version": INT32_OVER}]},
    # Shapes pyiceberg's validators raise their own exception for.
    "decimal(99, 99)": add_field(2, type="decimal(99, 99)"),
    "fixed[-1]": add_field(2, type="fixed[-1]"),
    "updates not a list": {"updates": {"action": "set-properties"}},
    "update not an object": {"updates": ["set-properties"]},
    "properties not strings": {"updates": [{"action": "set-properties", "updates": {"k": {"nested": 1}}}]},
}


def tree(location):
    storage = storage_for(location)
    return {item.url: hashlib.sha256(storage.read(item.url)).hexdigest() for item in storage.list(location)}


def state():
    table = Table.objects.get(name="events")
    current = IcebergMetadata.objects.get(table=table)
    return (current.metadata_location, current.metadata_json, table.properties,
            list(table.columns.values_list("name", "type_text")), tree(table.storage_location))


def assert_bad_request(response):
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["type"] == "BadRequestException" and body["error"]["code"] == 400
    assert body["error"]["message"]


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_commit_is_a_400_and_changes_nothing(ice, case):
    before = state()
    assert_bad_request(ice("POST", TABLE, BAD[case]))
    assert state() == before
    change = {"identifier": {"namespace": ["default"], "name": "events"}, **BAD[case]}
    transaction = ice("POST", "/transactions/commit", {"table-changes": [change]})
    if isinstance(BAD[case].get("updates", []), list):
        assert_bad_request(transaction)
    else:
        assert transaction.status_code == 400
    assert state() == before


def test_the_boundaries_themselves_are_accepted(ice):
    """The largest long snapshot id and the largest int field id are valid: a range check, not a
    guess."""
    response = ice("POST", TABLE, add_snapshot(**{"snapshot-id": BIG - 1, "sequence-number": 1}))
    assert response.status_code == 200, response.text
    assert response.json()["metadata"]["snapshots"][0]["snapshot-id"] == BIG - 1
    response = ice("POST", TABLE, add_field(2**31 - 1))
    assert response.status_code == 200, response.text
    assert response.json()["metadata"]["last-column-id"] == 2**31 - 1


def test_a_commit_of_a_missing_table_is_still_a_404(ice):
    response = ice("POST", "/namespaces/default/tables/missing", {})
    assert response.status_code == 404 and response.json()["error"]["type"] == "NoSuchTableException"


VIEW_VERSION = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1735689600000, "summary": {},
                "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}],
                "default-namespace": ["default"]}

BAD_VIEW = {
    "empty body": {},
    "nothing": {"requirements": [], "updates": []},
    "schema not an object": {"updates": [{"action": "add-schema", "schema": "id long"}]},
    "removals not a list": {"updates": [{"action": "remove-properties", "removals": 5}]},
    "view-version not an object": {"updates": [{"action": "add-view-version", "view-version": 7}]},
    "timestamp-ms -1": {"updates": [{"action": "add-view-version", "view-version": {**VIEW_VERSION, "timestamp-ms": -1}}]},
    "view-version-id 2^31": {"updates": [{"action": "set-current-view-version", "view-version-id": INT32_OVER}]},
}


@pytest.mark.parametrize("case", sorted(BAD_VIEW))
def test_a_malformed_view_commit_is_a_400_and_changes_nothing(ice, case):
    created = ice("POST", "/namespaces/default/views", {"name": "recent", "schema": SCHEMA, "view-version": VIEW_VERSION})
    assert created.status_code == 200, created.text
    view = Table.objects.get(name="recent")
    before = (IcebergMetadata.objects.get(table=view).metadata_location, tree(view.storage_location))
    assert_bad_request(ice("POST", "/namespaces/default/views/recent", BAD_VIEW[case]))
    assert (IcebergMetadata.objects.get(table=view).metadata_location, tree(view.storage_location)) == before


def test_registering_a_file_that_is_not_iceberg_metadata_is_a_400(ice, settings):
    """A Delta log (and other JSON) as `metadata-location`: 400, and the answer shows nothing of
    the file."""
    folder = join(settings.UCWEB_STORAGE_ROOT, f"elsewhere-{uuid.uuid4().hex[:8]}")
    secret = f"content-{uuid.uuid4().hex}"
    files = {
        "delta log": b'{"commitInfo":{"operation":"%s"}}\n{"protocol":{"minReaderVersion":3}}\n' % secret.encode(),
        "json array": b'["%s"]' % secret.encode(),
        "metadata without a format": b'{"location": "%s"}' % secret.encode(),
    }
    for kind, content in files.items():
        # Named as a metadata file is, so that it is the content that is refused.
        url = join(folder, f"00000-{kind.replace(' ', '-')}.metadata.json")
        storage_for(url).put(url, content)
        response = ice("POST", "/namespaces/default/register", {"name": f"r{uuid.uuid4().hex[:6]}", "metadata-location": url})
        assert_bad_request(response)
        assert secret not in response.text, kind
    assert list(Table.objects.values_list("name", flat=True)) == ["events"]


def test_a_registered_file_with_numbers_as_text_is_committed_to_as_pyiceberg_reads_it(ice):
    """The file is stored as registered; pyiceberg reads "1" as 1, and so does every commit: a
    new snapshot is a 200 (not a 500), a snapshot id that exists is a 400."""
    assert ice("POST", TABLE, add_snapshot()).status_code == 200
    written = json.loads(IcebergMetadata.objects.get(table__name="events").metadata_json)

    def register(name, **as_text):
        table_uuid = str(uuid.uuid4())  # registered at the managed location of that uuid, beside events'
        folder = f"{written['location'].rsplit('/', 1)[0]}/{table_uuid}"
        data = {**written, "location": folder, "table-uuid": table_uuid}
        data["snapshots"] = [{**written["snapshots"][0], "manifest-list": f"{folder}/metadata/snap-1001.avro",
                              **as_text.pop("snapshot", {})}]  # registered files lie inside the table
        data.update(as_text)
        url = join(folder, "metadata", "00001-registered.metadata.json")
        storage_for(url).put(url, json.dumps(data).encode())
        response = ice("POST", "/namespaces/default/register", {"name": name, "metadata-location": url})
        assert response.status_code == 200, response.text
        return f"/namespaces/default/tables/{name}", folder

    path, folder = register("sequence_as_text", **{"last-sequence-number": "1", "last-updated-ms": "1735689600000"})
    response = ice("POST", path, add_snapshot(**{"snapshot-id": 1002, "sequence-number": 2, "parent-snapshot-id": 1001,
                                                 "manifest-list": f"{folder}/metadata/snap-1002.avro"}))
    assert response.status_code == 200, response.text
    assert [s["snapshot-id"] for s in response.json()["metadata"]["snapshots"]] == [1001, 1002]
    assert response.json()["metadata"]["last-sequence-number"] == 2

    path, folder = register("ids_as_text", snapshot={"snapshot-id": "1001", "sequence-number": "1"})
    before = IcebergMetadata.objects.get(table__name="ids_as_text").metadata_location
    assert_bad_request(ice("POST", path, add_snapshot(**{"manifest-list": f"{folder}/metadata/snap-1001.avro"})))
    assert IcebergMetadata.objects.get(table__name="ids_as_text").metadata_location == before


def test_a_transaction_of_more_tables_than_the_bound_is_a_400_and_changes_nothing(ice):
    from commits.engine import MOST_TABLES_PER_TRANSACTION

    before = state()
    one = {"identifier": {"namespace": ["default"], "name": "events"},
           "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    changes = [one] + [{**one, "identifier": {"namespace": ["default"], "name": f"t{n}"}}
                       for n in range(MOST_TABLES_PER_TRANSACTION)]
    response = ice("POST", "/transactions/commit", {"table-changes": changes})
    assert_bad_request(response)
    assert str(MOST_TABLES_PER_TRANSACTION) in response.json()["error"]["message"]
    assert state() == before
    accepted = ice("POST", "/transactions/commit", {"table-changes": [one]})
    assert accepted.status_code == 204, accepted.text
