"""A table's console page in Chromium, on tables real engines wrote: Sail (Delta, through the
legacy commits API), DuckDB (Delta, through /delta/v1: its commits declare no operation of their
own), pyiceberg (Iceberg). Each page is opened as a metastore admin, as the schema's owner, as a
principal holding SELECT only and as one holding MODIFY but no SELECT; screenshots go to
var/screenshots/ like the other browser tests."""

from __future__ import annotations

import pyarrow as pa
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import call_command

from catalog.models import AuditEvent, Column, Principal, Table
from maintenance.models import MaintenancePlan
from catalog.services import permissions, principals, schemas, tables
from commits.delta_state import commit_actions
from commits.models import DeltaCommit
from tests.duckdb_sessions import unity_duckdb
from tests.test_console_browser import PASSWORD, Console, driver  # noqa: F401 - the browser fixture
from tests.test_sail import connect, managed, rows, sail, sail_catalog, sail_storage, sail_token  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("console_browser")]

VIEWERS = ("admin", "olga", "sam", "nina")  # metastore admin, schema owner, SELECT only, no SELECT


def staff(name: str, *, superuser: bool = False) -> None:
    user = get_user_model().objects.create_user(name, f"{name}@example.com", PASSWORD, is_staff=True,
                                                is_superuser=superuser)
    if not superuser:
        user.user_permissions.set(Permission.objects.filter(codename__in=("view_table", "view_deltacommit")))


def as_viewer(driver, live_server, name: str) -> Console:  # noqa: F811 - the fixture's value
    console = Console(driver, live_server.url)
    driver.delete_all_cookies()
    console.login(name)
    return console


def grant(securable_type: str, full_name: str, principal: str, *privileges: str) -> None:
    admin = Principal.objects.get(name="admin")
    permissions.update_permissions(caller=admin, securable_type=securable_type, full_name=full_name,
                                   changes=[{"principal": principal, "add": list(privileges)}])


def viewers(table_name: str) -> None:
    """olga owns the schema; sam holds SELECT on the table; nina holds MODIFY on it, no SELECT."""
    admin = Principal.objects.get(name="admin")
    staff("admin", superuser=True)
    for name in VIEWERS[1:]:
        principals.ensure_principal(name=name)
        staff(name)
        grant("catalog", "unity", name, "USE CATALOG")
    schemas.update_schema(caller=admin, full_name="unity.default", fields={"owner": "olga"})
    for name in ("sam", "nina"):
        grant("schema", "unity.default", name, "USE SCHEMA")
    grant("table", f"unity.default.{table_name}", "sam", "SELECT")
    grant("table", f"unity.default.{table_name}", "nina", "MODIFY")


def views_on(table_name: str) -> None:
    """Two views reading the table: sam may see `daily`, nobody but the owners `secret_totals`."""
    admin = Principal.objects.get(name="admin")
    for name, sql in (("daily", f"SELECT city, count(*) AS n FROM unity.default.{table_name} GROUP BY city"),
                      ("secret_totals", f"select count(*) from `default`.{table_name} -- FROM nowhere.at.all")):
        tables.create_table(caller=admin, name=name, catalog_name="unity", schema_name="default", table_type="VIEW",
                            view_definition=sql, columns=[{"name": "n", "type_name": "LONG"}],
                            view_dependencies={"dependencies": [
                                {"table": {"table_full_name": f"unity.default.{table_name}"}}]}
                            if name == "daily" else None)
    grant("table", "unity.default.daily", "sam", "SELECT")


