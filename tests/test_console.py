"""The governance console: every change goes through the services (validation, authorization,
audit), effective access and "can X do Y on Z?" come from the API's evaluator, tables show their
own format's history, and the command-line actions are audited as the operator."""

from __future__ import annotations

import io
import re

import pyarrow as pa
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from catalog.choices import PrincipalKind, SecurableType
from catalog.models import AuditEvent, Catalog, Grant, Principal, Schema, Table
from catalog.services import (
    catalogs, credentials, effective_access, external_locations, groups, permissions, principals, schemas, tables,
)
from tests.helpers import UC, grant

pytestmark = pytest.mark.django_db(transaction=True)


def _text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


@pytest.fixture
def governance(bootstrap):
    """A browser logged in as Django superuser `admin` (the bootstrap's metastore admin)."""
    get_user_model().objects.create_superuser("admin", "admin@example.com", "pw")
    client = Client()
    client.force_login(get_user_model().objects.get(username="admin"))
    return client


@pytest.fixture
def namespace(bootstrap):
    """sales.orders.ext_orders and unity.default.not_this_table, owned by admin; principal bob."""
    admin = Principal.objects.get(name="admin")
    principals.ensure_principal(name="bob")
    catalogs.create_catalog(caller=admin, name="sales")
    schemas.create_schema(caller=admin, name="orders", catalog_name="sales")
    columns = [{"name": "id", "type_name": "LONG"}]
    for catalog, schema, name in (("sales", "orders", "ext_orders"), ("unity", "default", "not_this_table")):
        tables.create_table(caller=admin, name=name, catalog_name=catalog, schema_name=schema,
                            table_type="VIEW", view_definition="select 1", columns=columns)
    return {
        "ext_orders": Table.objects.get(name="ext_orders"),
        "other": Table.objects.get(name="not_this_table"),
    }


def _grant(client, table, principal="bob", privileges=("SELECT",), **extra):
    data = {"securable_type": "table", "securable": str(table.id), "principal": principal,
            "privileges": list(privileges), **extra}
    return client.post("/admin/catalog/grant/add/?securable_type=table", data)


def test_grant_through_the_picker_goes_through_the_service(governance, namespace):
    table = namespace["ext_orders"]
    page = _text(governance.get(f"/admin/catalog/grant/add/?securable_type=table&securable={table.id}"))
    assert "sales.orders.ext_orders" in page and 'name="securable_name"' not in page
    response = _grant(governance, table)
    assert response.status_code == 302
    grant = Grant.objects.get(principal="bob")
    assert (grant.securable_id, grant.securable_name, grant.privilege, grant.granted_by) == (
        table.id, "sales.orders.ext_orders", "SELECT", "admin")
    event = AuditEvent.objects.filter(action="updatePermissions", securable_id=table.id).get()
    assert event.principal == "admin" and event.outcome == "SUCCESS"


def test_the_forged_mismatched_grant_is_impossible(governance, namespace):
    table, other = namespace["ext_orders"], namespace["other"]
    # A name sent along with the id is ignored: the grant names the row the id points to.
    _grant(governance, table, securable_name="unity.default.not_this_table")
    assert list(Grant.objects.values_list("securable_name", flat=True)) == ["sales.orders.ext_orders"]
    # A table's id under another type is not a choice of that type: nothing is granted.
    response = governance.post("/admin/catalog/grant/add/?securable_type=catalog", {
        "securable_type": "catalog", "securable": str(table.id), "principal": "bob", "privileges": ["USE CATALOG"]})
    assert response.status_code == 200 and "Select a valid choice" in _text(response)
    # The stock add form's free-text fields are not accepted either.
    response = governance.post("/admin/catalog/grant/add/", {
        "securable_type": "table", "securable_id": str(table.id), "securable_name": "unity.default.not_this_table",
        "principal": "bob", "privilege": "MODIFY"})
    assert response.status_code == 200
    assert Grant.objects.count() == 1
    assert not Grant.objects.filter(securable_id=other.id).exists()
    assert not Grant.objects.filter(securable_name="unity.default.not_this_table").exists()
    # The service refuses an id whose row is not of the named type, whatever calls it.
    admin = Principal.objects.get(name="admin")
    with pytest.raises(Exception, match="no catalog with id"):
        permissions.update_permissions_by_id(caller=admin, securable_type="catalog", securable_id=str(table.id),
                                             changes=[{"principal": "bob", "add": ["USE CATALOG"]}])
    assert Grant.objects.count() == 1


