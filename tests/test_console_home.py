"""The console as a governance workbench, in a real browser (headless Chromium through Selenium,
tests/test_console_browser.py's set-up): the home page says what needs a person, as each viewer's
principal may see it; the audit trail reads to the second, an event has its own page, and the
filtered view downloads as CSV with the list's visibility; a revoke that takes away control is
confirmed by typing the securable's name. The home page's query count does not grow with the
number of tables (pinned in tests/query_counts.json)."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from catalog.models import AuditEvent, Grant, Principal, Schema, Table
from catalog.services import audit, catalogs, permissions, principals, schemas, tables
from commits.models import DeltaCommit
from maintenance.models import MaintenancePlan, TableHealth
from tests.query_pins import assert_query_count
from tests.test_console_browser import PASSWORD, WIDTH, Console, driver  # noqa: F401 - the browser fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("console_browser")]

SECOND = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")
VIEW_PERMISSIONS = ("view_table", "view_schema", "view_catalog", "view_grant", "view_auditevent", "view_principal",
                    "view_maintenanceplan", "view_tablehealth", "view_tablealert")


def _table(admin, catalog, schema, name):
    tables.create_table(caller=admin, name=name, catalog_name=catalog, schema_name=schema, table_type="VIEW",
                        view_definition="select 1", columns=[{"name": "id", "type_name": "LONG"}])
    return Table.objects.get(name=name, schema__name=schema)


def _grant(admin, principal, securable_type, full_name, *privileges):
    permissions.update_permissions(caller=admin, securable_type=securable_type, full_name=full_name,
                                   changes=[{"principal": principal, "add": list(privileges)}])


def _staff(name: str):
    user = get_user_model().objects.create_user(name, f"{name}@example.com", PASSWORD, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=VIEW_PERMISSIONS))
    return user


@pytest.fixture
def governed(bootstrap):
    """sales.orders (owned by olivia) with `orders` (sam may SELECT it), `events` (many small
    files) and `legacy` (its owner deactivated); hr.people with `salaries` (admin only: a failed
    run, small files, unpublished commits) and `old` (owned by no one that exists). Refusals: sam's
    own on hr.people.salaries, mallory's on sales.orders.orders."""
    admin = Principal.objects.get(name="admin")
    for name in ("olivia", "sam", "mallory", "gone"):
        principals.ensure_principal(name=name)
    get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)
    _staff("olivia"), _staff("sam")
    catalogs.create_catalog(caller=admin, name="sales")
    schemas.create_schema(caller=admin, name="orders", catalog_name="sales")
    catalogs.create_catalog(caller=admin, name="hr")
    schemas.create_schema(caller=admin, name="people", catalog_name="hr")
    rows = {name: _table(admin, "sales", "orders", name) for name in ("orders", "events", "legacy")}
    rows |= {name: _table(admin, "hr", "people", name) for name in ("salaries", "old")}
    schemas.update_schema(caller=admin, full_name="sales.orders", fields={"owner": "olivia"})
    _grant(admin, "olivia", "catalog", "sales", "USE CATALOG")
    _grant(admin, "sam", "catalog", "sales", "USE CATALOG")
    _grant(admin, "sam", "schema", "sales.orders", "USE SCHEMA")
    _grant(admin, "sam", "table", "sales.orders.orders", "SELECT")
    tables.update_table(caller=admin, full_name="sales.orders.legacy", fields={"owner": "gone"})
    Principal.objects.filter(name="gone").update(active=False)
    Table.objects.filter(pk=rows["old"].pk).update(owner="nobody")

    hour_ago = timezone.now() - timedelta(hours=1)
    for table, why in ((rows["orders"], "storage refused the write"), (rows["salaries"], "engine unavailable")):
        MaintenancePlan.objects.create(table=table, operation="OPTIMIZE", reason="small files", status="FAILED",
                                       outcome=why, finished_at=hour_ago)
    for table in (rows["events"], rows["salaries"]):
        TableHealth.objects.create(table=table, files_live=1200, bytes_live=3 * 1024 ** 2, small_file_share=0.9)
    DeltaCommit.objects.create(table=rows["salaries"], version=1, timestamp=0, file_name="x.json", file_size=10,
                               file_modification_timestamp=0, ratified_by="admin")
    DeltaCommit.objects.filter(table=rows["salaries"]).update(ratified_at=hour_ago)
    for who, table in (("sam", rows["salaries"]), ("mallory", rows["orders"]), ("mallory", rows["orders"])):
        audit.record(principal=who, action="generateTemporaryTableCredentials", securable_type="table",
                     securable_name=table.full_name, securable_id=table.pk, outcome="DENIED",
                     details={"error": "PERMISSION_DENIED", "message": f"Missing SELECT on table {table.full_name}."})
    return rows


