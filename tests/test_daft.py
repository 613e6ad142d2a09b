"""Daft (the `daft` package) as its documentation shows it: `UnityCatalogClient` and
`Catalog.from_unity` over the Unity Catalog API (tables are Delta, read and written by delta-rs
inside Daft), and `Catalog.from_iceberg` over pyiceberg's `RestCatalog` on the Iceberg REST
catalog. Storage is `file://`, and for the Iceberg catalog also S3 with vended credentials.

Daft's Unity catalog lists and reads; it cannot create or drop (its own NotImplementedError). With
a `UnityCatalogTable` on `file://` it cannot write (the credentials answer has no cloud keys, so it
finds no io_config); it writes to the same table through its `table_uri`. Its Unity client is not
tried on S3 here: the IOConfig it builds from the vended keys names no endpoint
(daft/catalog/__unity/_client.py), and these tests' S3 is SeaweedFS, not AWS. Its Iceberg catalog creates, appends, reads and drops, on S3
with nothing but the credentials loadTable vends."""

from __future__ import annotations

import daft
import pyarrow as pa
import pytest
import unitycatalog
from daft.catalog import Catalog
from daft.catalog.__unity import UnityCatalogClient
from deltalake import write_deltalake
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError

from catalog.models import Table
from tests.helpers import UC, external_table_body, grant
from tests.iceberg_vending_support import lake  # noqa: F401 - the fixture
from tests.seaweedfs_sts import sts_s3_server  # noqa: F401 - the module-scoped server fixture

pytestmark = pytest.mark.django_db(transaction=True)

DELTA_COLUMNS = [{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0},
                 {"name": "city", "type_name": "STRING", "type_text": "string", "position": 1}]


def rows(table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda row: row["id"])


@pytest.fixture
def unity(live_server, bootstrap, make_client, make_token, storage_root, tmp_path):
    """An EXTERNAL Delta table unity.default.trips on file:// with three rows, and a function that
    opens Daft's Unity Catalog client as a principal."""
    location = tmp_path / "external" / "trips"
    write_deltalake(str(location), pa.table({"id": pa.array([1, 2, 3], pa.int64()), "city": ["Lyon", "Oslo", "Quito"]}))
    admin = make_client("admin", admin=True)
    response = admin.post(f"{UC}/tables", external_table_body(
        "trips", location.as_uri(), catalog="unity", schema="default", data_source_format="DELTA",
        columns=DELTA_COLUMNS), format="json")
    assert response.status_code == 200, response.content

    def client(name: str) -> UnityCatalogClient:
        # Daft's endpoint is the server's root: it adds /api/2.1/unity-catalog itself.
        return UnityCatalogClient(endpoint=live_server.url, token=make_token(name, admin=name == "admin"))

    return client


def test_daft_unity_lists_and_reads_an_external_table(unity):
    grant("reader", "catalog", "unity", "USE CATALOG")
    grant("reader", "schema", "unity.default", "USE SCHEMA", "SELECT")
    client = unity("reader")
    assert "unity" in client.list_catalogs()
    assert "unity.default" in client.list_schemas("unity")
    assert client.list_tables("unity.default") == ["unity.default.trips"]

    catalog = Catalog.from_unity(client)
    assert [str(name) for name in catalog.list_tables("unity.default")] == ["unity.default.trips"]
    table = catalog.get_table("unity.default.trips")
    assert rows(table.read().to_arrow()) == [
        {"id": 1, "city": "Lyon"}, {"id": 2, "city": "Oslo"}, {"id": 3, "city": "Quito"}]
    # The documented path: load_table, then daft.read_deltalake.
    assert daft.read_deltalake(client.load_table("unity.default.trips", operation="READ")).count_rows() == 3


def test_daft_unity_writes_through_the_table_uri_not_the_unity_table(unity):
    client = unity("admin")
    unity_table = client.load_table("unity.default.trips")
    new_rows = daft.from_pydict({"id": [4], "city": ["Accra"]})
    # Daft's own limit: for a file:// table the vended answer has no cloud keys, so it has no
    # io_config for the Unity table and refuses before writing.
    with pytest.raises(ValueError, match="io_config was not provided to write_deltalake"):
        new_rows.write_deltalake(unity_table, mode="append")
    # The workaround: the same table by its storage location.
    new_rows.write_deltalake(unity_table.table_uri, mode="append")
    assert daft.read_deltalake(client.load_table("unity.default.trips")).count_rows() == 4


