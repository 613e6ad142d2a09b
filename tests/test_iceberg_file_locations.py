"""The files an Iceberg commit makes a table reference (an added snapshot's manifest list, the
statistics files) lie inside the table's location: one named elsewhere would be read as this
table's, and expiring its snapshot would delete it. A commit naming one outside is a 400 in the
Iceberg envelope naming the field, through updateTable and transactions alike, and changes
nothing; a path inside is stored as the client spelled it."""

import posixpath

import pytest
import requests

from catalog.models import Table
from commits.models import IcebergMetadata
from maintenance.iceberg_ops import file_outside
from tests.test_iceberg_bad_updates import SCHEMA, assert_bad_request, tree

pytestmark = pytest.mark.django_db(transaction=True)
EVENTS = "/namespaces/default/tables/events"


@pytest.fixture(params=["file", pytest.param("s3", marks=pytest.mark.s3)])
def ice(request, live_server, bootstrap, make_token):
    request.getfixturevalue("storage_root" if request.param == "file" else "s3_storage_root")
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {make_token('admin', admin=True)}"
    base = f"{live_server.url}/api/catalog/v1/unity"

    def call(method, path, body=None):
        return session.request(method, base + path, json=body, timeout=30)

    for name in ("events", "other"):
        created = call("POST", "/namespaces/default/tables", {"name": name, "schema": SCHEMA})
        assert created.status_code == 200, created.text
    return call


def locations():
    return {table.name: table.storage_location for table in Table.objects.all()}


def outside_paths(location: str, other: str) -> dict:
    return {
        "another table's directory": f"{other}/metadata/snap-1.avro",
        "outside every root (s3)": "s3://elsewhere/metadata/snap-1.avro",
        "outside every root (file)": "file:///etc/passwd",
        "a '..' escape": f"{location}/../{posixpath.basename(other)}/metadata/snap-1.avro",
        "a sibling prefix": f"{location}-sibling/metadata/snap-1.avro",
        "the table location itself": location,
        "a relative path": "metadata/snap-1.avro",
    }


def add_snapshot(path: str) -> list:
    return [{"action": "add-snapshot", "snapshot": {
        "snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 1735689600000, "manifest-list": path,
        "summary": {"operation": "append"}, "schema-id": 0}}]


def set_statistics(path: str) -> list:
    return [{"action": "set-statistics", "snapshot-id": 1, "statistics": {
        "snapshot-id": 1, "statistics-path": path, "file-size-in-bytes": 10, "file-footer-size-in-bytes": 2,
        "blob-metadata": []}}]


def set_partition_statistics(path: str) -> list:
    return [{"action": "set-partition-statistics", "partition-statistics": {
        "snapshot-id": 1, "statistics-path": path, "file-size-in-bytes": 10}}]


FIELDS = {
    "add-snapshot manifest-list": add_snapshot,
    "set-statistics statistics-path": set_statistics,
    "set-partition-statistics statistics-path": set_partition_statistics,
}


def state():
    table = Table.objects.get(name="events")
    current = IcebergMetadata.objects.get(table=table)
    return current.metadata_location, current.metadata_json, tree(table.storage_location)


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_a_file_outside_the_table_is_refused_and_nothing_changes(ice, field):
    where = locations()
    inside = f"{where['events']}/metadata/snap-0.avro"
    if field != "add-snapshot manifest-list":  # statistics need the snapshot they describe
        assert ice("POST", EVENTS, {"updates": add_snapshot(inside)}).status_code == 200
    before = state()
    for what, path in outside_paths(where["events"], where["other"]).items():
        updates = FIELDS[field](path)
        response = ice("POST", EVENTS, {"updates": updates})
        assert_bad_request(response)
        assert field in response.json()["error"]["message"], what
        assert state() == before, what
        change = {"identifier": {"namespace": ["default"], "name": "events"}, "updates": updates}
        response = ice("POST", "/transactions/commit", {"table-changes": [change]})
        assert_bad_request(response)
        assert field in response.json()["error"]["message"], what
        assert state() == before, what


def test_a_file_inside_the_table_is_stored_as_sent(ice):
    location = locations()["events"]
    manifest_list = f"{location}/metadata/snap-1-0-{'a' * 8}.avro"
    response = ice("POST", EVENTS, {"updates": add_snapshot(manifest_list)})
    assert response.status_code == 200, response.text
    statistics = f"{location}/metadata/1-stats.puffin"
    response = ice("POST", EVENTS, {"updates": set_statistics(statistics) + set_partition_statistics(statistics)})
    assert response.status_code == 200, response.text
    metadata = response.json()["metadata"]
    assert metadata["snapshots"][0]["manifest-list"] == manifest_list
    assert metadata["statistics"][0]["statistics-path"] == statistics
    assert metadata["partition-statistics"][0]["statistics-path"] == statistics


def test_a_transaction_with_one_file_outside_changes_no_table(ice):
    where = locations()
    before = {name: IcebergMetadata.objects.get(table__name=name).metadata_location for name in where}
    changes = [
        {"identifier": {"namespace": ["default"], "name": "other"},
         "updates": add_snapshot(f"{where['other']}/metadata/snap-1.avro")},
        {"identifier": {"namespace": ["default"], "name": "events"},
         "updates": add_snapshot(f"{where['other']}/metadata/snap-1.avro")},
    ]
    assert_bad_request(ice("POST", "/transactions/commit", {"table-changes": changes}))
    assert {name: IcebergMetadata.objects.get(table__name=name).metadata_location for name in where} == before


def test_maintenance_deletes_nothing_when_the_metadata_names_a_file_outside(tmp_path):
    """Metadata written before the rule may name a manifest list or statistics file anywhere:
    expiring its snapshot would delete it, so maintenance finds it first."""
    location = (tmp_path / "t").as_uri()
    inside = {"snapshots": [{"manifest-list": f"{location}/metadata/snap-1.avro"},
                            {"manifests": [f"{location}/metadata/m-1.avro"]}],
              "statistics": [{"statistics-path": f"{location}/metadata/s.puffin"}], "partition-statistics": []}
    assert file_outside(inside, location) is None
    for path in ("s3://elsewhere/snap.avro", f"{location}/../u/snap.avro", f"{location}-sibling/snap.avro"):
        for metadata in ({**inside, "snapshots": [*inside["snapshots"], {"manifest-list": path}]},
                         {**inside, "snapshots": [{"manifests": [path]}]},
                         {**inside, "statistics": [{"statistics-path": path}]},
                         {**inside, "partition-statistics": [{"statistics-path": path}]}):
            assert file_outside(metadata, location) == path
