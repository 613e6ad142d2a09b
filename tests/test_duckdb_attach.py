"""DuckDB 1.5 (its unity_catalog, delta and httpfs extensions, unmodified, loaded offline) attaching a
catalog as its documentation shows: `ATTACH 'cat' AS lake (TYPE UNITY_CATALOG, SECRET uc)`, without
DEFAULT_SCHEMA, on a catalog that holds managed and external Delta tables.

Without DEFAULT_SCHEMA the extension asks Databricks' workspace setting
`GET /api/2.0/settings/types/default_namespace_ws/names/default` and takes its `setting_name` as
the attached catalog's default schema (unity_catalog's UCAPI::GetDefaultSchema; a failed request
leaves it empty). A managed table needs it even when named in full: the Delta catalog the extension
attaches for a catalog-managed table looks its commit function up in the parent catalog's default
schema (duckdb-delta's DeltaCatalogAttach, `parent_commit`), and an empty one raises "Default schema
for catalog 'lake' not found". DuckDB 1.5 cannot CREATE or DROP tables or schemas there; it reads,
and INSERTs into managed tables through `/delta/v1`."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from deltalake import write_deltalake
from django.contrib.auth import get_user_model
from django.test import Client

from catalog.models import AuditEvent, Table
from commits.models import DeltaCommit
from commits.staged import declared_operation
from tests.delta_v1_client import DeltaV1Client
from tests.duckdb_sessions import DELTA_EXTENSIONS, duckdb_with, sql_string
from tests.helpers import UC, grant

live = pytest.mark.django_db(transaction=True)

SETTING = "/api/2.0/settings/types/default_namespace_ws/names/default"
VISIT_COLUMNS = [{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0},
                 {"name": "city", "type_name": "STRING", "type_text": "string", "position": 1}]


def http_log(con: duckdb.DuckDBPyConnection) -> str:
    return "\n".join(str(row[0])[:300] for row in con.execute("SELECT message FROM duckdb_logs WHERE type = 'HTTP'").fetchall())


def attach(server_url: str, token: str, catalog: str = "shop", options: str = "") -> duckdb.DuckDBPyConnection:
    """A DuckDB session with `catalog` attached as `lake`, as the extension's documentation shows."""
    con = duckdb_with(DELTA_EXTENSIONS)
    con.execute("CALL enable_logging('HTTP')")  # what it asked, for the failure messages below
    con.execute(f"CREATE SECRET uc (TYPE unity_catalog, TOKEN {sql_string(token)}, "
                f"ENDPOINT {sql_string(server_url)})")
    con.execute(f"ATTACH {sql_string(catalog)} AS lake (TYPE UNITY_CATALOG, SECRET uc{options})")
    return con


