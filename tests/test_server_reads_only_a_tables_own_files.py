"""Where the server reads a table's files with its own access (the console's preview and history
of Iceberg metadata, the health refresh, scan planning), it reads only the table's own. A writer
who names another table's files in its own table's snapshot, or in the metadata log of a table it
registers, gets nothing of them back."""

from __future__ import annotations

import json
import os
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog

from catalog.admin.preview import preview_section
from catalog.admin.table_history import iceberg_timeline
from catalog.models import AuditEvent, Principal, Table
from catalog.storage import parse
from tests.helpers import grant

pytestmark = pytest.mark.django_db(transaction=True)

ROWS = pa.table({"id": pa.array([1, 2], pa.int64()), "city": ["Secretville", "Hiddenham"]})


@pytest.fixture
def catalogs(live_server, bootstrap, storage_root, make_token):
    """pyiceberg as the admin, who writes unity.default.secrets (two rows bob may not read), and
    as bob, who may create tables in unity.default and owns what he creates."""
    for privilege, securable_type, full_name in (("USE CATALOG", "catalog", "unity"),
                                                 ("USE SCHEMA", "schema", "unity.default"),
                                                 ("CREATE TABLE", "schema", "unity.default")):
        grant("bob", securable_type, full_name, privilege)

    def connect(name: str, admin: bool = False) -> RestCatalog:
        return RestCatalog(name, uri=f"{live_server.url}/api/catalog", warehouse="unity",
                           token=make_token(name, admin=admin))

    admin, bob = connect("admin", admin=True), connect("bob")
    secrets = admin.create_table(("default", "secrets"), schema=ROWS.schema)
    secrets.append(ROWS)
    with secrets.transaction() as tx:
        tx.set_properties({"kept-by": "finance-only"})
    return admin, bob, secrets


def test_the_preview_of_a_table_that_names_another_tables_data_file_shows_nothing(catalogs):
    _, bob, secrets = catalogs
    theirs = secrets.inspect.files().column("file_path").to_pylist()[0]
    borrowed = bob.create_table(("default", "borrowed"), schema=ROWS.schema)
    borrowed.add_files([theirs])  # bob's own snapshot, naming the secrets' data file
    table = Table.objects.get(name="borrowed")
    shown = preview_section(Principal.objects.get(name="bob"), table, requested=True)
    assert "shown" not in shown and "outside" in shown["unavailable"], shown
    assert "Secretville" not in json.dumps(shown)
    assert AuditEvent.objects.filter(action="previewTable", principal="bob", securable_id=table.id,
                                     outcome="FAILED").count() == 1


def test_the_preview_of_a_table_whose_folder_holds_a_link_shows_nothing(catalogs):
    """The data file bob's snapshot names lies in his table's folder as written, through a link
    he planted there to the secrets' data folder."""
    _, bob, secrets = catalogs
    linked = bob.create_table(("default", "linked"), schema=ROWS.schema)
    linked.append(pa.table({"id": pa.array([9], pa.int64()), "city": ["Own"]}))
    theirs = secrets.inspect.files().column("file_path").to_pylist()[0]
    os.symlink(os.path.dirname(parse(theirs).path), os.path.join(parse(linked.location()).path, "data", "theirs"))
    linked.add_files([f"{linked.location()}/data/theirs/{os.path.basename(parse(theirs).path)}"])
    shown = preview_section(Principal.objects.get(name="bob"), Table.objects.get(name="linked"), requested=True)
    assert "shown" not in shown and "symbolic link" in shown["unavailable"], shown
    assert "Secretville" not in json.dumps(shown)


def test_the_preview_of_a_table_of_its_own_files_shows_its_rows(catalogs):
    _, bob, _ = catalogs
    own = bob.create_table(("default", "own"), schema=ROWS.schema)
    own.append(pa.table({"id": pa.array([7], pa.int64()), "city": ["Ownton"]}))
    shown = preview_section(Principal.objects.get(name="bob"), Table.objects.get(name="own"), requested=True)
    assert shown["shown"]["rows"] == [["7", "Ownton"]], shown