def test_revoke_goes_through_the_service(governance, namespace):
    table = namespace["ext_orders"]
    _grant(governance, table, privileges=("SELECT", "MODIFY"))
    grant = Grant.objects.get(principal="bob", privilege="MODIFY")
    assert "Revoke" in _text(governance.get(f"/admin/catalog/grant/{grant.pk}/revoke/"))
    governance.post(f"/admin/catalog/grant/{grant.pk}/revoke/")
    assert list(Grant.objects.values_list("privilege", flat=True)) == ["SELECT"]
    last = AuditEvent.objects.filter(action="updatePermissions").first()
    assert last.details["changes"] == [{"principal": "bob", "add": [], "remove": ["MODIFY"]}]
    # Django's own delete is not offered: it would bypass the service and its audit event.
    assert governance.post(f"/admin/catalog/grant/{grant.pk - 1}/delete/").status_code in (403, 302, 404)


def test_a_console_user_without_rights_is_refused_and_audited(namespace):
    get_user_model().objects.create_user("carol", "carol@example.com", "pw", is_staff=True, is_superuser=True)
    principals.ensure_principal(name="carol")  # an existing, non-admin principal is used as it is
    client = Client()
    client.force_login(get_user_model().objects.get(username="carol"))
    table = namespace["ext_orders"]
    assert _grant(client, table).status_code == 200  # a table carol cannot see is not in her picker
    assert not Grant.objects.exists() and not AuditEvent.objects.filter(principal="carol", outcome="DENIED")
    grant("carol", "catalog", "sales", "USE CATALOG")
    grant("carol", "schema", "sales.orders", "USE SCHEMA")
    grant("carol", "table", "sales.orders.ext_orders", "SELECT")
    held = set(Grant.objects.values_list("pk", flat=True))
    response = _grant(client, table)  # seen, not owned: the service refuses
    assert response.status_code == 200
    assert "Only an owner or a metastore admin" in _text(response)
    assert set(Grant.objects.values_list("pk", flat=True)) == held
    refusal = AuditEvent.objects.get(principal="carol", outcome="DENIED")
    assert (refusal.securable_name, refusal.securable_id) == ("sales.orders.ext_orders", table.id)
    assert not Principal.objects.get(name="carol").is_metastore_admin


def test_effective_access_shows_inheritance_and_what_blocks_it(governance, namespace):
    admin = Principal.objects.get(name="admin")
    table = namespace["ext_orders"]
    permissions.update_permissions(caller=admin, securable_type="catalog", full_name="sales",
                                   changes=[{"principal": "bob", "add": ["USE CATALOG", "SELECT"]}])
    rows = {row.principal: row for row in effective_access.on_securable(table)}
    bob = rows["bob"]
    assert [(h.privilege, h.reason) for h in bob.holdings] == [("SELECT", "inherited from a grant on catalog sales")]
    assert (bob.usable, bob.blocked_by) == (False, "missing USE SCHEMA on schema sales.orders")
    assert rows["admin"].holdings[0].privilege == "ALL PRIVILEGES"
    page = _text(governance.get(f"/admin/catalog/table/{table.id}/change/"))
    assert "inherited from a grant on catalog sales" in page and "missing USE SCHEMA on schema sales.orders" in page
    # The principal's page: what bob can reach, and why.
    bob_page = _text(governance.get(f"/admin/catalog/principal/{Principal.objects.get(name='bob').pk}/change/"))
    assert "sales.orders.ext_orders" in bob_page and "inherited from a grant on catalog sales" in bob_page
    # "Can bob SELECT on the table?" No, and why; after USE SCHEMA, yes.
    query = f"?securable_type=table&securable={table.id}&principal=bob&privilege=SELECT"
    answer = _text(governance.get(f"/admin/catalog/principal/check/{query}"))
    assert "No:" in answer and "USE SCHEMA on schema sales.orders" in answer
    permissions.update_permissions(caller=admin, securable_type="schema", full_name="sales.orders",
                                   changes=[{"principal": "bob", "add": ["USE SCHEMA"]}])
    decision = effective_access.check(principal=Principal.objects.get(name="bob"), securable=table, privilege="SELECT")
    assert decision.allowed and [s.reason for s in decision.steps] == [
        "granted on catalog sales", "granted on schema sales.orders", "inherited from a grant on catalog sales"]
    assert "Yes:" in _text(governance.get(f"/admin/catalog/principal/check/{query}"))


