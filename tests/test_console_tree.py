"""The console's tree and search: each shows only what the console user's principal may see (a
metastore admin, a schema's owner, a principal holding SELECT on one table), the tree reads a
page of each open list whatever the size of the catalog, and catalogs, schemas and volumes are
created from it through the services the API calls (a refusal shows the service's message, is
audited and changes nothing)."""

from __future__ import annotations

import re
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from catalog.models import AuditEvent, Catalog, Principal, Schema, Table, Volume
from catalog.services import catalogs, functions, principals, registered_models, schemas, tables, volumes
from tests.helpers import grant
from tests.query_pins import assert_query_count
from tests.test_console_browser import PASSWORD, Console, driver  # noqa: F401 - the browser fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("console_browser")]

TREE = "/admin/catalog/catalog/tree/"
SEARCH = "/admin/catalog/catalog/search/"


def function_info(catalog: str, schema: str, name: str) -> dict:
    return {"name": name, "catalog_name": catalog, "schema_name": schema, "comment": "adds one",
            "input_params": {"parameters": [{"name": "x", "type_text": "int", "type_json": '{"type":"int"}',
                                             "type_name": "INT", "position": 0}]},
            "data_type": "INT", "full_data_type": "int", "routine_body": "SQL", "routine_definition": "x + 1",
            "parameter_style": "S", "is_deterministic": True, "sql_data_access": "CONTAINS_SQL",
            "is_null_call": False, "security_type": "DEFINER", "specific_name": name}


def view(admin, catalog, schema, name, columns, comment=None):
    tables.create_table(caller=admin, name=name, catalog_name=catalog, schema_name=schema, table_type="VIEW",
                        view_definition="select 1", comment=comment,
                        columns=[{"name": column, "type_name": "LONG"} for column in columns])


@pytest.fixture
def world(bootstrap, storage_root):
    """sales.orders holds ext_orders (a view, column order_total), secret_payroll (column
    salary_band), a volume, a function and a model; sales.olga_space belongs to olga; catalog hr
    (schema people, table reviews) is the admin's alone. sam holds USE CATALOG on sales, USE SCHEMA
    on sales.orders and SELECT on ext_orders, nothing more; olga holds USE CATALOG and CREATE
    SCHEMA on sales. Each has a console login (a Django superuser acting as the principal)."""
    admin = Principal.objects.get(name="admin")
    for name in ("olga", "sam"):
        principals.ensure_principal(name=name)
    catalogs.create_catalog(caller=admin, name="sales", comment="Sales data")
    schemas.create_schema(caller=admin, name="orders", catalog_name="sales", comment="Orders by day")
    view(admin, "sales", "orders", "ext_orders", ["id", "order_total"], comment="Orders shipped abroad")
    view(admin, "sales", "orders", "secret_payroll", ["id", "salary_band"], comment="Who earns what")
    volumes.create_volume(caller=admin, name="landing", catalog_name="sales", schema_name="orders",
                          volume_type="MANAGED", comment="Raw files")
    functions.create_function(caller=admin, function_info=function_info("sales", "orders", "plus_one"))
    registered_models.create_model(caller=admin, name="churn", catalog_name="sales", schema_name="orders")
    catalogs.create_catalog(caller=admin, name="hr", comment="People data")
    schemas.create_schema(caller=admin, name="people", catalog_name="hr")
    view(admin, "hr", "people", "reviews", ["id", "rating"])
    grant("sam", "catalog", "sales", "USE CATALOG")
    grant("sam", "schema", "sales.orders", "USE SCHEMA")
    grant("sam", "table", "sales.orders.ext_orders", "SELECT")
    grant("olga", "catalog", "sales", "USE CATALOG", "CREATE SCHEMA")
    olga = Principal.objects.get(name="olga")
    schemas.create_schema(caller=olga, name="olga_space", catalog_name="sales", comment="Olga's sandbox")
    view(olga, "sales", "olga_space", "olga_notes", ["note"])
    for name in ("admin", "olga", "sam"):
        get_user_model().objects.create_superuser(name, f"{name}@example.com", PASSWORD)
    return {name: Principal.objects.get(name=name) for name in ("admin", "olga", "sam")}


