"""Storage isolation through the Unity Catalog API: EXTERNAL tables, views, external volumes and
catalog and schema storage roots never claim storage that is not the caller's. bob holds CREATE
TABLE and CREATE SCHEMA in unity and CREATE EXTERNAL TABLE on his own external location only.

Each case asserts the refusal (status and error code), that the storage trees are unchanged and
nothing new exists in the catalog, and that the log and the answer hold no file content."""

from __future__ import annotations


import pytest
from unitycatalog.client import CatalogsApi, TablesApi
from unitycatalog.client.models import (
    ColumnInfo,
    ColumnTypeName,
    CreateCatalog,
    CreateTable,
    DataSourceFormat,
    TableType,
)

from catalog.models import Catalog, Schema, Table, Volume
from catalog.storage import parse
from tests.helpers import UC, grant
from tests.isolation import assert_quiet, build_world, shared_attacks, symlink_to

pytestmark = pytest.mark.django_db(transaction=True)

CODES = {400: "INVALID_PARAMETER_VALUE", 403: "PERMISSION_DENIED"}


@pytest.fixture
def world(bootstrap, admin_client, storage_root, tmp_path):
    return build_world("file", storage_root.as_uri(), (tmp_path / "external").as_uri(), admin_client=admin_client)


@pytest.fixture
def bob(world, make_client):
    return make_client("bob")


def attacks(world) -> list[tuple[str, str, int]]:
    victim = parse(world.victim).path
    return [
        *shared_attacks(world),
        ("FILE://localhost/", "FILE://localhost" + victim, 400),
        ("a bare path to another table", victim, 400),
        ("file:///etc", "file:///etc", 403),
        ("a relative path", "tables/x", 400),
        ("another host", "file://elsewhere/etc", 400),
        ("a symbolic link to another table", symlink_to(world.victim, world), 400),
    ]


def refused(status, response, caplog, world, before, what):
    assert response.status_code == status, (what, response.status_code, response.content)
    assert response.json()["error_code"] == CODES[status], (what, response.json())
    assert world.tree() == before, what
    assert_quiet(caplog, response.content.decode())


def counts():
    return (Table.objects.count(), Volume.objects.count(), Schema.objects.count(), Catalog.objects.count())


def table_body(name, location, table_type="EXTERNAL"):
    body = {"name": name, "catalog_name": "unity", "schema_name": "default", "table_type": table_type,
            "data_source_format": "PARQUET", "storage_location": location,
            "columns": [{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0}]}
    if table_type == "VIEW":
        body["view_definition"] = "SELECT 1"
    return body


def test_external_tables_and_views(world, bob, caplog):
    rows = counts()
    for index, (what, location, status) in enumerate(attacks(world)):
        for table_type in ("EXTERNAL", "VIEW"):
            before = world.tree()
            response = bob.post(f"{UC}/tables", table_body(f"t{index}", location, table_type), format="json")
            refused(status, response, caplog, world, before, f"{table_type}: {what}")
    assert counts() == rows
    # His own location, as a URL and as a bare absolute path (normalised to file:///).
    own = world.fresh()
    created = bob.post(f"{UC}/tables", table_body("mine", parse(own).path), format="json")
    assert created.status_code == 200, created.content
    assert created.json()["storage_location"] == own


def test_external_volumes(world, bob, admin_client, caplog):
    grant("bob", "schema", "unity.default", "CREATE VOLUME")
    grant("bob", "external_location", "bobs", "CREATE EXTERNAL VOLUME")
    rows = counts()
    for index, (what, location, status) in enumerate(attacks(world)):
        before = world.tree()
        response = bob.post(f"{UC}/volumes", {"name": f"v{index}", "catalog_name": "unity", "schema_name": "default",
                                              "volume_type": "EXTERNAL", "storage_location": location}, format="json")
        refused(status, response, caplog, world, before, what)
    assert counts() == rows
    own = world.fresh("vol")
    created = bob.post(f"{UC}/volumes", {"name": "mine", "catalog_name": "unity", "schema_name": "default",
                                         "volume_type": "EXTERNAL", "storage_location": own}, format="json")
    assert created.status_code == 200 and created.json()["storage_location"] == own
    # No table may then claim the volume's folder, nor a volume a table's.
    before = world.tree()
    refused(400, bob.post(f"{UC}/tables", table_body("on_volume", f"{own}/x"), format="json"),
            caplog, world, before, "a table inside a volume")