@pytest.fixture
def shop(live_server, bootstrap, make_token, make_client, storage_root, tmp_path):
    """Catalog `shop`: schema `default` with managed table `cities`, schema `crm` with managed table
    `orders` and external Delta table `visits` (two rows, written by delta-rs). Returns a
    function that attaches it for a principal."""
    admin = make_client("admin", admin=True)
    for path, body in [("/catalogs", {"name": "shop"}),
                       ("/schemas", {"name": "default", "catalog_name": "shop"}),
                       ("/schemas", {"name": "crm", "catalog_name": "shop"})]:
        assert admin.post(f"{UC}{path}", body, format="json").status_code == 200
    v1 = DeltaV1Client(f"{live_server.url}{UC}", make_token("admin", admin=True))
    v1.create_table("shop", "default", "cities")
    v1.create_table("shop", "crm", "orders")
    location = (tmp_path / "visits").as_uri()
    write_deltalake(location, pa.table({"id": pa.array([1, 2], pa.int64()), "city": ["Oslo", "Quito"]}))
    response = admin.post(f"{UC}/tables", {
        "name": "visits", "catalog_name": "shop", "schema_name": "crm", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": location, "columns": VISIT_COLUMNS}, format="json")
    assert response.status_code == 200, response.content
    return lambda name="admin", **kwargs: attach(live_server.url, make_token(name, admin=name == "admin"), **kwargs)


@pytest.mark.django_db
def test_the_default_namespace_setting_is_databricks_own(client, make_client, settings):
    answer = make_client("nobody").get(SETTING)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["setting_name"] == "default" and body["namespace"] == {"value": "unity"} and body["etag"]
    settings.UCWEB_DEFAULT_WAREHOUSE = "lake"
    moved = make_client("nobody").get(SETTING).json()
    assert moved["namespace"] == {"value": "lake"} and moved["etag"] != body["etag"]
    assert client.get(SETTING).status_code == 401
    refused = make_client("admin", admin=True).patch(SETTING, {"namespace": {"value": "x"}}, format="json")
    assert refused.status_code == 405 and refused.json()["error_code"] == "METHOD_NOT_ALLOWED"


@live
def test_documented_attach_lists_reads_and_writes(shop, live_server):
    con = shop()
    listed = {(schema, name): columns for database, schema, name, columns, _, _ in
              con.execute("SHOW ALL TABLES").fetchall() if database == "lake"}
    assert listed == {("default", "cities"): ["id", "city"], ("crm", "orders"): ["id", "city"],
                      ("crm", "visits"): ["id", "city"]}, http_log(con)
    assert sorted(con.execute("SELECT id, city FROM lake.crm.visits").fetchall()) == [(1, "Oslo"), (2, "Quito")]
    assert con.execute("SELECT * FROM lake.crm.orders").fetchall() == []
    assert con.execute("SELECT * FROM lake.cities").fetchall() == []  # through the default schema
    con.execute("INSERT INTO lake.crm.orders VALUES (1, 'Paris'), (2, 'Lyon')")
    con.execute("INSERT INTO lake.cities VALUES (3, 'Nantes')")
    for statement in ("CREATE TABLE lake.crm.made (id BIGINT)", "DROP TABLE lake.crm.visits",
                      "CREATE SCHEMA lake.more"):
        with pytest.raises(duckdb.NotImplementedException):  # not in DuckDB 1.5's unity_catalog
            con.execute(statement)

    other = shop()
    assert sorted(other.execute("SELECT id, city FROM lake.crm.orders").fetchall()) == [(1, "Paris"), (2, "Lyon")]
    assert other.execute("SELECT id, city FROM lake.default.cities").fetchall() == [(3, "Nantes")]
    assert sorted(Table.objects.filter(schema__catalog__name="shop").values_list("name", flat=True)) == [
        "cities", "orders", "visits"]

    # DuckDB names no operation (delta-kernel-rs then writes its placeholder "UNKNOWN"): recorded and
    # shown as not sent, with the engine it declared.
    commits = list(DeltaCommit.objects.filter(table__schema__catalog__name="shop"))
    assert [(c.operation, c.engine_info) for c in commits] == [("", "DuckDB"), ("", "DuckDB")]
    get_user_model().objects.create_superuser("admin", "admin@example.com", "pw")
    console = Client()
    console.force_login(get_user_model().objects.get(username="admin"))
    orders = Table.objects.get(name="orders")
    for page in (f"/admin/catalog/table/{orders.id}/change/", "/admin/commits/deltacommit/"):
        text = console.get(page).content.decode()
        assert "not sent" in text and "DuckDB" in text and "UNKNOWN" not in text, page


@live
def test_a_catalog_without_a_default_schema_needs_default_schema_on_attach(shop, make_client):
    assert make_client("admin", admin=True).delete(f"{UC}/schemas/shop.default?force=true").status_code == 200
    with pytest.raises(duckdb.Error, match="__internal_delta_ccv2_commit_staged"):
        shop().execute("SELECT * FROM lake.crm.orders")
    assert shop(options=", DEFAULT_SCHEMA 'crm'").execute("SELECT * FROM lake.orders").fetchall() == []


@live
def test_a_principal_reads_and_writes_only_what_its_grants_allow(shop):
    for name, table, privileges in [("bob", "shop.crm.visits", ["SELECT"]), ("carol", "shop.crm.orders", ["SELECT"])]:
        grant(name, "catalog", "shop", "USE CATALOG")
        grant(name, "schema", "shop.crm", "USE SCHEMA")
        grant(name, "schema", "shop.default", "USE SCHEMA")
        grant(name, "table", table, *privileges)

    bob = shop("bob")
    assert ("lake", "crm", "orders") not in {row[:3] for row in bob.execute("SHOW ALL TABLES").fetchall()}
    errors = {}
    for name in ("orders", "nope"):  # hidden answers as missing
        with pytest.raises(duckdb.CatalogException) as refused:
            bob.execute(f"SELECT * FROM lake.crm.{name}")
        errors[name] = str(refused.value).replace(name, "<table>").splitlines()[0]  # not DuckDB's guesses
    assert errors["orders"] == errors["nope"]

    carol = shop("carol")
    assert carol.execute("SELECT * FROM lake.crm.orders").fetchall() == []
    orders = Table.objects.get(name="orders")
    with pytest.raises(duckdb.Error, match="(?i)permission|MODIFY"):
        carol.execute("INSERT INTO lake.crm.orders VALUES (9, 'Lille')")
    assert Table.objects.get(id=orders.id).latest_version == 0
    assert not DeltaCommit.objects.filter(table=orders).exists()
    assert AuditEvent.objects.filter(principal="carol", securable_name="shop.crm.orders", outcome="DENIED").exists()


@pytest.mark.parametrize("commit_info, declared", [
    ({"operation": "WRITE", "engineInfo": "Apache-Spark/3.5.3 Delta-Lake/4.0.0"}, "WRITE"),
    ({"operation": "UNKNOWN", "kernelVersion": "v0.21.0", "engineInfo": "DuckDB"}, None),  # DuckDB 1.5
    ({"operation": "UNKNOWN"}, "UNKNOWN"),  # a writer's own word
    ({"operation": ""}, None), ({"operation": 7}, None), ({}, None),
])
def test_the_operation_a_commit_declares(commit_info, declared):
    assert declared_operation(commit_info) == declared