@pytest.fixture
def console(driver, live_server, governed):  # noqa: F811 - the browser fixture, imported above
    console = Console(driver, live_server.url)
    driver.delete_all_cookies()
    return console


def _as(console, name):
    console.driver.delete_all_cookies()
    console.login(name)
    console.open("/admin/", expect="#attention")
    return {section: console.css(f"#{section}").text for section in (
        "failed-runs", "unhealthy-tables", "refused-access", "privilege-changes", "ownerless-tables")}


def test_home_as_metastore_admin(console, governed):
    home = _as(console, "admin")
    assert "sales.orders.orders" in home["failed-runs"] and "hr.people.salaries" in home["failed-runs"]
    assert "storage refused the write" in home["failed-runs"] and "FAILED" in home["failed-runs"]
    assert "small files" in home["unhealthy-tables"] and "90% of 1,200 live files" in home["unhealthy-tables"]
    assert "unpublished commits" in home["unhealthy-tables"] and "hr.people.salaries" in home["unhealthy-tables"]
    refused = console.css("#refused-access tr[data-principal='mallory']").text
    assert "table sales.orders.orders" in refused and " 2 " in f" {refused} " and SECOND.search(refused)
    assert "sam" in home["refused-access"]
    assert "updatePermissions" in home["privilege-changes"] and "sam: +SELECT" in home["privilege-changes"]
    assert "sales.orders.legacy" in home["ownerless-tables"] and "deactivated" in home["ownerless-tables"]
    assert "hr.people.old" in home["ownerless-tables"] and "no such principal" in home["ownerless-tables"]
    # Django's and Celery's own models are a small link, not the main list; no empty "Recent actions".
    main = console.css("#content-main").text
    assert "Tables" in main and "Audit events" in main
    assert "Periodic tasks" not in main and "Users" not in main
    internals = console.css("#internals").text
    assert "Authentication and Authorization" in internals and "Periodic Tasks" in internals
    assert "Recent actions" not in console.text()
    assert console.driver.execute_script("return document.documentElement.scrollWidth") <= WIDTH
    console.shot("home-01-admin")

    # Each row leads to the page that resolves it: the owner-less table's page transfers ownership.
    console.css("#ownerless-tables a").click()
    console.css("#content")
    assert f"/admin/catalog/table/{governed['old'].pk}/change/" in console.driver.current_url
    # The refusals link to the audit trail filtered to them.
    console.open("/admin/", expect="#attention")
    console.css("#refused-access tr[data-principal='mallory'] a").click()
    rows = [row.text for row in console.all("#result_list tbody tr")] if console.css("#result_list") else []
    assert len(rows) == 2 and all("mallory" in row and "DENIED" in row for row in rows)


# What each viewer's home page lists (section: texts shown) and must not (section: texts absent).
VIEWERS = {
    # olivia owns sales.orders: its tables, mallory's refusals on them, the grants made there.
    "olivia": ({"failed-runs": ["sales.orders.orders"], "unhealthy-tables": ["sales.orders.events"],
                "refused-access": ["mallory"], "ownerless-tables": ["sales.orders.legacy"],
                "privilege-changes": ["sam: +SELECT"]},
               {"failed-runs": ["hr."], "unhealthy-tables": ["hr."], "refused-access": ["sam"],
                "ownerless-tables": ["hr.people.old"]}),
    # sam may SELECT sales.orders.orders alone: its run, his own refusal, nobody else's.
    "sam": ({"failed-runs": ["sales.orders.orders"], "unhealthy-tables": ["None"], "refused-access": ["sam"],
             "ownerless-tables": ["Tables without a live owner: 0"], "privilege-changes": ["None"]},
            {"failed-runs": ["hr."], "unhealthy-tables": ["hr.", "events"], "refused-access": ["mallory"],
             "ownerless-tables": ["legacy", "hr.people.old"]}),
}