def test_daft_unity_cannot_create_or_drop(unity):
    catalog = Catalog.from_unity(unity("admin"))
    with pytest.raises(NotImplementedError, match="Unity create_table not yet supported"):
        catalog.create_table("unity.default.more", daft.from_pydict({"id": [1]}).schema())
    with pytest.raises(NotImplementedError, match="Unity drop_table not yet supported"):
        catalog.drop_table("unity.default.trips")


def test_daft_unity_without_grants_finds_nothing(unity):
    client = unity("stranger")
    assert "unity" not in client.list_catalogs()
    # What the principal may not see answers as a missing thing (no existence oracle): listing in
    # the catalog is the SDK's NotFoundError; getting the table, Daft's answer for a missing table
    # (a ValueError that offers to register one).
    with pytest.raises(unitycatalog.NotFoundError, match="CATALOG_DOES_NOT_EXIST"):
        Catalog.from_unity(client).list_tables("unity.default")
    with pytest.raises(ValueError, match="unity.default.trips is not an existing table"):
        Catalog.from_unity(client).get_table("unity.default.trips")


# -- Daft's Iceberg catalog over pyiceberg's RestCatalog -----------------------------------------------
@pytest.fixture
def iceberg(live_server, bootstrap, make_token, storage_root):
    def catalog(name: str) -> Catalog:
        rest = RestCatalog(f"ucweb-{name}", uri=f"{live_server.url}/api/catalog", warehouse="unity",
                           token=make_token(name, admin=name == "admin"))
        return Catalog.from_iceberg(rest)

    return catalog


def test_daft_iceberg_creates_appends_reads_and_drops(iceberg):
    catalog = iceberg("admin")
    first = daft.from_pydict({"id": [1, 2], "city": ["Lyon", "Oslo"]})
    table = catalog.create_table("default.events", first.schema())
    table.append(first)
    catalog.get_table("default.events").append(daft.from_pydict({"id": [3], "city": ["Quito"]}))
    assert [str(name) for name in catalog.list_tables("default")] == ["default.events"]
    assert rows(catalog.read_table("default.events").to_arrow()) == [
        {"id": 1, "city": "Lyon"}, {"id": 2, "city": "Oslo"}, {"id": 3, "city": "Quito"}]
    assert Table.objects.get(schema__name="default", name="events").data_source_format == "ICEBERG"

    catalog.drop_table("default.events")
    assert not catalog.has_table("default.events")
    assert not Table.objects.filter(schema__name="default", name="events").exists()


def test_daft_iceberg_reader_reads_and_is_refused_a_write(iceberg):
    iceberg("admin").create_table("default.events", daft.from_pydict({"id": [1]}).schema()).append(
        daft.from_pydict({"id": [1]}))
    grant("reader", "catalog", "unity", "USE CATALOG")
    grant("reader", "schema", "unity.default", "USE SCHEMA", "SELECT")
    reader = iceberg("reader")
    assert reader.read_table("default.events").to_pydict() == {"id": [1]}
    with pytest.raises(ForbiddenError):
        reader.get_table("default.events").append(daft.from_pydict({"id": [2]}))
    assert iceberg("admin").read_table("default.events").to_pydict() == {"id": [1]}


@pytest.mark.s3
def test_daft_iceberg_on_s3_with_vended_credentials(lake):
    """Managed storage on SeaweedFS with STS (tests/iceberg_vending_support.py): Daft holds no S3
    keys; it writes and reads with what loadTable vends, and the storage refuses a reader's write."""
    writer = Catalog.from_iceberg(lake.catalog("writer"))
    first = daft.from_pydict({"id": [1, 2], "name": ["a", "b"]})
    writer.create_table("default.events", first.schema()).append(first)
    reader = Catalog.from_iceberg(lake.catalog("reader"))
    assert reader.read_table("default.events").to_pydict() == {"id": [1, 2], "name": ["a", "b"]}
    with pytest.raises(OSError, match="ACCESS_DENIED"):
        reader.get_table("default.events").append(daft.from_pydict({"id": [3], "name": ["c"]}))
    assert writer.read_table("default.events").to_pydict() == {"id": [1, 2], "name": ["a", "b"]}