# -- Delta: Sail writes, DuckDB writes ------------------------------------------------------------
@pytest.mark.spark
def test_a_delta_table_page_as_four_principals(connect, driver, live_server, make_token):  # noqa: F811
    spark = connect()
    spark.sql("CREATE TABLE unity.default.cities (id INT NOT NULL COMMENT 'the key', city STRING) USING DELTA "
              "TBLPROPERTIES ('quality' = 'gold')")
    spark.sql("INSERT INTO unity.default.cities VALUES (1, 'Lisbon'), (2, 'Porto'), (3, NULL)")
    wider = spark.createDataFrame([(4, "Braga", "PT")], "id INT, city STRING, country STRING")
    wider.write.format("delta").mode("append").option("mergeSchema", "true").saveAsTable("unity.default.cities")
    table = managed("cities")
    viewers("cities")
    views_on("cities")
    principals.ensure_principal(name="wendy")
    grant("catalog", "unity", "wendy", "USE CATALOG")  # a writer of her own: DuckDB reads before it writes
    grant("schema", "unity.default", "wendy", "USE SCHEMA")
    grant("table", "unity.default.cities", "wendy", "SELECT", "MODIFY")
    duck = unity_duckdb(live_server.url, make_token("wendy"))
    duck.execute("INSERT INTO lake.default.cities VALUES (5, 'Faro', 'PT')")
    duck_commit = DeltaCommit.objects.get(table=table, version=3)
    # DuckDB's writer (delta-kernel) declares no operation of its own: UNKNOWN, or nothing at all.
    assert duck_commit.ratified_by == "wendy" and duck_commit.operation in ("UNKNOWN", "")

    console = as_viewer(driver, live_server, "admin")
    page = f"/admin/catalog/table/{table.id}/change/"
    console.open(page, expect="#history")
    versions = console.all("#history tr.uc-version")
    assert [v.get_attribute("data-version") for v in versions] == ["3", "2", "1", "0"]
    newest, merge, insert, create = (v.text for v in versions)
    assert "wendy" in newest and "WRITE (append)" in newest and "1 / 0" in newest
    assert console.all("#history tr[data-version='3'] td.uc-operation em")  # marked as derived
    assert "added column country string" in merge and "admin" in merge
    # Sail's schema merge wrote the old columns back without NOT NULL and the comment: the diff says so.
    assert "changed column id int — now nullable; comment the key → (none)" in merge
    assert "3 / 0" in insert  # rows from the files' statistics
    assert "added column id int — NOT NULL" in create and "set property quality → gold" in create
    assert "admin" in create  # version 0: the table's creator (the catalog ratifies no commit for it)
    console.shot("table-01-delta-history-admin")
    # Django's History button leads to the timeline.
    console.open(f"/admin/catalog/table/{table.id}/history/", expect="#history")
    assert console.driver.current_url.endswith(page + "#history")

    console.select("#id_a", "1")
    console.select("#id_b", "3")
    console.css("#compare-submit").click()
    compared = console.css("#compare").text
    assert "Version 1 → version 3" in compared and "added column country" in compared
    assert "3 → 5" in compared  # rows, from the log's statistics at both versions
    console.shot("table-02-delta-compare")

    lineage = console.css("#lineage").text
    assert "unity.default.daily" in lineage and "unity.default.secret_totals" in lineage
    assert {"admin", "wendy"} <= set(console.css("#lineage-writers").text.split())
    console.css("#preview-link").click()
    console.css("#preview-rows")
    shown = sorted(row.text for row in console.all("#preview-rows tbody tr"))
    assert shown == ["1 Lisbon NULL", "2 Porto NULL", "3 NULL NULL", "4 Braga PT", "5 Faro PT"]
    city = console.css("#preview-statistics tr[data-column='city']").text
    assert city.split()[:4] == ["city", "1", "Braga", "Porto"]
    assert AuditEvent.objects.filter(action="previewTable", principal="admin", securable_id=table.id,
                                     outcome="SUCCESS").count() == 1
    ddl = console.css("#ddl-text").text
    assert ddl.startswith("CREATE TABLE `unity`.`default`.`cities` (\n  `id` INT,\n  `city` STRING,")
    assert "USING DELTA" in ddl and "'quality' = 'gold'" in ddl
    assert "io.unitycatalog" not in ddl and "delta.feature" not in ddl  # the catalog's and the protocol's own
    console.shot("table-03-delta-preview-admin")

    # The catalog's own runs: OPTIMIZE commits version 4, CHECKPOINT writes a checkpoint of it.
    call_command("run_maintenance", "unity.default.cities", "--operation", "OPTIMIZE")
    call_command("run_maintenance", "unity.default.cities", "--operation", "CHECKPOINT")
    assert Table.objects.get(id=table.id).latest_version == 4
    console.open(page, expect="#history")
    optimized = console.css("#history tr[data-version='4']").text
    assert "OPTIMIZE" in optimized and "catalog" in optimized and "checkpoint" in optimized
    assert MaintenancePlan.objects.get(operation="OPTIMIZE").status == "SUCCEEDED"
    actions = commit_actions(table, 4)  # the files the OPTIMIZE commit added and removed, as the log says
    added, removed = (sum(1 for a in actions if kind in a) for kind in ("add", "remove"))
    assert removed >= 2 and f" / — {added} / {removed} " in optimized  # rows removed: removes carry no statistics
    console.shot("table-03b-delta-after-maintenance")

    # The DDL makes the same table under a fresh name.
    spark.sql(ddl.replace("`cities`", "`cities_again`"))
    again = managed("cities_again")
    assert [(c.name, c.type_name, c.nullable, c.comment) for c in Column.objects.filter(table=again)] == [
        (c.name, c.type_name, c.nullable, c.comment) for c in Column.objects.filter(table=table)]
    assert again.properties["quality"] == "gold"
    assert rows(spark, "SELECT count(*) FROM unity.default.cities_again") == [(0,)]

    console = as_viewer(driver, live_server, "olga")  # the schema's owner: everything, as its owner
    console.open(page, expect="#history")
    assert len(console.all("#history tr.uc-version")) == 5
    assert "unity.default.secret_totals" in console.css("#lineage").text
    console.css("#preview-link").click()
    assert len(console.all("#preview-rows tbody tr")) == 5
    console.shot("table-04-delta-schema-owner")

    console = as_viewer(driver, live_server, "sam")  # SELECT only: the view it may see, not the other
    console.open(page, expect="#history")
    lineage = console.css("#lineage").text
    assert "unity.default.daily" in lineage and "secret_totals" not in console.driver.page_source
    console.css("#preview-link").click()
    assert len(console.all("#preview-rows tbody tr")) == 5
    assert "CREATE TABLE" in console.css("#ddl-text").text
    console.shot("table-05-delta-select-only")
    daily = Table.objects.get(name="daily")  # the view's page: what it reads, no rows of its own
    console.open(f"/admin/catalog/table/{daily.id}/change/", expect="#lineage")
    assert console.css("#lineage-upstream").text == "unity.default.cities"
    assert "A view has no versions" in console.css("#history").text and not console.all("#ddl")
    assert "A view holds no data files" in console.css("#preview").text
    console.shot("table-05b-view-select-only")

    console = as_viewer(driver, live_server, "nina")  # MODIFY, no SELECT: no rows, no statistics
    console.open(page, expect="#history")
    assert len(console.all("#history tr.uc-version")) == 5
    refused = console.css("#preview-refused").text
    assert "No preview" in refused and "SELECT" in refused
    assert not console.all("#preview-link") and not console.all("#preview-statistics")
    assert "daily" not in console.css("#lineage").text  # no SELECT on either view
    console.open(page + "?preview=1", expect="#preview-refused")  # asking anyway shows nothing, audited
    assert not console.all("#preview-rows") and "Lisbon" not in console.driver.page_source
    assert AuditEvent.objects.filter(action="previewTable", principal="nina", outcome="DENIED").count() == 1
    console.shot("table-06-delta-no-select")