def test_effective_access_agrees_with_the_api(live_server, namespace, make_token):
    """What the console says bob may do is what the API lets bob do."""
    import requests

    admin = Principal.objects.get(name="admin")
    table = namespace["ext_orders"]
    bob = Principal.objects.get(name="bob")
    token = make_token("bob")
    url = f"{live_server.url}{UC}/tables/sales.orders.ext_orders"
    for changes in ([], [("catalog", "sales", "USE CATALOG")], [("schema", "sales.orders", "USE SCHEMA")],
                    [("table", "sales.orders.ext_orders", "SELECT")]):
        for securable_type, name, privilege in changes:
            permissions.update_permissions(caller=admin, securable_type=securable_type, full_name=name,
                                           changes=[{"principal": "bob", "add": [privilege]}])
        allowed = effective_access.check(principal=bob, securable=table, privilege="SELECT").allowed
        status = requests.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=10).status_code
        assert (status == 200) == allowed, (changes, status)
    assert allowed


def test_owner_rename_drop_and_admin_flag_go_through_services(governance, namespace):
    table = namespace["ext_orders"]
    # Raising someone's privileges or what cannot be undone needs the name typed: a click is not enough.
    unconfirmed = governance.post(f"/admin/catalog/table/{table.id}/owner/", {"owner": "bob"}, follow=True)
    assert "Type sales.orders.ext_orders to confirm." in _text(unconfirmed)
    table.refresh_from_db()
    assert table.owner == "admin"
    governance.post(f"/admin/catalog/table/{table.id}/owner/", {"owner": "bob", "confirm": "sales.orders.ext_orders"})
    table.refresh_from_db()
    assert table.owner == "bob"
    governance.post(f"/admin/catalog/table/{table.id}/rename/", {"new_name": "orders_v2"})
    table.refresh_from_db()
    assert table.full_name == "sales.orders.orders_v2"
    response = governance.post(f"/admin/catalog/table/{table.id}/rename/", {"new_name": "bad.name"}, follow=True)
    assert "invalid" in _text(response) and Table.objects.filter(name="orders_v2").exists()
    governance.post(f"/admin/catalog/schema/{table.schema_id}/drop/", {"confirm": "sales.orders"})
    assert Schema.objects.filter(id=table.schema_id).exists()  # not empty, no force: refused
    for typed in ("", "on", "sales.orders.ext_orders"):  # nothing, a checkbox's value, the old name
        page = governance.post(f"/admin/catalog/table/{table.id}/drop/", {"confirm": typed})
        assert page.status_code == 200 and "Type sales.orders.orders_v2 to confirm." in _text(page)
    assert Table.objects.filter(id=table.id).exists()
    governance.post(f"/admin/catalog/table/{table.id}/drop/", {"confirm": "sales.orders.orders_v2"})
    assert not Table.objects.filter(id=table.id).exists()
    actions = list(AuditEvent.objects.filter(securable_id=table.id).order_by("id").values_list("action", "outcome"))
    assert actions[-4:] == [("updateTable", "SUCCESS"), ("updateTable", "SUCCESS"), ("updateTable", "FAILED"),
                            ("deleteTable", "SUCCESS")]
    bob = Principal.objects.get(name="bob")
    governance.post(f"/admin/catalog/principal/{bob.pk}/admin-flag/", {"admin": "true", "confirm": "bobby"})
    assert not Principal.objects.get(name="bob").is_metastore_admin
    governance.post(f"/admin/catalog/principal/{bob.pk}/admin-flag/", {"admin": "true", "confirm": "bob"})
    assert Principal.objects.get(name="bob").is_metastore_admin
    assert AuditEvent.objects.filter(action="setMetastoreAdmin", securable_name="bob", principal="admin").exists()
    # Protocol fields are not editable: the change form has no inputs for them and no save.
    page = _text(governance.get(f"/admin/catalog/table/{namespace['other'].id}/change/"))
    assert 'name="storage_location"' not in page and 'name="_save"' not in page


def test_the_last_metastore_admin_stays_one(bootstrap):
    admin = Principal.objects.get(name="admin")
    Principal.objects.exclude(name="admin").update(is_metastore_admin=False)
    with pytest.raises(Exception, match="last metastore admin"):
        principals.set_metastore_admin(caller=admin, name="admin", admin=False)
    assert Principal.objects.get(name="admin").is_metastore_admin


def test_delta_table_page_shows_its_commits_and_no_iceberg_section(governance, delta):
    created = delta.create_table("unity", "default", "events")
    delta.append(created.table_id, created.storage_location, 1, "p1.parquet")
    delta.append(created.table_id, created.storage_location, 2, "p2.parquet", publish=False)
    page = _text(governance.get(f"/admin/catalog/table/{created.table_id}/change/"))
    assert 'id="delta-history"' in page and 'id="iceberg-snapshots"' not in page
    assert page.count('class="uc-commit"') == 2 and "WRITE" in page and "not yet" in page
    assert "Commits to unity.default.events per hour" in page