def test_schema_storage_roots_need_create_managed_storage(world, bob, admin_client, caplog):
    rows = counts()
    # The managed storage root itself is refused too, as a place outside his external location.
    root_attacks = [(what, location, 403 if what == "the managed storage root" else status)
                    for what, location, status in attacks(world)]
    root_attacks += [("his own external location without CREATE MANAGED STORAGE", world.fresh("root"), 403)]
    for index, (what, location, status) in enumerate(root_attacks):
        before = world.tree()
        response = bob.post(f"{UC}/schemas", {"name": f"s{index}", "catalog_name": "unity",
                                              "storage_root": location}, format="json")
        refused(status, response, caplog, world, before, what)
    assert counts() == rows

    # With CREATE MANAGED STORAGE on his external location, a root there is his.
    grant("bob", "external_location", "bobs", "CREATE MANAGED STORAGE")
    root = world.fresh("root")
    created = bob.post(f"{UC}/schemas", {"name": "mine", "catalog_name": "unity", "storage_root": parse(root).path},
                       format="json")
    assert created.status_code == 200, created.content
    schema = Schema.objects.get(name="mine")
    assert schema.storage_root == root and schema.storage_location == f"{root}/__unitystorage/schemas/{schema.id}"
    # Its managed area is managed storage: nobody puts an external table there.
    before = world.tree()
    refused(400, bob.post(f"{UC}/tables", table_body("in_area", f"{schema.storage_location}/tables/x"),
                          format="json"), caplog, world, before, "an external table in a schema's managed area")


def test_metastore_admin_roots(world, admin_client, tmp_path, caplog):
    """A metastore admin may put a root at any path that overlaps no other securable (Sail's
    playground creates catalogs at arbitrary local paths), written as a bare path too; never in
    another table or in the managed tables area."""
    for what, location in [("another table's folder", world.victim),
                           ("inside another table's folder", f"{world.victim}/data"),
                           ("a table of another catalog", world.secret_table),
                           ("the managed tables area", f"{world.root}/tables"),
                           ("'..' into another table", f"{world.bob}/../carol/t1"),
                           ("a relative path", "playground/x")]:
        before = world.tree()
        response = admin_client.post(f"{UC}/catalogs", {"name": "play", "storage_root": location}, format="json")
        refused(400, response, caplog, world, before, what)
    path = tmp_path / "playground"
    created = admin_client.post(f"{UC}/catalogs", {"name": "play", "storage_root": str(path)}, format="json")
    assert created.status_code == 200, created.content
    catalog = Catalog.objects.get(name="play")
    assert catalog.storage_root == path.as_uri()
    # A second catalog at the same root gets a managed area of its own.
    again = admin_client.post(f"{UC}/catalogs", {"name": "play2", "storage_root": f"{path}/"}, format="json")
    assert again.status_code == 200, again.content
    assert Catalog.objects.get(name="play2").storage_location != catalog.storage_location


def test_uc_sdk_creates_a_table_at_a_bare_path(world, uc_sdk, tmp_path):
    """The UC Python client creates EXTERNAL tables at plain absolute paths (as UC OSS accepts)."""
    path = tmp_path / "uc" / "mytable"
    table = uc_sdk.run(TablesApi, "admin", lambda api: api.create_table(CreateTable(
        name="mytable", catalog_name="unity", schema_name="default", table_type=TableType.EXTERNAL,
        data_source_format=DataSourceFormat.DELTA, storage_location=str(path),
        columns=[ColumnInfo(name="id", type_name=ColumnTypeName.LONG, type_text="bigint", position=0)])))
    assert table.storage_location == path.as_uri()
    catalog = uc_sdk.run(CatalogsApi, "admin", lambda api: api.create_catalog(
        CreateCatalog(name="local", storage_root=str(tmp_path / "local"))))
    assert catalog.storage_root == (tmp_path / "local").as_uri()