def client_of(name: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=name))
    return client


def text_of(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def opened(*rows) -> str:
    return "?" + "&".join(f"open={row.id}" for row in rows)


def tree_names(response) -> set[str]:
    return set(re.findall(r'data-name="([^"]+)"', response.content.decode()))


# -- the tree, per principal ----------------------------------------------------------------------------
def test_the_tree_shows_each_principal_what_it_may_see(world):
    sales, hr = Catalog.objects.get(name="sales"), Catalog.objects.get(name="hr")
    orders = Schema.objects.get(name="orders")
    space = Schema.objects.get(name="olga_space")
    people = Schema.objects.get(name="people")
    everything = opened(sales, hr, orders, space, people)

    admin = tree_names(client_of("admin").get(TREE + everything))
    assert {"sales", "hr", "unity", "sales.orders", "sales.olga_space", "hr.people", "ext_orders",
            "secret_payroll", "landing", "plus_one", "churn", "olga_notes", "reviews"} <= admin

    olga = tree_names(client_of("olga").get(TREE + everything))
    assert {"sales", "sales.olga_space", "olga_notes"} <= olga
    assert not {"hr", "hr.people", "reviews", "sales.orders", "ext_orders", "secret_payroll", "landing"} & olga

    sam_page = client_of("sam").get(TREE + everything)
    sam = tree_names(sam_page)
    assert sam == {"sales", "sales.orders", "ext_orders"}
    # Nothing of what sam may not see reaches the page, not even as text.
    page = sam_page.content.decode()
    for hidden in ("secret_payroll", "landing", "plus_one", "churn", "olga_space", "olga_notes", "reviews",
                   "People data", str(hr.id), str(people.id)):
        assert hidden not in page
    # sam creates nothing here: no form is offered.
    assert "New schema" not in page and "New volume" not in page and "New catalog" not in page


def test_a_forged_address_reveals_nothing(world):
    hr, people = Catalog.objects.get(name="hr"), Schema.objects.get(name="people")
    sam = client_of("sam")
    for query in (opened(hr, people), f"?open=not-a-uuid&at={people.id}:table:abc&at=root:catalog:99999",
                  f"?at={uuid.uuid4()}:nonsense:1&open={uuid.uuid4()}"):
        response = sam.get(TREE + query)
        assert response.status_code == 200
        assert tree_names(response) == {"sales"}
        assert "reviews" not in response.content.decode()


# -- creation from the tree --------------------------------------------------------------------------------
def create(client, **fields):
    data = {"comment": "", "catalog_name": "", "schema_name": "", "state": "", **fields}
    return client.post(TREE + "create/", data, follow=True)


def test_create_a_catalog_a_schema_and_a_volume_through_the_services(world):
    admin = client_of("admin")
    response = create(admin, kind="catalog", name="marketing", comment="Campaigns")
    assert "Created catalog marketing." in text_of(response)
    marketing = Catalog.objects.get(name="marketing")
    assert (marketing.owner, marketing.comment) == ("admin", "Campaigns")
    assert f"open={marketing.id}" in response.redirect_chain[-1][0]  # the new catalog is open

    olga = client_of("olga")
    response = create(olga, kind="schema", catalog_name="sales", name="olga_two", state=f"open={world['olga'].id}")
    assert "Created schema sales.olga_two." in text_of(response)
    assert Schema.objects.get(name="olga_two").owner == "olga"
    response = create(olga, kind="volume", catalog_name="sales", schema_name="olga_space", name="drops",
                      volume_type="MANAGED")
    assert "Created volume sales.olga_space.drops." in text_of(response)
    assert Volume.objects.get(name="drops").owner == "olga"
    for action, name in (("createCatalog", "marketing"), ("createSchema", "sales.olga_two"),
                         ("createVolume", "sales.olga_space.drops")):
        event = AuditEvent.objects.get(action=action, securable_name=name)
        assert event.outcome == "SUCCESS" and event.principal in ("admin", "olga")


def test_a_refused_creation_shows_the_services_message_is_audited_and_changes_nothing(world):
    counts = (Catalog.objects.count(), Schema.objects.count(), Volume.objects.count())
    sam = client_of("sam")
    cases = [
        ({"kind": "catalog", "name": "mine"}, "Missing CREATE CATALOG on the metastore.", "DENIED"),
        ({"kind": "schema", "catalog_name": "sales", "name": "mine"}, "Missing CREATE SCHEMA on catalog sales.",
         "DENIED"),
        ({"kind": "volume", "catalog_name": "sales", "schema_name": "orders", "name": "mine",
          "volume_type": "MANAGED"}, "CREATE VOLUME", "DENIED"),
        # A catalog sam may not see answers as a missing one.
        ({"kind": "schema", "catalog_name": "hr", "name": "mine"}, "Catalog not found: hr", "DENIED"),
        ({"kind": "schema", "catalog_name": "nowhere", "name": "mine"}, "Catalog not found: nowhere",
         "FAILED"),
    ]
    for fields, message, outcome in cases:
        response = create(sam, **fields)
        assert response.status_code == 200
        assert message in text_of(response), text_of(response)
        assert AuditEvent.objects.filter(principal="sam", outcome=outcome,
                                         action=f"create{fields['kind'].title()}").exists()
    admin = client_of("admin")
    for fields, message in (({"kind": "schema", "catalog_name": "sales", "name": "orders"}, "already exists"),
                            ({"kind": "schema", "catalog_name": "sales", "name": "bad name!"}, "name"),
                            ({"kind": "volume", "catalog_name": "sales", "schema_name": "orders", "name": "v",
                              "volume_type": "EXTERNAL"}, "storage_location is required"),
                            ({"kind": "catalog", "name": ""}, "Nothing was created."),
                            ({"kind": "table", "name": "t"}, "Nothing was created.")):
        response = create(admin, **fields)
        assert response.status_code == 200 and message.lower() in text_of(response).lower(), text_of(response)
    assert (Catalog.objects.count(), Schema.objects.count(), Volume.objects.count()) == counts
    assert client_of("admin").get(TREE + "create/").status_code == 302


# -- search -------------------------------------------------------------------------------------------------
def found(client, text) -> set[tuple[str, str]]:
    response = client.get(SEARCH, {"q": text})
    assert response.status_code == 200
    return set(re.findall(r'class="uc-hit" data-kind="([^"]+)" data-name="([^"]+)"', response.content.decode()))


def test_search_finds_by_name_comment_and_column_what_the_viewer_sees(world):
    admin, olga, sam = client_of("admin"), client_of("olga"), client_of("sam")
    assert found(admin, "ORDERS") == {("schema", "sales.orders"), ("view", "sales.orders.ext_orders")}
    assert found(admin, "salary_band") == {("view", "sales.orders.secret_payroll")}
    assert found(admin, "earns") == {("view", "sales.orders.secret_payroll")}  # its comment
    assert found(admin, "raw files") == {("volume", "sales.orders.landing")}
    assert found(admin, "plus") == {("function", "sales.orders.plus_one")}
    assert found(admin, "churn") == {("registered_model", "sales.orders.churn")}
    assert found(admin, "people") == {("catalog", "hr"), ("schema", "hr.people")}
    # The SELECT-only principal finds what it reads, never a hidden name or column.
    assert found(sam, "order_total") == {("view", "sales.orders.ext_orders")}
    assert found(sam, "orders") == {("schema", "sales.orders"), ("view", "sales.orders.ext_orders")}
    for hidden in ("secret_payroll", "salary_band", "earns", "landing", "plus_one", "churn", "hr", "people",
                   "reviews", "rating", "olga"):
        assert found(sam, hidden) == set(), hidden
    assert found(olga, "o") >= {("schema", "sales.olga_space"), ("view", "sales.olga_space.olga_notes")}
    assert not {name for _, name in found(olga, "o")} & {"sales.orders", "sales.orders.ext_orders", "hr"}
    # Bad input gets a clear answer; wildcards are text.
    response = sam.get(SEARCH, {"q": "x" * 300})
    assert response.status_code == 200 and "Search for at most 255 characters." in text_of(response)
    assert found(admin, "%") == set() and found(admin, "_") >= {("view", "sales.orders.ext_orders")}
    assert "Nothing you may see matches" in text_of(sam.get(SEARCH, {"q": "secret"}))


# -- a page of 10,000 tables ------------------------------------------------------------------------------
def bulk_tables(schema: Schema, count: int, prefix: str) -> None:
    Table.objects.bulk_create([
        Table(schema=schema, name=f"{prefix}{index:05d}", table_type="EXTERNAL", data_source_format="PARQUET",
              storage_location=f"file:///nowhere/{prefix}{index}", owner="admin", created_by="admin")
        for index in range(count)], batch_size=2000)


def measured(client, path) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code == 200
    return len(queries), response.content.decode()


@pytest.mark.parametrize("who", ["admin", "sam"])
def test_the_tree_reads_a_page_whatever_the_size_of_the_schema(world, who):
    sales, orders = Catalog.objects.get(name="sales"), Schema.objects.get(name="orders")
    client = client_of(who)
    client.get(TREE)  # the session and the console's principal, once
    small, _ = measured(client, TREE + opened(sales, orders))
    bulk_tables(orders, 10_000, "bulk_")
    if who == "sam":
        grant("sam", "schema", "sales.orders", "SELECT")  # every table of the schema is sam's to see
    count, page = measured(client, TREE + opened(sales, orders))
    assert count == small
    assert_query_count(f"console tree with an open schema ({who})", count)
    assert page.count('class="uc-leaf" data-kind="table"') == 50
    assert "1–50 of 10,002" in re.sub(r"\s+", " ", page) and "next 50" in page
    later, page = measured(client, TREE + opened(sales, orders) + f"&at={orders.id}:table:10000")
    assert later == count
    assert "ext_orders" in page and "secret_payroll" in page and "bulk_09999" not in page
    assert "10,001–10,002 of 10,002" in re.sub(r"\s+", " ", page)
    assert "previous 50" in page and "next 50" not in page


# -- in the browser ---------------------------------------------------------------------------------------
@pytest.fixture
def browser(driver, live_server, world):  # noqa: F811 - the browser fixture
    def login(name: str) -> Console:
        console = Console(driver, live_server.url)
        driver.delete_all_cookies()
        console.login(name)
        return console
    return login


def test_in_the_browser_an_admin_browses_creates_and_searches(browser, world):
    console = browser("admin")
    console.open("/admin/", expect="#browse-link").click()
    console.css("#tree")
    console.css("li[data-name='sales'] > a.uc-toggle").click()
    console.css("li[data-name='sales.orders'] > a.uc-toggle").click()
    console.css("li[data-name='ext_orders']")
    tree = console.css("#tree").text
    for shown in ("ext_orders", "secret_payroll", "landing", "plus_one", "churn", "managed volume", "returns INT"):
        assert shown in tree, shown
    console.shot("tree-01-admin-open-schema")

    sales = Catalog.objects.get(name="sales")
    console.css(f"#create-schema-{sales.id} summary").click()
    console.css(f"#create-schema-{sales.id} input[name=name]").send_keys("bad name!")
    console.css(f"#create-schema-{sales.id} button").click()
    console.css(".messagelist .error")
    assert "Nothing" not in console.css(".messagelist").text
    assert "name" in console.css(".messagelist .error").text.lower()
    assert not Schema.objects.filter(name="bad name!").exists()
    console.shot("tree-02-refused-schema")

    console.css(f"#create-schema-{sales.id} summary").click()
    console.css(f"#create-schema-{sales.id} input[name=name]").send_keys("events")
    console.css(f"#create-schema-{sales.id} input[name=comment]").send_keys("Clickstream")
    console.css(f"#create-schema-{sales.id} button").click()
    console.css(".messagelist .success")
    assert "Created schema sales.events." in console.text()
    events = Schema.objects.get(name="events")
    assert console.css("li[data-name='sales.events'] > a.uc-toggle").text.startswith("▾")  # opened
    console.css(f"#create-volume-{events.id} summary").click()
    console.css(f"#create-volume-{events.id} input[name=name]").send_keys("uploads")
    console.css(f"#create-volume-{events.id} button").click()
    console.css(".messagelist .success")
    assert "Created volume sales.events.uploads." in console.text()
    assert console.css("li[data-name='uploads']").text.startswith("volume")
    console.shot("tree-03-created")

    console.css("#tree-search-text").send_keys("salary_band")
    console.css("#tree-search button").click()
    console.css("#search-results")
    row = console.css("tr.uc-hit").text
    assert "sales.orders.secret_payroll" in row and "column salary_band" in row
    console.shot("tree-04-search-column")
    console.css("tr.uc-hit a").click()
    console.css("#content")
    assert "/admin/catalog/table/" in console.driver.current_url
    assert "secret_payroll" in console.text()


def test_in_the_browser_a_schema_owner_sees_and_creates_in_its_schema(browser, world):
    console = browser("olga")
    console.open(TREE, expect="#tree")
    assert {e.get_attribute("data-name") for e in console.all("li.uc-node")} == {"sales"}
    assert not console.all("#create-catalog")
    console.css("li[data-name='sales'] > a.uc-toggle").click()
    console.css("li[data-name='sales.olga_space'] > a.uc-toggle").click()
    console.css("li[data-name='olga_notes']")
    assert {e.get_attribute("data-name") for e in console.all("li.uc-node")} == {"sales", "sales.olga_space"}
    space = Schema.objects.get(name="olga_space")
    console.css(f"#create-volume-{space.id} summary").click()
    console.css(f"#create-volume-{space.id} input[name=name]").send_keys("drops")
    console.css(f"#create-volume-{space.id} input[name=comment]").send_keys("Files dropped by partners")
    console.css(f"#create-volume-{space.id} button").click()
    console.css(".messagelist .success")
    assert Volume.objects.get(name="drops").owner == "olga"
    assert "Files dropped by partners" in console.css("li[data-name='drops']").text
    console.shot("tree-05-schema-owner")
    console.open(SEARCH + "?q=orders", expect="#search-nothing")
    console.shot("tree-06-schema-owner-search")


def test_in_the_browser_a_select_only_principal_sees_and_finds_only_its_table(browser, world):
    console = browser("sam")
    console.open(TREE, expect="#tree")
    console.css("li[data-name='sales'] > a.uc-toggle").click()
    console.css("li[data-name='sales.orders'] > a.uc-toggle").click()
    console.css("li[data-name='ext_orders']")
    tree = console.css("#tree").text
    assert "ext_orders" in tree and "secret_payroll" not in tree and "landing" not in tree
    assert "Tables and views (1)" in tree and "Volumes (0)" in tree
    assert not console.all("details.uc-create")
    console.shot("tree-07-select-only")
    for hidden in ("secret_payroll", "salary_band"):
        console.open(f"{SEARCH}?q={hidden}", expect="#search-nothing")
        assert hidden not in console.css("#content-main").text.replace(f"“{hidden}”", "")
        assert not console.all("tr.uc-hit")
    console.shot("tree-08-select-only-search-hidden")
    console.open(f"{SEARCH}?q=order_total", expect="#search-results")
    assert [e.get_attribute("data-name") for e in console.all("tr.uc-hit")] == ["sales.orders.ext_orders"]
    console.shot("tree-09-select-only-search-column")


# -- maintenance from a table's page, run by a real worker ---------------------------------------------------
@pytest.fixture
def celery_worker(tmp_path, settings):
    """A Celery worker on its own Redis and the test database; the live server sends to it (tasks
    are not run inline)."""
    from tests.celery_worker import Redis, Worker
    from tests.test_workers import forget_connections
    from ucweb.celery import app

    if connection.vendor != "postgresql":
        pytest.skip("the worker shares the database with the test, which needs PostgreSQL")
    redis = Redis(tmp_path)
    redis.start()
    previous = app.conf.broker_url, app.conf.broker_transport_options, app.conf.broker_transport
    app.conf.broker_url, app.conf.broker_transport_options, app.conf.broker_transport = redis.url, {"max_retries": 0}, None
    forget_connections(app)
    worker = Worker(redis.url, {"UCWEB_STORAGE_ROOT": settings.UCWEB_STORAGE_ROOT}, tmp_path / "worker.log")
    app.conf.task_always_eager = False
    worker.start()
    yield worker
    worker.stop()
    redis.stop()
    app.conf.task_always_eager = True
    app.conf.broker_url, app.conf.broker_transport_options, app.conf.broker_transport = previous
    forget_connections(app)
    print((tmp_path / "worker.log").read_text()[-3000:])


def test_in_the_browser_run_now_on_a_table_page_is_run_by_a_worker(driver, live_server, delta,  # noqa: F811
                                                                    celery_worker):
    """An OPTIMIZE asked for on a managed Delta table's page (12 small files written through the
    Delta test client) is run by the worker; the page shows the run with its outcome and what it
    did. A principal with SELECT only is offered no "Run now", and its forged request is refused
    and audited; a writer's is not."""
    from maintenance.models import MaintenancePlan
    from tests.helpers import wait_for
    from tests.maintenance_delta_support import live_files, make_table

    table_id, location = make_table(delta, 12)
    for name in ("admin", "sam"):
        principals.ensure_principal(name=name)
        get_user_model().objects.create_superuser(name, f"{name}@example.com", PASSWORD)
    grant("sam", "catalog", "unity", "USE CATALOG")
    grant("sam", "schema", "unity.default", "USE SCHEMA")
    grant("sam", "table", "unity.default.events", "SELECT")

    console = Console(driver, live_server.url)
    driver.delete_all_cookies()
    console.login("sam")
    console.open(f"/admin/catalog/table/{table_id}/change/", expect="#maintenance")
    assert not console.all("#run-now") and "needs MODIFY" in console.css("#maintenance").text
    console.driver.execute_script("""
        const form = document.createElement('form');
        form.method = 'post'; form.action = arguments[0];
        for (const [name, value] of [['csrfmiddlewaretoken', arguments[1]], ['operation', 'OPTIMIZE']]) {
          const input = document.createElement('input'); input.name = name; input.value = value; form.appendChild(input);
        }
        document.body.appendChild(form); form.submit();
    """, f"/admin/maintenance/maintenanceplan/run/{table_id}/", driver.get_cookie("csrftoken")["value"])
    console.css(".messagelist .error")
    assert "Missing MODIFY on table unity.default.events" in console.text()
    assert not MaintenancePlan.objects.exists()
    assert AuditEvent.objects.get(action="requestMaintenance", principal="sam").outcome == "DENIED"
    console.shot("maintenance-01-select-only-refused")

    driver.delete_all_cookies()
    console.login("admin")
    console.open(f"/admin/catalog/table/{table_id}/change/", expect="#run-now")
    console.select("#id_run_operation", "OPTIMIZE")
    console.css("#run-now button").click()
    console.css(".messagelist .success")
    assert "OPTIMIZE of unity.default.events planned." in console.text()
    plan = wait_for(lambda: MaintenancePlan.objects.filter(table_id=table_id, status="SUCCEEDED").first(),
                    timeout=120)
    assert plan.requested_by == "admin" and plan.before["files"] == 12 and plan.after["files"] == 1
    assert len(live_files(delta, table_id, location)) == 1
    console.open(f"/admin/catalog/table/{table_id}/change/", expect="#maintenance-runs")
    row = console.css("#maintenance-runs tr.uc-run[data-operation='OPTIMIZE']")
    assert row.get_attribute("data-status") == "SUCCEEDED"
    assert "succeeded" in row.text and "rewrote 12 files into 1" in row.text and "12 → 1" in row.text
    assert "KiB" in row.text and "UTC" in row.text and "admin" in row.text
    assert AuditEvent.objects.filter(action="requestMaintenance", principal="admin", outcome="SUCCESS",
                                     securable_id=table_id).count() == 1
    assert AuditEvent.objects.filter(action="maintenanceOptimize", outcome="SUCCESS").count() == 1
    console.shot("maintenance-02-run-succeeded")

    # A run with nothing to do ends SKIPPED, and the page says why.
    console.select("#id_run_operation", "CHECKPOINT")
    console.css("#run-now button").click()
    console.css(".messagelist .success")
    checkpoint = wait_for(lambda: MaintenancePlan.objects.filter(
        table_id=table_id, operation="CHECKPOINT").exclude(status__in=("PLANNED", "RUNNING")).first(), timeout=120)
    console.open(f"/admin/catalog/table/{table_id}/change/", expect="#maintenance-runs")
    row = console.css("#maintenance-runs tr.uc-run[data-operation='CHECKPOINT']")
    assert row.get_attribute("data-status") == checkpoint.status
    assert checkpoint.outcome and checkpoint.outcome[:30] in row.text
    console.shot("maintenance-03-second-run")

    # The owner turns the catalog's own runs off for the table: a commit of the table, shown at once.
    console.select("#id_policy_key", "ucweb.maintenance.enabled")
    console.css("#id_policy_value").send_keys("false")
    console.css("#policy-form button").click()
    console.css(".messagelist .success")
    assert "ucweb.maintenance.enabled is now false." in console.text()
    assert console.css("#maintenance-policy-properties tr[data-key='ucweb.maintenance.enabled']").text.endswith(
        "false the table")
    assert "catalog runs maintenance on its own no" in console.css("#maintenance-policy").text
    assert Table.objects.get(id=table_id).properties["ucweb.maintenance.enabled"] == "false"
    full = console.shot("maintenance-04-policy")
    console.driver.execute_script("document.getElementById('maintenance-policy').scrollIntoView()")
    console.driver.save_screenshot(str(full.with_name("maintenance-04-policy-view.png")))


# -- a table's maintenance policy, changed from its page ----------------------------------------------------
def storage_tree(location) -> dict:
    import hashlib

    from catalog.storage import storage_for

    storage = storage_for(location)
    return {item.url: hashlib.sha256(storage.read(item.url)).hexdigest() for item in storage.list(location)}


def policy_state(table_id, location):
    from commits.models import DeltaCommit

    row = Table.objects.get(id=table_id)
    return row.latest_version, row.properties, DeltaCommit.objects.filter(table=row).count(), storage_tree(location)


@pytest.fixture
def writer(bootstrap):
    """wally: every privilege on unity.default.events but ownership (MODIFY and MANAGE too), with a
    console login; and the admin's login."""
    for name in ("admin", "wally"):
        principals.ensure_principal(name=name)
        get_user_model().objects.create_superuser(name, f"{name}@example.com", PASSWORD)
    grant("wally", "catalog", "unity", "USE CATALOG")
    grant("wally", "schema", "unity.default", "USE SCHEMA")


def test_the_owner_changes_a_delta_tables_policy_a_writer_is_refused(delta, writer):
    from maintenance import policy as policies
    from tests.maintenance_delta_support import live_files, make_table

    table_id, location = make_table(delta, 3)
    grant("wally", "table", "unity.default.events", "SELECT", "MODIFY", "MANAGE")
    url = f"/admin/maintenance/maintenanceplan/policy/{table_id}/"
    wally = client_of("wally")
    page = text_of(wally.get(f"/admin/catalog/table/{table_id}/change/"))
    assert "Only the table's owner" in page and 'id="policy-form"' not in wally.get(
        f"/admin/catalog/table/{table_id}/change/").content.decode()
    before = policy_state(table_id, location)
    answer = text_of(wally.post(url, {"key": "enabled", "value": "false"}, follow=True))
    assert "Only the owner of unity.default.events or a metastore admin may change its ucweb.maintenance.*" in answer
    assert policy_state(table_id, location) == before, "neither the catalog nor storage changed"
    refusal = AuditEvent.objects.get(principal="wally", action="commitDelta")
    assert (refusal.outcome, refusal.securable_id) == ("DENIED", uuid.UUID(table_id))

    admin = client_of("admin")
    for fields, message in (({"key": "nonsense", "value": "1"}, "Choose one of ucweb.maintenance.enabled"),
                            ({"key": "enabled", "value": "x" * 1001}, "at most 1000 characters")):
        assert message in text_of(admin.post(url, fields, follow=True))
    assert policy_state(table_id, location) == before
    commits_audited = AuditEvent.objects.filter(principal="admin", action="commitDelta", outcome="SUCCESS").count()
    answer = text_of(admin.post(url, {"key": "enabled", "value": "false"}, follow=True))
    assert "Maintenance policy of unity.default.events: ucweb.maintenance.enabled is now false." in answer
    table = Table.objects.get(id=table_id)
    assert table.properties["ucweb.maintenance.enabled"] == "false" and table.latest_version == 4
    assert policies.for_table(table).enabled is False
    assert len(live_files(delta, table_id, location)) == 3  # the data is as it was
    assert AuditEvent.objects.filter(principal="admin", action="commitDelta", outcome="SUCCESS").count() == \
        commits_audited + 1
    page = admin.get(f"/admin/catalog/table/{table_id}/change/").content.decode()
    assert 'data-key="ucweb.maintenance.enabled"' in page
    answer = text_of(admin.post(url, {"key": "enabled", "value": ""}, follow=True))
    assert "Maintenance policy of unity.default.events: ucweb.maintenance.enabled was removed." in answer
    assert "ucweb.maintenance.enabled" not in Table.objects.get(id=table_id).properties


def test_the_owner_changes_an_iceberg_tables_policy_a_writer_is_refused(live_server, storage_root, writer):
    from commits import iceberg as iceberg_commits
    from commits.models import IcebergMetadata

    iceberg_commits.create_table(caller=Principal.objects.get(name="admin"), prefix="unity", namespace="default",
                                 body={"name": "trips", "schema": {"type": "struct", "schema-id": 0, "fields": [
                                     {"id": 1, "name": "id", "type": "long", "required": False}]}})
    table = Table.objects.get(name="trips")
    grant("wally", "table", "unity.default.trips", "SELECT", "MODIFY", "MANAGE")
    url = f"/admin/maintenance/maintenanceplan/policy/{table.id}/"

    def state():
        stored = IcebergMetadata.objects.get(table=table)
        return stored.metadata_location, Table.objects.get(id=table.id).properties, storage_tree(table.storage_location)

    before = state()
    answer = text_of(client_of("wally").post(url, {"key": "min-input-files", "value": "8"}, follow=True))
    assert "may change its ucweb.maintenance.*" in answer and state() == before
    assert AuditEvent.objects.get(principal="wally", action="commitIcebergTable").outcome == "DENIED"
    answer = text_of(client_of("admin").post(url, {"key": "min-input-files", "value": "8"}, follow=True))
    assert "Maintenance policy of unity.default.trips: ucweb.maintenance.min-input-files is now 8." in answer
    assert Table.objects.get(id=table.id).properties["ucweb.maintenance.min-input-files"] == "8"
    stored = IcebergMetadata.objects.get(table=table)
    assert stored.metadata_location != before[0]
    assert '"ucweb.maintenance.min-input-files": "8"' in stored.metadata_json.replace('":"', '": "')