# -- Iceberg: pyiceberg writes --------------------------------------------------------------------
def test_an_iceberg_table_page_as_four_principals(driver, live_server, make_token, bootstrap):  # noqa: F811
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.schema import Schema as IcebergSchema
    from pyiceberg.types import LongType, NestedField, StringType

    catalog = RestCatalog("ucweb", uri=f"{live_server.url}/api/catalog", warehouse="unity",
                          token=make_token("admin", admin=True))
    trips = catalog.create_table("default.trips", IcebergSchema(
        NestedField(1, "id", LongType(), required=True), NestedField(2, "city", StringType(), required=False)))
    arrow = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("city", pa.string())])
    trips.append(pa.Table.from_pylist([{"id": 1, "city": "Oslo"}, {"id": 2, "city": None}], schema=arrow))
    with trips.update_schema() as update:
        update.add_column("fare", LongType(), doc="in cents")
    with trips.transaction() as transaction:
        transaction.set_properties(owner_team="mobility")
    trips.append(pa.Table.from_pylist([{"id": 3, "city": "Bergen", "fare": 1250}], schema=pa.schema(
        [pa.field("id", pa.int64(), nullable=False), pa.field("city", pa.string()), pa.field("fare", pa.int64())])))
    table = Table.objects.get(name="trips")
    viewers("trips")

    console = as_viewer(driver, live_server, "admin")
    page = f"/admin/catalog/table/{table.id}/change/"
    console.open(page, expect="#history")
    entries = [e.text for e in console.all("#history tr.uc-version")]
    assert len(entries) == 5
    appended, properties, schema, first, created = entries
    assert "append" in appended and "1 / 0" in appended
    assert "set property owner_team" in properties and "mobility" in properties
    assert "added column fare long" in schema
    assert "append" in first and "2 /" in first
    assert "create table" in created and "added column id long — NOT NULL" in created
    assert all("admin" in e for e in entries)
    console.shot("table-07-iceberg-history-admin")
    keys = [e.get_attribute("data-version") for e in console.all("#history tr.uc-version")]
    console.open(f"{page}?a={keys[-1]}&b={keys[0]}#compare", expect="#compare")
    compared = console.css("#compare").text
    assert "added column fare" in compared and "0 → 3" in compared and "owner_team" in compared
    console.open(f"{page}?a={keys[0]}&b=nonsense", expect="#compare")
    assert "one of those named is not one of its versions" in console.css("#compare").text

    console.open(page + "?preview=1#preview", expect="#preview-rows")
    assert sorted(r.text for r in console.all("#preview-rows tbody tr")) == [
        "1 Oslo NULL", "2 NULL NULL", "3 Bergen 1250"]
    city = console.css("#preview-statistics tr[data-column='city']").text
    assert city.split()[:4] == ["city", "1", "Bergen", "Oslo"]
    ddl = console.css("#ddl-text").text
    assert "USING ICEBERG" in ddl and "`id` BIGINT NOT NULL" in ddl and "`fare` BIGINT COMMENT 'in cents'" in ddl
    console.shot("table-08-iceberg-preview-admin")

    for name, sees_rows in (("olga", True), ("sam", True), ("nina", False)):
        console = as_viewer(driver, live_server, name)
        console.open(page + "?preview=1#preview", expect="#history")
        assert len(console.all("#history tr.uc-version")) == 5
        assert bool(console.all("#preview-rows")) is sees_rows
        assert ("Bergen" in console.driver.page_source) is sees_rows
        console.shot(f"table-09-iceberg-{name}")
    assert AuditEvent.objects.filter(action="previewTable", securable_id=table.id, outcome="SUCCESS").count() == 3