@pytest.mark.parametrize("viewer, screenshot", [("olivia", "home-02-schema-owner"), ("sam", "home-03-select-only")])
def test_home_as_schema_owner_and_select_only_principal(console, governed, viewer, screenshot):
    home = _as(console, viewer)
    shown, hidden = VIEWERS[viewer]
    assert {(section, text) for section, texts in shown.items() for text in texts if text not in home[section]} \
        == set()
    assert {(section, text) for section, texts in hidden.items() for text in texts if text in home[section]} == set()
    assert not console.all("#internals")
    console.shot(screenshot)


def _fetch(console, url: str) -> str:
    """The body of `url`, fetched by the page itself (the browser's own session)."""
    return console.driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {credentials: 'same-origin'}).then(r => r.text()).then(done);", url)


def test_audit_trail_to_the_second_event_page_and_csv(console, governed):
    long_message = "Missing SELECT on table sales.orders.orders; " + "the request named many columns " * 20
    audit.record(principal="mallory", action="generateTemporaryTableCredentials", securable_type="table",
                 securable_name="sales.orders.orders", securable_id=governed["orders"].pk, outcome="DENIED",
                 details={"error": "PERMISSION_DENIED", "message": long_message})
    console.login("admin")
    console.open("/admin/catalog/auditevent/?outcome__exact=DENIED&principal=mallory", expect="#result_list")
    rows = console.all("#result_list tbody tr")
    assert len(rows) == 3 and all(SECOND.search(row.text) for row in rows)
    # Nothing is cut off at 1440 px: neither the page nor the list scrolls sideways.
    assert console.driver.execute_script("return document.documentElement.scrollWidth") <= WIDTH
    assert console.driver.execute_script(
        "const r = document.querySelector('#changelist .results'); return r.scrollWidth <= r.clientWidth;")
    console.shot("audit-01-list-filtered")

    exported = list(csv.reader(io.StringIO(_fetch(console, console.css("#audit-export").get_attribute("href")))))
    assert exported[0][:3] == ["time (UTC)", "principal", "action"]
    assert len(exported) == 4 and {row[1] for row in exported[1:]} == {"mallory"}
    assert {row[6] for row in exported[1:]} == {"DENIED"} and SECOND.fullmatch(exported[1][0])
    assert long_message in exported[1][7]  # the newest first, its details whole

    rows[0].find_element("css selector", "th a, td a").click()
    console.css("#event-details")
    page = console.text()
    assert SECOND.search(page) and "ago" in page and long_message.strip() in console.css("#event-details").text
    assert console.driver.execute_script(
        "const e = document.getElementById('event-details'); return e.scrollWidth <= e.clientWidth;")
    assert console.driver.execute_script("return document.documentElement.scrollWidth") <= WIDTH
    console.shot("audit-02-event-page")

    # sam's download holds what sam's list shows: his own events, none of mallory's.
    console.driver.delete_all_cookies()
    console.login("sam")
    console.open("/admin/catalog/auditevent/", expect="#result_list")
    mine = list(csv.reader(io.StringIO(_fetch(console, console.css("#audit-export").get_attribute("href")))))[1:]
    assert mine and {row[1] for row in mine} == {"sam"}
    assert len(mine) == len(console.all("#result_list tbody tr"))