@pytest.fixture
def iceberg_table(live_server, bootstrap, make_token, storage_root):
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.schema import Schema as IcebergSchema
    from pyiceberg.types import LongType, NestedField

    catalog = RestCatalog("ucweb", uri=f"{live_server.url}/api/catalog", warehouse="unity",
                          token=make_token("admin", admin=True))
    table = catalog.create_table("default.trips", IcebergSchema(NestedField(1, "id", LongType(), required=False)))
    for start in (0, 10):
        table.append(pa.Table.from_pylist([{"id": start + i} for i in range(3)],
                                          schema=pa.schema([pa.field("id", pa.int64())])))
    return Table.objects.get(name="trips")


def test_iceberg_table_page_shows_snapshots_refs_and_metadata_history(governance, iceberg_table):
    page = _text(governance.get(f"/admin/catalog/table/{iceberg_table.id}/change/"))
    assert 'id="iceberg-snapshots"' in page and 'id="delta-history"' not in page
    assert page.count('class="uc-snapshot"') == 2 and "append" in page
    assert "main" in page and "metadata.json" in page
    assert "Data size of unity.default.trips after each snapshot" in page


def test_audit_trail_filters(governance, namespace):
    table = namespace["ext_orders"]
    _grant(governance, table)
    page = _text(governance.get(f"/admin/catalog/auditevent/?securable_id={table.id}"))
    assert "sales.orders.ext_orders" in page and "not_this_table" not in page
    shown = governance.get("/admin/catalog/auditevent/?action=updatePermissions").context["cl"].result_list
    assert {event.action for event in shown} == {"updatePermissions"}
    for query in ("?principal=admin", "?outcome__exact=SUCCESS", "?securable_type__exact=table",
                  "?securable_id=not-a-uuid", "?created_at__gte=2020-01-01+00:00:00%2B00:00"):
        assert governance.get(f"/admin/catalog/auditevent/{query}").status_code == 200, query


def test_landing_page_links(client):
    page = client.get("/").content.decode()
    assert all(link in page for link in ('href="/admin/"', 'href="/api/docs/"', 'href="/readyz"', 'href="/healthz"'))


def test_issue_token_is_audited_as_the_operator_and_rotation_is_explicit(bootstrap):
    out = io.StringIO()
    call_command("issue_token", "etl", "--service-principal", "--operator", "ops-alice", stdout=out)
    secret = re.search(r"client_secret: (\S+)", out.getvalue()).group(1)
    events = AuditEvent.objects.filter(securable_name="etl")
    assert set(events.values_list("principal", flat=True)) == {"ops-alice"}
    assert {"createPrincipal", "createClientSecret", "issueToken"} <= set(events.values_list("action", flat=True))
    with pytest.raises(CommandError, match="--rotate"):
        call_command("issue_token", "etl", "--service-principal", stdout=io.StringIO())
    etl = Principal.objects.get(name="etl")
    assert principals.principal_for_client_credentials(client_id=etl.client_id, client_secret=secret) == etl
    call_command("issue_token", "etl", "--service-principal", "--rotate", stdout=io.StringIO())
    assert AuditEvent.objects.filter(action="rotateClientSecret", securable_name="etl").get().principal.startswith(
        "cli:")
    with pytest.raises(Exception, match="Invalid client credentials"):
        principals.principal_for_client_credentials(client_id=etl.client_id, client_secret=secret)
    assert Principal.objects.get(name="etl").kind == PrincipalKind.SERVICE_PRINCIPAL


def test_bootstrap_is_audited_as_the_operator(db):
    call_command("bootstrap", "--operator", "ops-bob", verbosity=0)
    actors = set(AuditEvent.objects.values_list("principal", flat=True))
    assert actors == {"ops-bob"}
    assert {"createMetastore", "createPrincipal", "createCatalog", "createSchema"} <= set(
        AuditEvent.objects.values_list("action", flat=True))


