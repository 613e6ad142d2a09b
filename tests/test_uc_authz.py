"""Authorization of the Unity Catalog namespace API beyond the matrix of every operation (that
one is declared once per securable in tests/test_api_securables.py, see tests/api_cases/):
tokens, what the list endpoints show to whom, what the permissions endpoint shows, grants and
ownership at work, and renames.

No existence oracle: a refusal about something the caller may not see (what the list endpoints
would not show them) is the 404 of a missing object, with the error code of the outermost level
the caller may not see; a refusal about something they see is a 403.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from catalog.choices import AuditOutcome, Privilege, SecurableType
from catalog.models import AuditEvent, Catalog, Column, Grant, Metastore, Principal, Schema, Table
from catalog.resolve import securable_row
from catalog.services import catalogs, credentials, external_locations, principals, schemas, tables
from tests.helpers import UC, external_table_body, grant, rows


USE_CATALOG = Privilege.USE_CATALOG.value
USE_SCHEMA = Privilege.USE_SCHEMA.value
CREATE_SCHEMA = Privilege.CREATE_SCHEMA.value
CREATE_TABLE = Privilege.CREATE_TABLE.value
SELECT = Privilege.SELECT.value
MODIFY = Privilege.MODIFY.value
CREATE_EXTERNAL_TABLE = Privilege.CREATE_EXTERNAL_TABLE.value
LANDING_URL = "file:///tmp/ucweb-tests"

# Securables are named by reference: "metastore", "location:<name>" for an external location, or
# the full name of a catalog, schema or table.
METASTORE = "metastore"
LOCATION = "location:"
LANDING = "location:landing"


def ref_type(ref: str) -> str:
    if ref == METASTORE:
        return SecurableType.METASTORE
    if ref.startswith(LOCATION):
        return SecurableType.EXTERNAL_LOCATION
    return [SecurableType.CATALOG, SecurableType.SCHEMA, SecurableType.TABLE][ref.count(".")]


def resolve(ref: str):
    return securable_row(ref_type(ref), ref.removeprefix(LOCATION))


def grant_on(principal: str, ref: str, *privileges: str) -> None:
    grant(principal, ref_type(ref), ref.removeprefix(LOCATION), *privileges)


def make_owner(principal: str, ref: str) -> None:
    securable = resolve(ref)
    type(securable).objects.filter(id=securable.id).update(owner=principal)


def table_body(name: str, schema: str = "sales") -> dict:
    """An external table of catalog shop, in external location landing."""
    return external_table_body(name, f"{LANDING_URL}/shop/{schema}/{name}", schema=schema)


@pytest.fixture(scope="module")
def shared_world(module_db, django_db_blocker):
    with django_db_blocker.unblock():
        call_command("bootstrap", verbosity=0)
        _build_world()


@pytest.fixture
def world(db, shared_world):
    """unity.default (bootstrap), plus catalogs shop and other owned by admin:
    shop.sales.{trips, refunds}, shop.hr.salaries. carol holds grants that only owners and admins
    may read; dave exists and holds nothing (the grantee of permission changes). Built once for
    the module; what a test changes is rolled back after it."""


def _build_world() -> None:
    admin = Principal.objects.get(name="admin")
    for name in ("bob", "carol", "dave"):
        principals.ensure_principal(name=name)
    for name in ("shop", "other"):
        catalogs.create_catalog(caller=admin, name=name, comment="original")
    for name in ("sales", "hr"):
        schemas.create_schema(caller=admin, name=name, catalog_name="shop", comment="original")
    credentials.create_credential(caller=admin, name="lakecred",
                                  aws_iam_role={"role_arn": "arn:aws:iam::123456789012:role/lake"})
    external_locations.create_external_location(caller=admin, name="landing", url=LANDING_URL,
                                                credential_name="lakecred")
    for schema, name in (("sales", "trips"), ("sales", "refunds"), ("hr", "salaries")):
        body = table_body(name, schema)
        body.pop("table_type")
        tables.create_table(caller=admin, table_type="EXTERNAL", **body)
    grant_on("carol", "shop", USE_CATALOG)
    grant_on("carol", "shop.sales", USE_SCHEMA)
    grant_on("carol", "shop.sales.trips", SELECT)
    # External tables must lie in an external location the creator may use. That privilege is
    # not what most tests here are about, so bob holds it throughout;
    # test_external_tables_need_a_location shows the refusal without it.
    grant_on("bob", LANDING, CREATE_EXTERNAL_TABLE)


def snapshot() -> dict:
    """Every row of every namespace and governance table except the audit log and tokens."""
    return rows(Metastore, Principal, Catalog, Schema, Table, Column, Grant)


def call(client: APIClient, method: str, path: str, body=None):
    kwargs = {"format": "json"} if body is not None else {}
    if body is not None:
        kwargs["data"] = body
    return getattr(client, method)(f"{UC}{path}", **kwargs)


def assert_uc_error(response, status: int, error_code: str | None = None) -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error_code", "message", "details"}, body
    assert isinstance(body["message"], str) and body["message"]
    if error_code is not None:
        assert body["error_code"] == error_code, body


# -- authentication ---------------------------------------------------------------------------------
def test_expired_token_is_401(world):
    bob = Principal.objects.get(name="bob")
    token = principals.issue_token(principal=bob, lifetime=timedelta(seconds=-1))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert_uc_error(client.get(f"{UC}/catalogs"), 401, "UNAUTHENTICATED")


def test_token_of_another_principal_acts_as_that_principal(world, make_client):
    """The scheme is case-insensitive and the token decides who the caller is."""
    token = principals.issue_token(principal=Principal.objects.get(name="carol"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"bearer {token}")
    assert client.get(f"{UC}/tables/shop.sales.trips").status_code == 200
    # carol holds nothing on refunds: to her it does not exist.
    assert_uc_error(client.get(f"{UC}/tables/shop.sales.refunds"), 404, "TABLE_DOES_NOT_EXIST")


# -- what the list endpoints show ---------------------------------------------------------------------
VISIBILITY = [
    # id, bob's grants, what bob owns, path, key, names bob sees
    ("catalogs: nothing", (), (), "/catalogs", "catalogs", []),
    ("catalogs: USE CATALOG on one", (("shop", USE_CATALOG),), (), "/catalogs", "catalogs", ["shop"]),
    ("catalogs: owner of one", (), ("other",), "/catalogs", "catalogs", ["other"]),
    ("catalogs: grant and ownership", (("shop", USE_CATALOG),), ("other",), "/catalogs", "catalogs",
     ["other", "shop"]),
    ("catalogs: other privileges only", (("shop", CREATE_SCHEMA), ("shop", SELECT), ("shop.sales", USE_SCHEMA)),
     (), "/catalogs", "catalogs", []),
    ("catalogs: owner of a schema only", (), ("shop.sales",), "/catalogs", "catalogs", []),
    ("schemas: USE SCHEMA on one", (("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA)), (),
     "/schemas?catalog_name=shop", "schemas", ["sales"]),
    ("schemas: USE SCHEMA on the catalog", (("shop", USE_CATALOG), ("shop", USE_SCHEMA)), (),
     "/schemas?catalog_name=shop", "schemas", ["hr", "sales"]),
    ("schemas: USE CATALOG only", (("shop", USE_CATALOG),), (), "/schemas?catalog_name=shop", "schemas", []),
    ("schemas: owner of one", (("shop", USE_CATALOG),), ("shop.hr",), "/schemas?catalog_name=shop",
     "schemas", ["hr"]),
    ("schemas: USE SCHEMA elsewhere", (("shop", USE_CATALOG), ("unity.default", USE_SCHEMA)), (),
     "/schemas?catalog_name=shop", "schemas", []),
    ("schemas: other privileges only", (("shop", USE_CATALOG), ("shop.sales", CREATE_TABLE),
                                        ("shop.sales.trips", SELECT)), (),
     "/schemas?catalog_name=shop", "schemas", []),
    ("schemas: catalog owner", (), ("shop",), "/schemas?catalog_name=shop", "schemas", ["hr", "sales"]),
    ("tables: SELECT on one", (("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA), ("shop.sales.trips", SELECT)),
     (), "/tables?catalog_name=shop&schema_name=sales", "tables", ["trips"]),
    ("tables: MODIFY on one", (("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA),
                               ("shop.sales.refunds", MODIFY)), (),
     "/tables?catalog_name=shop&schema_name=sales", "tables", ["refunds"]),
    ("tables: SELECT on the schema", (("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA), ("shop.sales", SELECT)),
     (), "/tables?catalog_name=shop&schema_name=sales", "tables", ["refunds", "trips"]),
    ("tables: SELECT on the catalog", (("shop", USE_CATALOG), ("shop", USE_SCHEMA), ("shop", SELECT)), (),
     "/tables?catalog_name=shop&schema_name=sales", "tables", ["refunds", "trips"]),
    ("tables: USE only", (("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA)), (),
     "/tables?catalog_name=shop&schema_name=sales", "tables", []),
    ("tables: SELECT in another schema", (("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA),
                                          ("shop.hr", SELECT), ("shop.hr.salaries", SELECT)), (),
     "/tables?catalog_name=shop&schema_name=sales", "tables", []),
    ("tables: CREATE TABLE only", (("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA), ("shop.sales", CREATE_TABLE)),
     (), "/tables?catalog_name=shop&schema_name=sales", "tables", []),
    ("tables: owner of one", (("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA)), ("shop.sales.refunds",),
     "/tables?catalog_name=shop&schema_name=sales", "tables", ["refunds"]),
    ("tables: schema owner", (("shop", USE_CATALOG),), ("shop.sales",),
     "/tables?catalog_name=shop&schema_name=sales", "tables", ["refunds", "trips"]),
]


@pytest.mark.parametrize(
    "grants, owns, path, key, expected", [pytest.param(*case[1:], id=case[0]) for case in VISIBILITY]
)
def test_lists_show_only_what_the_caller_may_see(world, make_client, grants, owns, path, key, expected):
    client = make_client("bob")
    for ref, privilege in grants:
        grant_on("bob", ref, privilege)
    for ref in owns:
        make_owner("bob", ref)
    response = client.get(f"{UC}{path}")
    assert response.status_code == 200, response.content
    assert [item["name"] for item in response.json()[key]] == expected
    assert "next_page_token" not in response.json()


@pytest.mark.parametrize("key, path", [
    ("catalogs", "/catalogs"),
    ("schemas", "/schemas?catalog_name=shop"),
    ("tables", "/tables?catalog_name=shop&schema_name=sales"),
])
def test_pages_of_a_filtered_list_hold_only_visible_items(world, make_client, key, path):
    admin = Principal.objects.get(name="admin")
    for index in range(6):
        catalogs.create_catalog(caller=admin, name=f"c{index}")
        schemas.create_schema(caller=admin, name=f"s{index}", catalog_name="shop")
        body = table_body(f"t{index}")
        body.pop("table_type")
        tables.create_table(caller=admin, table_type="EXTERNAL", **body)
    visible = {"catalogs": ["c1", "c4", "shop"], "schemas": ["s2", "s5", "sales"], "tables": ["t0", "t3", "trips"]}
    client = make_client("bob")
    grant_on("bob", "shop", USE_CATALOG)
    grant_on("bob", "shop.sales", USE_SCHEMA)
    grant_on("bob", "shop.sales.trips", SELECT)
    for name in ("c1", "c4"):
        grant_on("bob", name, USE_CATALOG)
    for name in ("s2", "s5"):
        grant_on("bob", f"shop.{name}", USE_SCHEMA)
    for name in ("t0", "t3"):
        grant_on("bob", f"shop.sales.{name}", SELECT)

    seen, token = [], None
    for _ in range(10):
        separator = "&" if "?" in path else "?"
        response = client.get(f"{UC}{path}{separator}max_results=1" + (f"&page_token={token}" if token else ""))
        assert response.status_code == 200, response.content
        page = response.json()
        assert len(page[key]) <= 1
        seen += [item["name"] for item in page[key]]
        token = page.get("next_page_token")
        if not token:
            break
    assert seen == visible[key]


def test_admin_lists_everything(world, admin_client):
    assert [c["name"] for c in admin_client.get(f"{UC}/catalogs").json()["catalogs"]] == ["other", "shop", "unity"]
    assert [s["name"] for s in admin_client.get(f"{UC}/schemas?catalog_name=shop").json()["schemas"]] == [
        "hr", "sales"]
    assert [t["name"] for t in admin_client.get(
        f"{UC}/tables?catalog_name=shop&schema_name=sales").json()["tables"]] == ["refunds", "trips"]


# -- what the permissions endpoint shows --------------------------------------------------------------
def _assignments(response) -> dict:
    assert response.status_code == 200, response.content
    return {a["principal"]: a["privileges"] for a in response.json()["privilege_assignments"]}


def test_non_owners_read_only_their_own_privileges(world, make_client):
    client = make_client("bob")
    grant_on("bob", "shop", USE_CATALOG)
    grant_on("bob", "shop.sales", USE_SCHEMA)
    # Holding nothing on the table, bob does not see it: its privileges are not found either.
    assert_uc_error(client.get(f"{UC}/permissions/table/shop.sales.trips"), 404, "TABLE_DOES_NOT_EXIST")
    grant_on("bob", "shop.sales.trips", MODIFY)
    assert _assignments(client.get(f"{UC}/permissions/table/shop.sales.trips")) == {"bob": [MODIFY]}
    assert _assignments(client.get(f"{UC}/permissions/catalog/shop")) == {"bob": [USE_CATALOG]}
    assert _assignments(client.get(f"{UC}/permissions/table/shop.sales.trips?principal=bob")) == {"bob": [MODIFY]}
    for path in ("/permissions/table/shop.sales.trips", "/permissions/catalog/shop", "/permissions/metastore/x"):
        assert_uc_error(client.get(f"{UC}{path}?principal=carol"), 403, "PERMISSION_DENIED")


@pytest.mark.parametrize("owns", ["shop.sales.trips", "shop.sales", "shop"])
def test_owners_read_everyones_privileges(world, make_client, owns):
    client = make_client("bob")
    grant_on("bob", "shop", USE_CATALOG)
    grant_on("bob", "shop.sales", USE_SCHEMA)
    make_owner("bob", owns)
    assert _assignments(client.get(f"{UC}/permissions/table/shop.sales.trips")) == {"carol": [SELECT]}
    assert _assignments(client.get(f"{UC}/permissions/table/shop.sales.trips?principal=carol")) == {
        "carol": [SELECT]}
    assert _assignments(client.get(f"{UC}/permissions/table/shop.sales.trips?principal=dave")) == {}


def test_admin_reads_everyones_privileges(world, admin_client):
    assert _assignments(admin_client.get(f"{UC}/permissions/catalog/shop")) == {"carol": [USE_CATALOG]}
    assert _assignments(admin_client.get(f"{UC}/permissions/schema/shop.sales?principal=carol")) == {
        "carol": [USE_SCHEMA]}


def test_a_grant_by_an_owner_takes_effect_and_revoking_removes_it(world, make_client):
    owner = make_client("bob")
    make_owner("bob", "shop")
    dave = make_client("dave")
    assert_uc_error(dave.get(f"{UC}/tables/shop.sales.trips"), 404, "CATALOG_DOES_NOT_EXIST")
    response = owner.patch(f"{UC}/permissions/catalog/shop", {"changes": [
        {"principal": "dave", "add": [USE_CATALOG, USE_SCHEMA, SELECT]}]}, format="json")
    assert _assignments(response)["dave"] == sorted([USE_CATALOG, USE_SCHEMA, SELECT])
    assert dave.get(f"{UC}/tables/shop.hr.salaries").status_code == 200
    assert [t["name"] for t in dave.get(f"{UC}/tables?catalog_name=shop&schema_name=sales").json()["tables"]] == [
        "refunds", "trips"]
    owner.patch(f"{UC}/permissions/catalog/shop", {"changes": [{"principal": "dave", "remove": [SELECT]}]},
                format="json")
    assert_uc_error(dave.get(f"{UC}/tables/shop.hr.salaries"), 404, "TABLE_DOES_NOT_EXIST")


def test_a_grantee_cannot_grant_further(world, make_client):
    """Holding a privilege, even every privilege, is not the right to pass it on."""
    client = make_client("carol")
    before = snapshot()
    response = client.patch(f"{UC}/permissions/table/shop.sales.trips",
                            {"changes": [{"principal": "dave", "add": [SELECT]}]}, format="json")
    assert_uc_error(response, 403, "PERMISSION_DENIED")
    assert snapshot() == before
    event = AuditEvent.objects.order_by("-id").first()
    assert (event.principal, event.outcome) == ("carol", AuditOutcome.DENIED)


def test_only_the_owner_or_an_admin_changes_the_owner(world, make_client):
    make_owner("bob", "shop.sales")
    grant_on("bob", "shop", USE_CATALOG)
    grant_on("carol", "shop.sales", MODIFY)
    carol = make_client("carol")
    before = snapshot()
    assert_uc_error(carol.patch(f"{UC}/schemas/shop.sales", {"owner": "carol"}, format="json"), 403)
    assert snapshot() == before
    bob = make_client("bob")
    response = bob.patch(f"{UC}/schemas/shop.sales", {"owner": "carol"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["owner"] == "carol"
    # bob gave it away: he may no longer update it, nor see it (he holds no USE SCHEMA on it).
    assert_uc_error(bob.patch(f"{UC}/schemas/shop.sales", {"comment": "mine"}, format="json"), 404,
                    "SCHEMA_DOES_NOT_EXIST")
    assert Schema.objects.get(name="sales").comment == "original"


def test_external_tables_need_a_location(world, make_client):
    bob = make_client("bob")
    grant_on("bob", "shop", USE_CATALOG)
    grant_on("bob", "shop.sales", USE_SCHEMA)
    grant_on("bob", "shop.sales", CREATE_TABLE)
    Grant.objects.filter(principal="bob", privilege=CREATE_EXTERNAL_TABLE).delete()
    before = snapshot()
    response = call(bob, "post", "/tables", table_body("newtable"))
    assert_uc_error(response, 403, "PERMISSION_DENIED")
    assert "landing" in response.json()["message"]
    outside = {**table_body("elsewhere"), "storage_location": "file:///srv/other/elsewhere"}
    assert_uc_error(call(bob, "post", "/tables", outside), 403, "PERMISSION_DENIED")
    assert snapshot() == before
    grant_on("bob", LANDING, CREATE_EXTERNAL_TABLE)
    assert call(bob, "post", "/tables", table_body("newtable")).status_code == 200


# -- renames propagate ------------------------------------------------------------------------------
def _grant_names(principal: str) -> dict[str, str]:
    return dict(Grant.objects.filter(principal=principal).values_list("privilege", "securable_name"))


def test_renaming_a_catalog_and_a_schema_renames_what_their_grants_show(world, admin_client, make_client):
    """A grant records the full name of its securable for display; renaming a container rewrites
    it on the grants of everything inside, in the same transaction. Access follows the rows."""
    from catalog.services import effective_access

    landing_name = Grant.objects.get(principal="bob", privilege=CREATE_EXTERNAL_TABLE).securable_name
    assert admin_client.patch(f"{UC}/catalogs/shop", {"new_name": "store"}, format="json").status_code == 200
    assert _grant_names("carol") == {USE_CATALOG: "store", USE_SCHEMA: "store.sales", SELECT: "store.sales.trips"}
    response = admin_client.patch(f"{UC}/schemas/store.sales", {"new_name": "sold"}, format="json")
    assert response.status_code == 200, response.content
    assert _grant_names("carol") == {USE_CATALOG: "store", USE_SCHEMA: "store.sold", SELECT: "store.sold.trips"}
    # Grants outside the renamed containers are left as they were.
    assert Grant.objects.get(principal="bob", privilege=CREATE_EXTERNAL_TABLE).securable_name == landing_name

    carol = make_client("carol")
    assert carol.get(f"{UC}/tables/store.sold.trips").status_code == 200
    assert_uc_error(carol.get(f"{UC}/tables/shop.sales.trips"), 404, "CATALOG_DOES_NOT_EXIST")
    assert _assignments(admin_client.get(f"{UC}/permissions/table/store.sold.trips")) == {"carol": [SELECT]}

    table = Table.objects.select_related("schema__catalog").get(name="trips")
    reasons = {row.principal: [h.reason for h in row.holdings] for row in effective_access.on_securable(table)}
    assert reasons["carol"] == ["granted on table store.sold.trips"]
    reach = {row.name: row.usable for row in effective_access.reach_of(Principal.objects.get(name="carol")).rows}
    assert reach["store.sold.trips"] is True and "shop.sales.trips" not in reach

    renames = AuditEvent.objects.filter(action__in=["updateCatalog", "updateSchema"]).order_by("id")
    assert [(e.securable_name, e.outcome) for e in renames] == [
        ("store", AuditOutcome.SUCCESS), ("store.sold", AuditOutcome.SUCCESS)]


def test_a_refused_rename_leaves_every_grant_name(world, make_client):
    carol = make_client("carol")
    before = snapshot()
    assert_uc_error(carol.patch(f"{UC}/catalogs/shop", {"new_name": "store"}, format="json"), 403)
    assert snapshot() == before
