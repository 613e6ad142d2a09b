"""Polaris's additions to the Iceberg REST API, driven by the Apache Polaris Python client's
catalog API against a live server with pyiceberg looking at the same namespace: table
notifications (metadata another system writes, followed by CREATE, UPDATE, VALIDATE and DROP, and
the storage they may not point the catalog at) and register-view."""

from __future__ import annotations

import json

import pytest
from apache_polaris.sdk.catalog import ApiClient, Configuration
from pyiceberg.exceptions import NoSuchTableError

from catalog.models import AuditEvent, Table
from tests.polaris_support import CATALOG, ICEBERG_SCHEMA, error_of
from tests.polaris_support import connect, iceberg  # noqa: F401 - the fixtures

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("polaris")]


# -- notifications and register-view ----------------------------------------------------------------
@pytest.fixture
def catalog_api(live_server, make_token):
    from apache_polaris.sdk.catalog.api.catalog_api import CatalogAPI

    def connect(name="admin"):
        client = ApiClient(Configuration(host=f"{live_server.url}/api/catalog"))
        client.set_default_header("Authorization", f"Bearer {make_token(name, admin=(name == 'admin'))}")
        return CatalogAPI(client)

    return connect


def notification(kind, table, timestamp, table_uuid, location):
    from apache_polaris.sdk.catalog.models import NotificationRequest, TableUpdateNotification

    return NotificationRequest(notification_type=kind, payload=TableUpdateNotification(
        table_name=table, timestamp=timestamp, table_uuid=table_uuid, metadata_location=location))