def test_every_securable_page_renders(governance, namespace):
    for model in ("catalog", "schema", "table", "principal", "grant", "auditevent", "metastore", "token"):
        assert governance.get(f"/admin/catalog/{model}/").status_code == 200, model
    assert governance.get(f"/admin/catalog/catalog/{Catalog.objects.get(name='sales').pk}/change/").status_code == 200
    assert governance.get(f"/admin/catalog/schema/{namespace['ext_orders'].schema_id}/change/").status_code == 200
    from catalog.models import Metastore
    assert governance.get(f"/admin/catalog/metastore/{Metastore.objects.get().pk}/change/").status_code == 200
    assert SecurableType.TABLE in dict(effective_access.SECURABLE_MODELS)


def _list_page_queries(client, path: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(path).status_code == 200, path
    return len(queries)


def test_securable_lists_read_their_parents_in_the_same_query(governance, namespace):
    """A list page shows each row's parent (a schema's catalog, an external location's credential):
    read with the rows, so ten more rows cost no query more."""
    admin = Principal.objects.get(name="admin")
    credentials.create_credential(caller=admin, name="keys0", purpose="STORAGE",
                                  aws_iam_role={"role_arn": "arn:aws:iam::123456789012:role/r"})
    external_locations.create_external_location(caller=admin, name="place0", url="s3://bucket/place0",
                                                credential_name="keys0")
    pages = {"schema": "/admin/catalog/schema/", "external location": "/admin/catalog/externallocation/"}
    governance.get(pages["schema"])  # the session and the console's principal, once
    before = {kind: _list_page_queries(governance, path) for kind, path in pages.items()}
    for index in range(1, 11):
        catalog = catalogs.create_catalog(caller=admin, name=f"more{index}")
        schemas.create_schema(caller=admin, name="inner", catalog_name=catalog.name)
        credentials.create_credential(caller=admin, name=f"keys{index}", purpose="STORAGE",
                                      aws_iam_role={"role_arn": f"arn:aws:iam::123456789012:role/r{index}"})
        external_locations.create_external_location(caller=admin, name=f"place{index}",
                                                    url=f"s3://bucket/place{index}", credential_name=f"keys{index}")
    after = {kind: _list_page_queries(governance, path) for kind, path in pages.items()}
    assert after == before
    assert "keys10" in governance.get(pages["external location"]).content.decode()


def test_schema_requests_are_quiet(client):
    """No drf-spectacular warning or error while the schema is generated (they would be printed on
    every schema request), and every operationId is unique."""
    from drf_spectacular.drainage import GENERATOR_STATS

    GENERATOR_STATS.reset()
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert dict(GENERATOR_STATS._warn_cache) == {} and dict(GENERATOR_STATS._error_cache) == {}
    schema = response.json() if response["Content-Type"].startswith("application/json") else None
    if schema is not None:
        ids = [op["operationId"] for methods in schema["paths"].values() for op in methods.values()]
        assert len(ids) == len(set(ids))


def test_refusals_name_the_securable_and_the_action(admin_client, make_client):
    bob = make_client("bob")
    response = bob.post(f"{UC}/tables", {
        "name": "secret", "catalog_name": "unity", "schema_name": "default", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": "file:///tmp/x"}, format="json")
    assert response.status_code == 404  # a catalog bob may not see answers as a missing one
    event = AuditEvent.objects.get(principal="bob", outcome="DENIED")
    # The success's name, on the trail of the schema the create was refused in, naming what was asked.
    schema = Schema.objects.get(catalog__name="unity", name="default")
    assert (event.action, event.securable_type, event.securable_name, event.securable_id) == (
        "createTable", "schema", "unity.default", schema.id)
    assert event.details["named"] == "unity.default.secret"
    response = bob.patch(f"{UC}/permissions/catalog/unity",
                         {"changes": [{"principal": "bob", "add": ["USE CATALOG"]}]}, format="json")
    assert response.status_code == 404
    event = AuditEvent.objects.filter(principal="bob", outcome="DENIED").first()
    assert (event.action, event.securable_type, event.securable_name, event.securable_id) == (
        "updatePermissions", "catalog", "unity", Catalog.objects.get(name="unity").id)


def test_charts_label_axes_units_and_the_table():
    from datetime import UTC, datetime, timedelta

    from catalog.admin import charts

    svg = charts.file_size_histogram("unity.default.t", {
        "sorted_bin_boundaries": [0, 1024, 8 * 1024 * 1024, 1 << 30], "file_counts": [3, 5, 2, 0]})
    assert "File sizes of unity.default.t" in svg and "0 B–1 KiB" in svg and "1 KiB–8 MiB" in svg
    assert ">files<" in svg and ">file size<" in svg and "≥ 1 GiB" in svg
    now = datetime(2026, 1, 31, 12, 30, tzinfo=UTC)
    ms = lambda t: int(t.timestamp() * 1000)  # noqa: E731
    hourly = charts.commit_rate("t", [ms(now - timedelta(minutes=5)), ms(now - timedelta(hours=2))], now=now)
    assert "per hour, last 24 hours" in hourly and ">12:00<" in hourly and ">commits<" in hourly
    daily = charts.commit_rate("t", [ms(now - timedelta(days=3)), ms(now - timedelta(days=20))], now=now)
    assert "per day, last 30 days" in daily and "Jan 28" in daily
    assert "no commits in the last 30 days" in charts.commit_rate("t", [ms(now - timedelta(days=90))], now=now)
    assert charts.human_bytes(1536) == "1.5 KiB" and charts.percent(0.25) == "25 %"
    # Names are escaped: a table name cannot inject markup into the page.
    assert "<script>" not in charts.file_size_histogram("<script>", None)


def test_tokens_are_revoked_through_the_service(governance, make_token):
    make_token("bob")
    token = Principal.objects.get(name="bob").tokens.get()
    governance.post("/admin/catalog/token/", {"action": "revoke_selected", "_selected_action": [token.pk]})
    assert not Principal.objects.get(name="bob").tokens.exists()
    event = AuditEvent.objects.get(action="revokeToken")
    assert (event.principal, event.securable_name) == ("admin", "bob")


def test_console_urls_with_bad_ids_answer_404(governance, namespace):
    for url in ("/admin/catalog/table/not-a-uuid/owner/", "/admin/catalog/table/00000000-0000-0000-0000-000000000000/drop/",
                "/admin/catalog/grant/abc/revoke/", "/admin/catalog/principal/xyz/admin-flag/",
                "/admin/catalog/catalog/1/rename/"):
        assert governance.post(url, {"owner": "bob", "new_name": "x", "confirm": "on"}).status_code == 404, url
    query = "?securable_type=bogus&securable=x&principal=nobody&privilege=SELECT"
    assert governance.get(f"/admin/catalog/principal/check/{query}").status_code == 200
    assert governance.get("/admin/catalog/grant/add/?securable_type=bogus").status_code == 200
    assert Table.objects.get(id=namespace["ext_orders"].id).owner == "admin"


def test_check_on_a_schema_and_a_catalog_asks_what_the_api_asks(namespace):
    admin = Principal.objects.get(name="admin")
    bob = Principal.objects.get(name="bob")
    schema = Schema.objects.get(name="orders")
    permissions.update_permissions(caller=admin, securable_type="catalog", full_name="sales",
                                   changes=[{"principal": "bob", "add": ["USE CATALOG", "CREATE TABLE"]}])
    decision = effective_access.check(principal=bob, securable=schema, privilege="CREATE TABLE")
    assert not decision.allowed
    assert [(s.question, s.allowed) for s in decision.steps] == [
        ("USE CATALOG on catalog sales", True), ("USE SCHEMA on schema sales.orders", False),
        ("CREATE TABLE on schema sales.orders", True)]
    catalog_decision = effective_access.check(principal=bob, securable=schema.catalog, privilege="USE CATALOG")
    assert catalog_decision.allowed and len(catalog_decision.steps) == 1
    reach = {row.name: row for row in effective_access.reach_of(bob).rows}
    assert reach["sales"].usable and not reach["sales.orders"].usable


def test_no_page_may_be_framed(client):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.create_superuser("governance", "gov@example.com", "pw"))
    principal = client.get("/admin/catalog/principal/")
    for response in (client.get("/admin/"), principal, client.get("/readyz"), client.get("/api/docs/")):
        assert response["X-Frame-Options"] == "DENY"
        assert response["Content-Security-Policy"] == "frame-ancestors 'none'"


@pytest.fixture
def eve(bootstrap):
    """A staff login (no superuser) with Django's permissions on tables and maintenance plans:
    what the console lets her see and do is what her principal's grants allow."""
    from django.contrib.auth.models import Permission

    user = get_user_model().objects.create_user("eve", "eve@example.com", "pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=(
        "view_table", "view_deltacommit", "view_maintenanceplan", "add_maintenanceplan", "change_maintenanceplan", "view_tablehealth")))
    client = Client()
    client.force_login(user)
    return client