def test_revoking_control_needs_the_name_typed(console, governed):
    admin = Principal.objects.get(name="admin")
    _grant(admin, "mallory", "table", "sales.orders.orders", "MANAGE", "SELECT")
    manage = Grant.objects.get(principal="mallory", privilege="MANAGE")
    select = Grant.objects.get(principal="mallory", privilege="SELECT")
    console.login("admin")
    console.open(f"/admin/catalog/grant/{manage.pk}/revoke/", expect="#revoke-form")
    assert "MANAGE gives control of sales.orders.orders" in console.text()
    console.css("#id_confirm").send_keys("sales.orders.order")
    console.css("#revoke-confirm").click()
    console.css(".messagelist .error")
    assert "Type sales.orders.orders to confirm. Nothing was revoked." in console.text()
    console.shot("revoke-01-wrong-name")
    assert Grant.objects.filter(pk=manage.pk).exists()
    assert not AuditEvent.objects.filter(principal="admin", action="updatePermissions",
                                         details__changes__0__remove__0="MANAGE").exists()
    # The bulk action does not revoke it either: it says where to.
    console.open("/admin/catalog/grant/?principal=mallory", expect="#result_list")
    for box in console.all("#result_list input.action-select"):
        box.click()
    console.select("select[name=action]", "Revoke the selected grants")
    console.css("button[name=index]").click()
    console.css(".messagelist")
    assert "was not revoked: revoke it on its own page" in console.text()
    assert Grant.objects.filter(pk=manage.pk).exists() and not Grant.objects.filter(pk=select.pk).exists()

    console.open(f"/admin/catalog/grant/{manage.pk}/revoke/", expect="#revoke-form")
    console.css("#id_confirm").send_keys("sales.orders.orders")
    console.css("#revoke-confirm").click()
    console.css(".messagelist .success")
    assert not Grant.objects.filter(pk=manage.pk).exists()


def _home_queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/admin/")
    assert response.status_code == 200 and b'id="attention"' in response.content
    return len(queries)


def test_home_query_count_does_not_grow_with_tables(governed):
    admin_client, owner_client = Client(), Client()
    admin_client.force_login(get_user_model().objects.get(username="admin"))
    owner_client.force_login(get_user_model().objects.get(username="olivia"))
    few = _home_queries(admin_client), _home_queries(owner_client)
    schema = Schema.objects.get(name="orders")
    Table.objects.bulk_create([
        Table(schema=schema, name=f"bulk_{i:05d}", table_type="VIEW", data_source_format="DELTA",
              owner="nobody" if i % 2 else "olivia") for i in range(10_000)], batch_size=2000)
    many = _home_queries(admin_client), _home_queries(owner_client)
    assert many == few
    assert_query_count("console home (metastore admin, 10,000 tables)", many[0])
    assert_query_count("console home (schema owner, 10,000 tables)", many[1])
    # The owner-less list stays capped, and says how many there are.
    text = re.sub(r"\s+", " ", owner_client.get("/admin/").content.decode())
    assert "Tables without a live owner: 5,001" in text


def test_lists_write_sizes_counts_and_times_for_people(governed):
    client = Client()
    client.force_login(get_user_model().objects.get(username="admin"))
    health = re.sub(r"\s+", " ", client.get("/admin/maintenance/tablehealth/").content.decode())
    assert "3 MiB" in health and "1,200" in health and "3145728" not in health
    grants = re.sub(r"\s+", " ", client.get("/admin/catalog/grant/").content.decode())
    assert SECOND.search(grants) and " ago</time>" in grants and "a.m." not in grants and "p.m." not in grants


def test_a_csv_export_with_a_filter_that_does_not_apply_is_refused(governed):
    client = Client()
    client.force_login(get_user_model().objects.get(username="admin"))
    answer = client.get("/admin/catalog/auditevent/export.csv?no_such_field=1", follow=True)
    assert answer.status_code == 200 and answer.redirect_chain[-1][0] == "/admin/catalog/auditevent/"
    assert "Those filters do not apply to the audit trail; nothing was exported." in answer.content.decode()
    exported = client.get("/admin/catalog/auditevent/export.csv?outcome__exact=DENIED")
    assert exported["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert len(rows) == 1 + AuditEvent.objects.filter(outcome="DENIED").count() == 4
