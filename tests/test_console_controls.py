"""What a console page lets a person do, and what it says it did: Django's own add, change and
delete are off on every page whose rows the services own (a forged POST changes nothing); a page's
History leads to the audit trail of its record (or the table's timeline), never Django's empty
object history; a securable's change controls are shown only to a principal the services would
let make the change, and a forged change by anyone else is still refused and audited; and every
record page writes its times as the lists do. In Chromium where a person looks; screenshots go to
var/screenshots/ like the other browser tests."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.utils import timezone

from catalog.choices import AuditOutcome
from catalog.models import AuditEvent, Catalog, Function, Group, Principal, RegisteredModel, Schema, Table, Token, Volume
from catalog.services import catalogs, groups, principals
from maintenance.models import MaintenancePlan, PurgeRequest, TableAlert, TableHealth
from tests.test_console_browser import PASSWORD, Console, driver  # noqa: F401 - the browser fixture
from tests.test_console_tree import client_of, world  # noqa: F401 - the principals and their securables

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("console_browser")]

CONSOLE_APPS = ("catalog", "commits", "maintenance")
ADDED_THROUGH_A_SERVICE = {"grant", "maintenanceplan"}  # their add views call the services


def console_admins():
    return [(model, model_admin) for model, model_admin in admin.site._registry.items()
            if model._meta.app_label in CONSOLE_APPS]


def as_person(driver, live_server, name: str) -> Console:  # noqa: F811 - the fixture's value
    console = Console(driver, live_server.url)
    driver.delete_all_cookies()
    console.open("/admin/login/", expect="#id_username")
    console.css("#id_username").send_keys(name)
    console.css("#id_password").send_keys(PASSWORD)
    console.css("input[type=submit]").click()
    console.css("#user-tools")
    return console


# -- 1. Django's own add, change and delete ------------------------------------------------------
def test_no_console_page_offers_djangos_own_add_change_or_delete(world, rf):
    request = rf.get("/admin/")
    request.user = get_user_model().objects.get(username="admin")  # a superuser: Django would allow all
    pages = console_admins()
    assert {m._meta.model_name for m, _ in pages} >= {"purgerequest", "tablealert", "maintenanceplan",
                                                       "tablehealth", "catalog", "table", "grant", "token"}
    for model, model_admin in pages:
        name = model._meta.model_name
        assert not model_admin.has_delete_permission(request), name
        assert not model_admin.has_change_permission(request), name
        assert "delete_selected" not in model_admin.get_actions(request), name
        assert model_admin.has_add_permission(request) == (name in ADDED_THROUGH_A_SERVICE), name


def test_a_forged_delete_or_change_of_a_purge_request_changes_nothing(world):
    table = Table.objects.get(name="ext_orders")
    purge = PurgeRequest.objects.create(url="file:///lake/gone/", reason="dropped table", requested_by="admin")
    alert = TableAlert.objects.create(table=table, version=3, kind=TableAlert.Kind.COMMIT_MISSING, message="gone")
    plan = MaintenancePlan.objects.create(table=table, operation=MaintenancePlan.Operation.VACUUM, reason="old files")
    health = TableHealth.objects.create(table=table, files_live=7, bytes_live=70)
    events = AuditEvent.objects.count()
    client = client_of("admin")  # a metastore admin
    for model, row in ((PurgeRequest, purge), (TableAlert, alert), (MaintenancePlan, plan), (TableHealth, health)):
        page = f"/admin/maintenance/{model._meta.model_name}/{row.pk}/"
        shown = client.get(page + "change/").content.decode()
        assert 'class="deletelink"' not in shown and 'name="_save"' not in shown, model
        assert client.post(page + "delete/", {"post": "yes"}).status_code == 403, model
        client.post(page + "change/", {"url": "file:///elsewhere/", "reason": "forged", "message": "forged",
                                       "files_live": 1, "operation": "OPTIMIZE"})
        client.post(f"/admin/maintenance/{model._meta.model_name}/",
                    {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"})
        assert model.objects.filter(pk=row.pk).exists(), model
    purge.refresh_from_db()
    alert.refresh_from_db()
    plan.refresh_from_db()
    health.refresh_from_db()
    assert (purge.url, purge.reason, alert.message, plan.operation, health.files_live) == (
        "file:///lake/gone/", "dropped table", "gone", "VACUUM", 7)
    assert AuditEvent.objects.count() == events  # nothing happened, so nothing to audit


def test_the_purge_requests_page_in_chromium_has_no_delete(world, driver, live_server):  # noqa: F811
    purge = PurgeRequest.objects.create(url="file:///lake/gone/", reason="dropped table", requested_by="admin")
    console = as_person(driver, live_server, "admin")
    console.open("/admin/maintenance/purgerequest/", expect="#result_list")
    assert not console.all("select[name=action] option[value=delete_selected]")
    console.open(f"/admin/maintenance/purgerequest/{purge.pk}/change/", expect="#content-main")
    assert not console.all(".deletelink") and not console.all("input[name=_save]")
    assert not console.all("#console-history")  # a purge request has no history of its own to show
    # The fields in the page's order (a date-time field written for people stays where it was).
    assert "field-url" in console.css("fieldset .form-row").get_attribute("class")
    requested = console.css(".field-requested_at .readonly").text
    assert requested.endswith("s ago") and " UTC · " in requested
    console.shot("controls-01-purge-request")


# -- 2. History ------------------------------------------------------------------------------------
def test_history_leads_to_the_audit_trail_of_the_record(world, driver, live_server):  # noqa: F811
    admin_principal = world["admin"]
    sales = Catalog.objects.get(name="sales")
    catalogs.update_catalog(caller=admin_principal, name="sales", fields={"comment": "Sales, by day"})
    group = groups.create_group(caller=admin_principal, name="analysts")
    groups.update_members(caller=admin_principal, name="analysts", add_principals=["sam"])
    for flag in (True, False):
        principals.set_metastore_admin(caller=admin_principal, name="olga", admin=flag)
    schema = Schema.objects.get(name="orders")
    pages = {
        "catalog": sales, "schema": schema, "volume": Volume.objects.get(name="landing"),
        "function": Function.objects.get(name="plus_one"), "registeredmodel": RegisteredModel.objects.get(name="churn"),
        "principal": world["olga"], "group": Group.objects.get(pk=group.pk),
    }
    console = as_person(driver, live_server, "admin")
    for kind, row in pages.items():
        console.open(f"/admin/catalog/{kind}/{row.pk}/change/", expect="#console-history")
        link = console.css("#console-history")
        query = parse_qs(urlparse(link.get_attribute("href")).query)
        assert query == {"securable_id": [str(row.pk)]}, kind
        link.click()
        console.css("#result_list")
        rows = console.all("#result_list tbody tr")
        assert rows, kind
        ids = set(AuditEvent.objects.filter(securable_id=row.pk).values_list("id", flat=True))
        assert len(rows) == len(ids), kind  # every event about it, and only those
        if kind == "catalog":
            assert "updateCatalog" in console.text()
            console.shot("controls-02-catalog-history")
        # Django's own history address leads to the same place.
        console.open(f"/admin/catalog/{kind}/{row.pk}/history/", expect="#result_list")
        assert f"securable_id={row.pk}" in console.driver.current_url, kind
    # An audit event is history itself, and a token has none to tell: no History at all.
    event = AuditEvent.objects.filter(securable_id=sales.pk).first()
    console.open(f"/admin/catalog/auditevent/{event.pk}/change/", expect="#event-details")
    assert not console.all("#console-history") and not console.all(".historylink")
    console.shot("controls-03-audit-event")
    client = client_of("admin")
    assert client.get(f"/admin/catalog/auditevent/{event.pk}/history/").status_code == 404
    # A hidden securable's history answers as a missing one.
    hidden = Catalog.objects.get(name="hr")
    assert client_of("sam").get(f"/admin/catalog/catalog/{hidden.pk}/history/").status_code == 404
    assert client_of("sam").get("/admin/catalog/catalog/00000000-0000-0000-0000-000000000009/history/") \
        .status_code == 404


# -- 3. Controls a principal cannot use -----------------------------------------------------------
def test_change_controls_only_for_who_could_make_the_change(world, driver, live_server):  # noqa: F811
    table = Table.objects.get(name="ext_orders")
    page = f"/admin/catalog/table/{table.id}/change/"
    console = as_person(driver, live_server, "sam")  # SELECT on the table, nothing more
    console.open(page, expect="#changes")
    assert not console.all("#transfer-owner") and not console.all("#rename") and not console.all("#drop")
    absent = console.css("#changes-absent").text
    assert absent == ("You act as principal sam, who may not transfer, rename or drop this table: only the owner "
                      "of table sales.orders.ext_orders or a metastore admin may update it.")
    console.shot("controls-04-table-select-only")
    # A principal's metastore admin flag, and a group's members, likewise.
    console.open(f"/admin/catalog/principal/{world['sam'].pk}/change/", expect="#admin-flag")
    assert not console.all("#set-admin")
    assert console.css("#admin-flag-absent").text == (
        "sam is not a metastore admin. You act as principal sam, who may not change that: only a metastore admin may.")
    group = groups.create_group(caller=world["admin"], name="auditors")
    groups.update_members(caller=world["admin"], name="auditors", add_principals=["sam"])
    console.open(f"/admin/catalog/group/{group.pk}/change/", expect="#group-members")
    assert not console.all("#add-member") and not console.all("#group-members button")
    assert "only the owner of group auditors or a metastore admin" in console.css("#members-absent").text
    console.shot("controls-04b-group-not-owner")
    console.open(page.replace("/change/", "/drop/"), expect="#changes")  # no drop page either: back
    assert console.driver.current_url.endswith(page)

    console = as_person(driver, live_server, "admin")  # a metastore admin
    console.open(page, expect="#changes")
    assert console.all("#transfer-owner") and console.all("#rename") and console.all("#drop")
    assert not console.all("#changes-absent")
    console.shot("controls-05-table-admin")
    console.open(f"/admin/catalog/group/{group.pk}/change/", expect="#add-member")
    assert console.all("#group-members button[name=remove]") and not console.all("#members-absent")
    console.open(f"/admin/catalog/principal/{world['sam'].pk}/change/", expect="#set-admin")
    console = as_person(driver, live_server, "olga")  # no metastore admin, the owner of her schema
    # The schema olga owns: her controls are there.
    console.open(f"/admin/catalog/schema/{Schema.objects.get(name='olga_space').pk}/change/", expect="#changes")
    assert console.all("#transfer-owner") and console.all("#rename") and console.all("#drop")
    assert not console.all("#changes-absent")


def test_grant_and_revoke_links_only_for_who_may_change_privileges(world):
    table = Table.objects.get(name="ext_orders")
    page = f"/admin/catalog/table/{table.id}/change/"
    shown = client_of("sam").get(page).content.decode()  # SELECT on the table: may not grant
    assert "Grant on this table" not in shown and "Revoke…" not in shown
    assert "Only its owner or a metastore admin may grant or revoke privileges on it." in shown
    assert "SELECT" in shown  # the grants themselves are still listed
    shown = client_of("admin").get(page).content.decode()
    assert "Grant on this table" in shown and "Revoke…" in shown
    assert "Only its owner or a metastore admin" not in shown
    olga_space = Schema.objects.get(name="olga_space")
    shown = client_of("olga").get(f"/admin/catalog/schema/{olga_space.pk}/change/").content.decode()
    assert "Grant on this schema" in shown  # the owner of the schema, no metastore admin


def test_a_forged_change_by_a_select_only_principal_is_refused_and_audited(world):
    table = Table.objects.get(name="ext_orders")
    sam = client_of("sam")
    base = f"/admin/catalog/table/{table.id}"
    sam.post(f"{base}/rename/", {"new_name": "mine_now"})
    sam.post(f"{base}/owner/", {"owner": "sam", "confirm": "sales.orders.ext_orders"})
    sam.post(f"{base}/drop/", {"confirm": "sales.orders.ext_orders"})
    table.refresh_from_db()
    assert (table.name, table.owner) == ("ext_orders", "admin")
    refused = AuditEvent.objects.filter(principal="sam", securable_id=table.id, outcome=AuditOutcome.DENIED)
    assert sorted(refused.values_list("action", flat=True)) == ["deleteTable", "updateTable", "updateTable"]
    group = groups.create_group(caller=world["admin"], name="auditors")
    groups.update_members(caller=world["admin"], name="auditors", add_principals=["sam"])
    sam.post(f"/admin/catalog/group/{group.pk}/members/", {"member": "principal:olga"})
    sam.post(f"/admin/catalog/principal/{world['sam'].pk}/admin-flag/", {"admin": "true", "confirm": "sam"})
    assert groups.member_names(group) == (["sam"], [])
    assert not Principal.objects.get(name="sam").is_metastore_admin
    assert AuditEvent.objects.filter(principal="sam", outcome=AuditOutcome.DENIED,
                                     action__in=("updateGroup", "setMetastoreAdmin")).count() == 2


# -- 4 and 5. Times on record pages and on the table's maintenance plans --------------------------
def test_record_pages_and_maintenance_plans_write_times_one_way(world, driver, live_server):  # noqa: F811
    table = Table.objects.get(name="ext_orders")
    started = timezone.now() - timedelta(minutes=9)
    MaintenancePlan.objects.create(table=table, operation=MaintenancePlan.Operation.OPTIMIZE, reason="small files",
                                   status=MaintenancePlan.Status.SUCCEEDED, started_at=started,
                                   finished_at=started + timedelta(seconds=185),
                                   before={"files": 1200}, after={"files": 40})
    principals.issue_token(principal=world["sam"], description="laptop")
    console = as_person(driver, live_server, "admin")
    pages = {
        f"/admin/catalog/principal/{world['sam'].pk}/change/": "created_at",
        f"/admin/catalog/group/{groups.create_group(caller=world['admin'], name='readers').pk}/change/": "created_at",
        f"/admin/catalog/catalog/{Catalog.objects.get(name='sales').pk}/change/": "updated_at",
        f"/admin/catalog/table/{table.id}/change/": "created_at",
        f"/admin/catalog/token/{Token.objects.get(principal__name='sam').pk}/change/": "created_at",
    }
    for page, field in pages.items():
        console.open(page, expect=f".field-{field} .readonly")
        shown = console.css(f".field-{field} .readonly").text
        assert " UTC · " in shown and shown.endswith("ago"), (page, shown)
        if "/principal/" in page:
            console.shot("controls-06-principal-times")
    console.open(f"/admin/catalog/table/{table.id}/change/", expect="#health")
    plan = console.css("#health tr.uc-plan").text
    assert "OPTIMIZE" in plan and "SUCCEEDED" in plan and "1,200 → 40" in plan
    assert " UTC · " in plan and " ago " in plan and plan.endswith("3 min 5 s")
    console.driver.execute_script("document.getElementById('health').scrollIntoView()")
    console.shot("controls-07-table-maintenance-plans")