def test_a_staff_login_sees_and_plans_only_what_its_principal_may(eve, delta):
    from maintenance.models import MaintenancePlan

    created = delta.create_table("unity", "default", "events")
    delta.append(created.table_id, created.storage_location, 1, "p1.parquet", publish=False)
    table = Table.objects.get(id=created.table_id)
    MaintenancePlan.objects.create(table=table, operation="VACUUM", reason="planned by the catalog")
    # Not visible: the table's page answers as a missing one, no plan or commit of it is listed, and
    # the add form does not offer it.
    hidden = eve.get(f"/admin/catalog/table/{table.id}/change/")
    missing = eve.get("/admin/catalog/table/00000000-0000-0000-0000-000000000007/change/")
    assert (hidden.status_code, hidden["Location"]) == (missing.status_code, missing["Location"]) == (302, "/admin/")
    assert "unity.default.events" not in _text(eve.get("/admin/maintenance/maintenanceplan/"))
    assert "unity.default.events" not in _text(eve.get("/admin/commits/deltacommit/"))
    form = {"table": str(table.id), "operation": "OPTIMIZE", "reason": "please"}
    refused = eve.post("/admin/maintenance/maintenanceplan/add/", form)
    assert refused.status_code == 200 and "Select a valid choice" in _text(refused)
    assert not MaintenancePlan.objects.filter(operation="OPTIMIZE").exists()

    # Visible (SELECT) but not hers to maintain: refused by the service, audited, nothing planned.
    grant("eve", "catalog", "unity", "USE CATALOG")
    grant("eve", "schema", "unity.default", "USE SCHEMA")
    grant("eve", "table", "unity.default.events", "SELECT")
    assert eve.get(f"/admin/catalog/table/{table.id}/change/").status_code == 200
    assert "unity.default.events" in _text(eve.get("/admin/commits/deltacommit/"))
    answer = eve.post("/admin/maintenance/maintenanceplan/add/", form, follow=True)
    assert "Missing MODIFY on table unity.default.events" in _text(answer)
    assert not MaintenancePlan.objects.filter(operation="OPTIMIZE").exists()
    denied = AuditEvent.objects.get(action="requestMaintenance", principal="eve")
    assert denied.outcome == "DENIED" and denied.securable_id == table.id
    vacuum = MaintenancePlan.objects.get(operation="VACUUM")
    eve.post("/admin/maintenance/maintenanceplan/", {"action": "run_now", "_selected_action": [vacuum.id]})
    assert AuditEvent.objects.filter(action="requestMaintenance", principal="eve", outcome="DENIED").count() == 2

    # A writer of the table may.
    grant("eve", "table", "unity.default.events", "MODIFY")
    assert eve.post("/admin/maintenance/maintenanceplan/add/", form).status_code == 302
    plan = MaintenancePlan.objects.get(operation="OPTIMIZE")
    assert plan.requested_by == "eve" and plan.status == "PLANNED"
    assert AuditEvent.objects.filter(action="requestMaintenance", principal="eve", outcome="SUCCESS",
                                     securable_id=table.id).count() == 1