@pytest.mark.spark
def test_the_generated_ddl_makes_the_same_table_in_sail(connect):  # noqa: F811
    from catalog.admin import ddl

    spark = connect()
    spark.sql("CREATE TABLE unity.default.stations (id BIGINT NOT NULL COMMENT 'the station\\'s number', "
              "region STRING, opened DATE, price DECIMAL(9,2), tags ARRAY<STRING>, "
              "position STRUCT<lat: DOUBLE, lon: DOUBLE>) USING DELTA PARTITIONED BY (region) "
              "TBLPROPERTIES ('quality' = 'silver', 'delta.appendOnly' = 'false')")
    table = managed("stations")
    statement = ddl.create_table(table, table.columns.all())
    assert "`id` BIGINT NOT NULL COMMENT 'the station\\'s number'" in statement
    assert "PARTITIONED BY (`region`)" in statement and "LOCATION" not in statement
    spark.sql(statement.replace("`stations`", "`stations_copy`"))
    copy = managed("stations_copy")

    def described(row):
        return [(c.name, c.type_text, c.type_name, c.nullable, c.comment, c.partition_index)
                for c in Column.objects.filter(table=row).order_by("position")]

    assert described(copy) == described(table)
    assert {k: copy.properties.get(k) for k in ("quality", "delta.appendOnly")} == {
        "quality": "silver", "delta.appendOnly": "false"}


# -- the page's queries do not grow with the catalog ---------------------------------------------
def test_the_table_page_makes_as_many_queries_in_a_catalog_of_ten_thousand_tables(delta):
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from catalog.models import Schema
    from tests.query_pins import assert_query_count

    created = delta.create_table("unity", "default", "events")
    for version in (1, 2):
        delta.append(created.table_id, created.storage_location, version, f"p{version}.parquet")
    principals.ensure_principal(name="sam")
    staff("sam")
    views_on("events")
    for securable_type, name, privilege in (("catalog", "unity", "USE CATALOG"),
                                            ("schema", "unity.default", "USE SCHEMA"),
                                            ("table", "unity.default.events", "SELECT")):
        grant(securable_type, name, "sam", privilege)
    client = Client()
    client.force_login(get_user_model().objects.get(username="sam"))
    page = f"/admin/catalog/table/{created.table_id}/change/"

    def measured() -> int:
        client.get(page)  # the first request warms lazy imports and caches
        with CaptureQueriesContext(connection) as queries:
            response = client.get(page)
        assert response.status_code == 200 and b'id="history"' in response.content
        assert b"unity.default.daily" in response.content and b"secret_totals" not in response.content
        return len(queries.captured_queries)

    small = measured()
    # The History button of a table sam may not see answers as that of a table that does not exist.
    hidden = client.get(f"/admin/catalog/table/{Table.objects.get(name='secret_totals').id}/history/")
    missing = client.get("/admin/catalog/table/00000000-0000-0000-0000-000000000007/history/")
    assert hidden.status_code == missing.status_code == 404 and hidden.content == missing.content
    assert client.get(page.replace("/change/", "/history/"))["Location"] == page + "#history"
    schema = Schema.objects.get(catalog__name="unity", name="default")
    Table.objects.bulk_create(
        Table(schema=schema, name=f"t{i:05}", owner="admin", created_by="admin",
              table_type="VIEW" if i % 10 == 0 else "EXTERNAL", data_source_format="DELTA",
              view_definition="SELECT * FROM unity.default.events" if i % 10 == 0 else None,
              storage_location=None if i % 10 == 0 else f"file:///lake/t{i:05}")
        for i in range(10_000))
    assert Table.objects.count() > 10_000
    assert measured() == small
    assert_query_count("console table page", small)