def test_the_history_reads_no_metadata_file_of_another_table_that_a_registered_log_names(catalogs, tmp_path):
    admin, _, secrets = catalogs
    theirs = secrets.metadata_location
    metadata = json.loads(Table.objects.get(name="secrets").iceberg.metadata_json)
    location = (tmp_path / "registered").as_uri()
    metadata.update({"location": location, "table-uuid": str(uuid.uuid4()), "snapshots": [], "snapshot-log": [],
                     "refs": {}, "current-snapshot-id": -1, "properties": {},
                     "metadata-log": [{"metadata-file": theirs, "timestamp-ms": 1}]})
    (tmp_path / "registered" / "metadata").mkdir(parents=True)
    own_file = tmp_path / "registered" / "metadata" / "00001-registered.metadata.json"
    own_file.write_text(json.dumps(metadata))
    admin.register_table(("default", "registered"), own_file.as_uri())
    entries = iceberg_timeline(Table.objects.get(name="registered"))
    named = [entry for entry in entries if entry["metadata_file"] == theirs]
    assert len(named) == 1 and named[0]["unreadable"], named
    assert "finance-only" not in json.dumps(entries, default=str)


def borrowed_manifests(bob, secrets, live_server, make_token) -> Table:
    """bob's table whose snapshot's manifest list (a copy, in bob's own metadata folder) names the
    secrets' manifests: committed through the Iceberg REST API as any client could."""
    import requests

    theirs = secrets.current_snapshot()
    mine = bob.create_table(("default", "manifests"), schema=ROWS.schema)
    copied = f"{mine.location()}/metadata/snap-borrowed.avro"
    with open(parse(theirs.manifest_list).path, "rb") as source, open(parse(copied).path, "wb") as target:
        target.write(source.read())
    snapshot_id = 424242
    response = requests.post(
        f"{live_server.url}/api/catalog/v1/unity/namespaces/default/tables/manifests",
        headers={"Authorization": f"Bearer {make_token('bob')}"}, timeout=30,
        json={"requirements": [], "updates": [
            {"action": "add-snapshot", "snapshot": {
                "snapshot-id": snapshot_id, "sequence-number": 1, "timestamp-ms": 1700000000000,
                "manifest-list": copied, "summary": {"operation": "append"}, "schema-id": 0}},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}]})
    assert response.status_code == 200, response.text
    return Table.objects.get(name="manifests")


def test_neither_preview_nor_health_reads_another_tables_manifests(catalogs, live_server, make_token, caplog):
    from maintenance.health import iceberg_file_sizes

    _, bob, secrets = catalogs
    table = borrowed_manifests(bob, secrets, live_server, make_token)
    shown = preview_section(Principal.objects.get(name="bob"), table, requested=True)
    assert "shown" not in shown and "manifest" in shown["unavailable"], shown
    assert "Secretville" not in json.dumps(shown)
    assert iceberg_file_sizes(table) is None  # unreadable, not the secrets' file sizes
    assert iceberg_file_sizes(Table.objects.get(name="secrets")) == [
        size for size in secrets.inspect.data_files().column("file_size_in_bytes").to_pylist()]


def test_scan_planning_of_a_snapshot_that_names_another_tables_manifests_is_a_400(catalogs, live_server,
                                                                                  make_token):
    """Planning reads manifests through the storage confined to the table, as the preview does:
    another table's manifest is refused as the client's error (400), and nothing of it is answered."""
    import requests

    _, bob, secrets = catalogs
    table = borrowed_manifests(bob, secrets, live_server, make_token)
    response = requests.post(f"{live_server.url}/api/catalog/v1/unity/namespaces/default/tables/manifests/plan",
                             headers={"Authorization": f"Bearer {make_token('bob')}"}, json={}, timeout=30)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "BadRequestException" and "outside its location" in error["message"]
    assert secrets.inspect.files().column("file_path").to_pylist()[0] not in response.text
    assert list(AuditEvent.objects.filter(action="planIcebergScan").values_list("outcome", "securable_name")) == [
        ("FAILED", table.full_name)]