def test_governance_pages_follow_the_principal(governance, namespace):
    """A staff login whose principal is no admin sees its own principal, tokens, grants and
    actions, and the grants on and the trail of what it owns; no one else's, and its pickers list
    only what it may see."""
    admin = Principal.objects.get(name="admin")
    dave = principals.ensure_principal(name="dave")
    principals.issue_token(principal=dave)
    principals.issue_token(principal=Principal.objects.get(name="bob"))
    catalogs.create_catalog(caller=admin, name="daves")
    permissions.update_permissions(caller=admin, securable_type="catalog", full_name="daves",
                                   changes=[{"principal": "dave", "add": ["USE CATALOG"]}])
    permissions.update_permissions(caller=admin, securable_type="table", full_name="unity.default.not_this_table",
                                   changes=[{"principal": "bob", "add": ["SELECT"]}])
    catalog = Catalog.objects.get(name="daves")
    catalog.owner = "dave"
    catalog.save()
    schemas.create_schema(caller=dave, name="mine", catalog_name="daves")
    permissions.update_permissions(caller=dave, securable_type="schema", full_name="daves.mine",
                                   changes=[{"principal": "bob", "add": ["USE SCHEMA"]}])
    get_user_model().objects.create_user("dave", "dave@example.com", "pw", is_staff=True, is_superuser=True)
    console = Client()
    console.force_login(get_user_model().objects.get(username="dave"))

    principals_page = _text(console.get("/admin/catalog/principal/"))
    assert ">dave<" in principals_page and ">bob<" not in principals_page and ">admin<" not in principals_page
    bob = Principal.objects.get(name="bob")
    assert console.get(f"/admin/catalog/principal/{bob.pk}/change/").status_code in (302, 404)
    assert _text(console.get("/admin/catalog/token/")).count("<tr") == 2  # header and dave's one
    grants_page = _text(console.get("/admin/catalog/grant/"))
    assert "daves.mine" in grants_page  # on a schema dave owns, to bob
    assert "not_this_table" not in grants_page  # bob's grant on something dave does not own
    trail = _text(console.get("/admin/catalog/auditevent/"))
    assert "daves.mine" in trail and "not_this_table" not in trail and "sales.orders" not in trail
    picker = _text(console.get("/admin/catalog/grant/add/?securable_type=table"))
    assert "ext_orders" not in picker and "not_this_table" not in picker
    check = console.get("/admin/catalog/principal/check/", {
        "principal": "bob", "privilege": "SELECT", "securable_type": "table",
        "securable": str(namespace["other"].id)})
    assert "not_this_table" not in _text(check)
    mine = Schema.objects.get(name="mine")
    check = console.get("/admin/catalog/principal/check/", {
        "principal": "bob", "privilege": "USE SCHEMA", "securable_type": "schema", "securable": str(mine.id)})
    assert check.status_code == 200 and "daves.mine" in _text(check)