def test_notifications_follow_metadata_another_system_writes(iceberg, catalog_api, connect, tmp_path, storage_root):
    import pyarrow as pa

    # "Another system" writes two versions of a table outside managed storage, then forgets it.
    location = (tmp_path / "external" / "clicks").as_uri()
    written = iceberg.create_table(("default", "source"), schema=ICEBERG_SCHEMA, location=location)
    first = written.metadata_location
    written.append(pa.Table.from_pylist([{"id": 1}, {"id": 2}], schema=pa.schema([pa.field("id", pa.int64(), False)])))
    second = written.metadata_location
    table_uuid = str(written.metadata.table_uuid)
    iceberg.drop_table(("default", "source"))
    api = catalog_api()

    api.send_notification(CATALOG, "default", "clicks", notification("CREATE", "clicks", 100, table_uuid, first))
    assert iceberg.load_table(("default", "clicks")).metadata_location == first
    api.send_notification(CATALOG, "default", "clicks", notification("UPDATE", "clicks", 200, table_uuid, second))
    loaded = iceberg.load_table(("default", "clicks"))
    assert loaded.metadata_location == second
    assert sorted(loaded.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    # Not newer than the last admitted: 409, nothing changes.
    for timestamp in (200, 150):
        assert error_of(lambda timestamp=timestamp: api.send_notification(CATALOG, "default", "clicks", notification(
            "UPDATE", "clicks", timestamp, table_uuid, first))) == (409, "AlreadyExistsException")
    assert iceberg.load_table(("default", "clicks")).metadata_location == second
    # Bad input: a table name that is not the path's, another table's uuid, a file that is not there.
    bad = [notification("UPDATE", "other", 300, table_uuid, second),
           notification("UPDATE", "clicks", 300, "00000000-0000-0000-0000-000000000000", second),
           notification("UPDATE", "clicks", 300, table_uuid, location + "/metadata/missing.json")]
    for request in bad:
        assert error_of(lambda request=request: api.send_notification(CATALOG, "default", "clicks", request)) == (
            400, "BadRequestException")
    # A metadata file may not point the catalog at storage it would then vend and purge: here the
    # managed storage of the catalog (the same rule as the file's own location).
    forged = json.loads(Table.objects.get(name="clicks").iceberg.metadata_json)
    forged["location"] = storage_root.as_uri() + "/tables/someone-else"
    forged_path = tmp_path / "external" / "clicks" / "metadata" / "forged.metadata.json"
    forged_path.write_text(json.dumps(forged))
    assert error_of(lambda: api.send_notification(CATALOG, "default", "clicks", notification(
        "UPDATE", "clicks", 300, table_uuid, forged_path.as_uri()))) == (400, "BadRequestException")
    assert iceberg.load_table(("default", "clicks")).metadata_location == second
    # Nor at another live table's storage in the same external location, by an update or a create.
    neighbour = iceberg.create_table(("default", "neighbour"), schema=ICEBERG_SCHEMA,
                                     location=(tmp_path / "external" / "neighbour").as_uri())
    forged["location"] = neighbour.metadata.location
    forged_path.write_text(json.dumps(forged))
    tree = sorted(p for p in (tmp_path / "external").rglob("*") if "forged" not in p.name)
    for kind, name in (("UPDATE", "clicks"), ("CREATE", "clicks_again")):
        assert error_of(lambda kind=kind, name=name: api.send_notification(CATALOG, "default", name, notification(
            kind, name, 400, table_uuid, forged_path.as_uri()))) == (400, "BadRequestException")
    assert Table.objects.get(name="clicks").storage_location == location
    assert not Table.objects.filter(name="clicks_again").exists()
    assert sorted(p for p in (tmp_path / "external").rglob("*") if "forged" not in p.name) == tree
    # A table whose metadata this catalog writes takes no notifications.
    iceberg.create_table(("default", "managed"), schema=ICEBERG_SCHEMA)
    assert error_of(lambda: api.send_notification(CATALOG, "default", "managed", notification(
        "UPDATE", "managed", 1, table_uuid, second))) == (400, "BadRequestException")
    # Someone without an external location over the file may not point the catalog at it (and
    # bob, who may not even see the catalog, is answered as for a missing warehouse).
    assert error_of(lambda: catalog_api("bob").send_notification(CATALOG, "default", "clicks", notification(
        "VALIDATE", "clicks", 300, table_uuid, second))) == (404, "NoSuchWarehouseException")
    api.send_notification(CATALOG, "default", "clicks", notification("VALIDATE", "clicks", 300, table_uuid, second))

    api.send_notification(CATALOG, "default", "clicks", notification("DROP", "clicks", 400, table_uuid, second))
    with pytest.raises(NoSuchTableError):
        iceberg.load_table(("default", "clicks"))
    assert storage_exists(second)   # dropped from the catalog, not purged
    actions = sorted(AuditEvent.objects.filter(securable_name="unity.default.clicks", outcome="SUCCESS")
                     .values_list("action", flat=True))
    assert actions == ["createTableByNotification", "dropTableByNotification", "updateTableByNotification"]


def storage_exists(url: str) -> bool:
    from catalog.storage import storage_for

    return storage_for(url).exists(url)


def test_register_view(iceberg, catalog_api, tmp_path):
    from apache_polaris.sdk.catalog.models import RegisterViewRequest
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

    version = ViewVersion(version_id=1, schema_id=1, timestamp_ms=1, summary={}, default_namespace=["default"],
                          representations=[SQLViewRepresentation(type="sql", sql="SELECT 1 AS id", dialect="spark")])
    location = (tmp_path / "external" / "v").as_uri()
    view = iceberg.create_view(("default", "v1"), ICEBERG_SCHEMA, version, location=location)
    metadata_location = Table.objects.get(name="v1").iceberg.metadata_location
    iceberg.drop_view(("default", "v1"))
    del view

    api = catalog_api()
    loaded = api.register_view(CATALOG, "default", RegisterViewRequest(name="again", metadata_location=metadata_location))
    assert loaded.metadata_location == metadata_location
    assert iceberg.load_view(("default", "again")).metadata.location == location
    assert Table.objects.get(name="again").view_definition == "SELECT 1 AS id"
    assert error_of(lambda: api.register_view(CATALOG, "default", RegisterViewRequest(
        name="again", metadata_location=metadata_location))) == (409, "AlreadyExistsException")
    assert error_of(lambda: api.register_view(CATALOG, "default", RegisterViewRequest(
        name="x", metadata_location=location + "/missing.json"))) == (400, "BadRequestException")


def test_metadata_naming_another_tables_files_is_neither_registered_nor_admitted(iceberg, catalog_api, tmp_path,
                                                                                 storage_root):
    """Metadata another system wrote may reference only files inside the table's own location: a
    manifest list in another table's storage would be served as this table's, and expired (deleted)
    with its snapshot."""
    import pyarrow as pa
    from pathlib import Path

    from pyiceberg.exceptions import BadRequestError

    arrow = pa.schema([pa.field("id", pa.int64(), False)])
    victim = iceberg.create_table(("default", "victim"), schema=ICEBERG_SCHEMA)
    victim.append(pa.Table.from_pylist([{"id": 1}], schema=arrow))
    victim_list = victim.metadata.current_snapshot().manifest_list
    location = (tmp_path / "external" / "forged").as_uri()
    written = iceberg.create_table(("default", "source"), schema=ICEBERG_SCHEMA, location=location)
    written.append(pa.Table.from_pylist([{"id": 2}], schema=arrow))
    table_uuid = str(written.metadata.table_uuid)
    iceberg.drop_table(("default", "source"))
    metadata = json.loads(Path(written.metadata_location.removeprefix("file://")).read_text())
    metadata["snapshots"][0]["manifest-list"] = victim_list
    forged = Path(tmp_path / "external" / "forged" / "metadata" / "99999-forged.metadata.json")
    forged.write_text(json.dumps(metadata))

    def files():
        return sorted(str(path) for root in (tmp_path / "external", storage_root) for path in Path(root).rglob("*"))

    before = files()
    with pytest.raises(BadRequestError):
        iceberg.register_table(("default", "forged"), forged.as_uri())
    assert error_of(lambda: catalog_api().send_notification(CATALOG, "default", "forged", notification(
        "CREATE", "forged", 100, table_uuid, forged.as_uri()))) == (400, "BadRequestException")
    assert not Table.objects.filter(name="forged").exists()
    assert files() == before
    assert iceberg.load_table(("default", "victim")).metadata.current_snapshot().manifest_list == victim_list


def test_a_notification_that_changes_the_definition_needs_manage(iceberg, catalog_api, tmp_path, admin_client):
    """wally, with MODIFY (and the external location's CREATE EXTERNAL TABLE) but neither ownership
    nor MANAGE, follows another system's data commits, not its schema change: 403, nothing changes."""
    import pyarrow as pa
    from pyiceberg.types import StringType

    from tests.helpers import grant
    from tests.isolation import make_external_location

    external = (tmp_path / "external").as_uri()
    make_external_location(admin_client, "ext", external)
    grant("wally", "external_location", "ext", "CREATE EXTERNAL TABLE")
    grant("wally", "catalog", CATALOG, "USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY")
    written = iceberg.create_table(("default", "source"), schema=ICEBERG_SCHEMA, location=f"{external}/clicks")
    first = written.metadata_location
    written.append(pa.Table.from_pylist([{"id": 1}], schema=pa.schema([pa.field("id", pa.int64(), False)])))
    second = written.metadata_location
    with written.update_schema() as update:
        update.add_column("note", StringType())
    third = written.metadata_location
    table_uuid = str(written.metadata.table_uuid)
    iceberg.drop_table(("default", "source"))
    catalog_api().send_notification(CATALOG, "default", "clicks", notification("CREATE", "clicks", 100, table_uuid, first))

    wally = catalog_api("wally")
    wally.send_notification(CATALOG, "default", "clicks", notification("UPDATE", "clicks", 200, table_uuid, second))
    assert error_of(lambda: wally.send_notification(CATALOG, "default", "clicks", notification(
        "UPDATE", "clicks", 300, table_uuid, third))) == (403, "ForbiddenException")
    row = Table.objects.get(name="clicks")
    assert row.iceberg.metadata_location == second and row.iceberg.notification_timestamp == 200
    assert [c.name for c in row.columns.all()] == ["id"]
    grant("wally", "table", f"{CATALOG}.default.clicks", "MANAGE")
    wally.send_notification(CATALOG, "default", "clicks", notification("UPDATE", "clicks", 300, table_uuid, third))
    assert iceberg.load_table(("default", "clicks")).metadata_location == third