def test_group_pages_members_grants_and_reach(governance, namespace):
    admin = Principal.objects.get(name="admin")
    group = groups.create_group(caller=admin, name="analysts")
    inner = groups.create_group(caller=admin, name="interns")
    page = _text(governance.get(f"/admin/catalog/group/{group.pk}/change/"))
    assert "No members." in page and "principal:bob" in page and "group:interns" in page
    governance.post(f"/admin/catalog/group/{group.pk}/members/", {"member": "principal:bob"})
    governance.post(f"/admin/catalog/group/{group.pk}/members/", {"member": "group:interns"})
    assert groups.member_names(group) == (["bob"], ["interns"])
    # The grant form offers groups; the grant goes through the service.
    picker = _text(governance.get("/admin/catalog/grant/add/?securable_type=table"))
    assert "analysts (group)" in picker
    assert _grant(governance, namespace["ext_orders"], principal="analysts").status_code in (200, 302)
    assert Grant.objects.filter(principal="analysts", privilege="SELECT").exists()
    page = _text(governance.get(f"/admin/catalog/group/{group.pk}/change/"))
    assert "sales.orders.ext_orders" in page and 'data-member="bob"' in page
    # bob's own page says where his SELECT comes from
    bob = Principal.objects.get(name="bob")
    assert "to group analysts" in _text(governance.get(f"/admin/catalog/principal/{bob.pk}/change/"))
    governance.post(f"/admin/catalog/group/{group.pk}/members/", {"remove": "principal:bob"})
    assert groups.member_names(group) == ([], ["interns"])
    actions = list(AuditEvent.objects.filter(securable_id=group.pk).values_list("action", "outcome"))
    assert actions.count(("updateGroup", "SUCCESS")) == 3
    # A console user that neither owns nor is in the group does not see it, and cannot change it.
    get_user_model().objects.create_user("erin", "erin@example.com", "pw", is_staff=True, is_superuser=True)
    principals.ensure_principal(name="erin")
    erin = Client()
    erin.force_login(get_user_model().objects.get(username="erin"))
    assert "analysts" not in _text(erin.get("/admin/catalog/group/"))
    erin.post(f"/admin/catalog/group/{group.pk}/members/", {"member": "principal:erin"})
    assert groups.member_names(group) == ([], ["interns"])
    assert inner.name in groups.member_names(group)[1]


def test_the_console_without_its_slash_is_sent_to_it(client):
    response = client.get("/admin")
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin", follow=True).redirect_chain[-1][0].startswith("/admin/login/")


def test_console_writes_times_sizes_and_counts_one_way():
    from datetime import UTC, datetime, timedelta

    from catalog.templatetags import console_format

    moment = datetime(2026, 11, 27, 1, 45, 7, tzinfo=UTC)
    assert console_format.utc_text(moment) == "2026-11-27 01:45:07 UTC"
    assert console_format.utc_text(int(moment.timestamp() * 1000)) == "2026-11-27 01:45:07 UTC"
    assert console_format.ago_text(moment, now=moment + timedelta(minutes=3, seconds=5)) == "3 min ago"
    assert console_format.ago_text(moment, now=moment + timedelta(days=2)) == "2 d ago"
    assert 'datetime="2026-11-27T01:45:07+00:00"' in console_format.moment(moment)
    assert console_format.size(1536) == "1.5 KiB" and console_format.size(None) == "—"
    assert console_format.count(1234567) == "1,234,567"
