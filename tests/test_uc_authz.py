"""Authorization of the Unity Catalog namespace API, as a table.

Every routed operation of catalogs, schemas, tables, permissions and the metastore summary is
called by principal `bob` in one role at a time:

- anonymous (no token), a principal with no grants, and one with exactly the grants that the
  operation needs (and, one at a time, each of those grants missing);
- the same grants placed on a container instead (privileges are inherited downwards);
- every grantable privilege, but no ownership (update, delete and grant need ownership);
- the owner of the securable (who still needs USE on the containers above it), the same owner
  without those USE privileges, the owner of the schema or catalog above it, and a metastore
  admin.

Each call checks the status, that a refusal changed nothing in the database and was audited as
DENIED, and that a success did what it says and was audited as SUCCESS. List endpoints are
checked to return only what the caller may see.

No existence oracle: a refusal about something the caller may not see (what the list endpoints
would not show them) is the 404 of a missing object, with the error code of the outermost level
the caller may not see; a refusal about something they see is a 403. `sees` below restates that
rule on its own, from the grants and ownership of the role.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from catalog.choices import PRIVILEGES_BY_SECURABLE, AuditOutcome, Privilege, SecurableType
from catalog.models import AuditEvent, Catalog, Column, Grant, Metastore, Principal, Schema, Table
from catalog.resolve import securable_row
from catalog.services import catalogs, credentials, external_locations, principals, schemas, tables
from tests.helpers import UC, grant, rows


USE_CATALOG = Privilege.USE_CATALOG.value
USE_SCHEMA = Privilege.USE_SCHEMA.value
CREATE_CATALOG = Privilege.CREATE_CATALOG.value
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


def external_table_body(name: str, schema: str = "sales", catalog: str = "shop") -> dict:
    return {
        "name": name,
        "catalog_name": catalog,
        "schema_name": schema,
        "table_type": "EXTERNAL",
        "data_source_format": "PARQUET",
        "storage_location": f"{LANDING_URL}/{catalog}/{schema}/{name}",
        "columns": [
            {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "nullable": False},
            {"name": "amount", "type_name": "DOUBLE", "type_text": "double", "position": 1},
        ],
    }


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
        body = external_table_body(name, schema)
        body.pop("table_type")
        tables.create_table(caller=admin, table_type="EXTERNAL", **body)
    grant_on("carol", "shop", USE_CATALOG)
    grant_on("carol", "shop.sales", USE_SCHEMA)
    grant_on("carol", "shop.sales.trips", SELECT)
    # External tables must lie in an external location the creator may use. That privilege is
    # not what this matrix is about, so bob holds it throughout; test_external_tables_need_a_location
    # shows the refusal without it.
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


# -- the operations -------------------------------------------------------------------------------
def _catalog_exists(name):
    return Catalog.objects.filter(name=name).exists()


def _schema_exists(catalog, name):
    return Schema.objects.filter(catalog__name=catalog, name=name).exists()


def _table_exists(full_name):
    catalog, schema, name = full_name.split(".")
    return Table.objects.filter(schema__catalog__name=catalog, schema__name=schema, name=name).exists()


def _dave_holds(ref, privilege):
    return Grant.objects.filter(securable_id=resolve(ref).id, principal="dave", privilege=privilege).exists()


@dataclass(frozen=True)
class Op:
    name: str
    method: str
    path: str
    body: dict | None = None
    # Grants that let bob do it without owning anything; None when only ownership does.
    needed: tuple | None = ()
    # What bob owns in the "owner" role, and the grants an owner still needs to reach it.
    owns: str | None = None
    owner_needs: tuple = ()
    # The status for a principal with no grants at all.
    nobody: int = 403
    # Audit action of a successful mutation; None for reads.
    action: str | None = None
    # Is the operation about something inside catalog shop (so shop's owner may do it)?
    in_shop: bool = True
    # The securable whose visibility decides between 404 and 403 (None: always visible).
    target: str | None = None
    # After a success: did it do what it says?
    done: Callable[[], bool] = field(default=lambda: True, compare=False)

    @property
    def mutation(self) -> bool:
        return self.method != "get"


def _grant_to_dave(privilege):
    return {"changes": [{"principal": "dave", "add": [privilege], "remove": []}]}


OPS = [
    Op("listCatalogs", "get", "/catalogs", nobody=200, in_shop=False),
    Op("createCatalog", "post", "/catalogs", {"name": "newcat", "comment": "new"},
       needed=((METASTORE, CREATE_CATALOG),), action="createCatalog", in_shop=False,
       done=lambda: Catalog.objects.filter(name="newcat", owner="bob").exists()),
    Op("getCatalog", "get", "/catalogs/shop", needed=(("shop", USE_CATALOG),), owns="shop", target="shop"),
    Op("updateCatalog", "patch", "/catalogs/shop", {"comment": "changed"}, needed=None, owns="shop",
       action="updateCatalog", target="shop", done=lambda: Catalog.objects.get(name="shop").comment == "changed"),
    Op("deleteCatalog", "delete", "/catalogs/shop?force=true", needed=None, owns="shop",
       action="deleteCatalog", target="shop",
       done=lambda: not _catalog_exists("shop") and not Schema.objects.filter(catalog__name="shop").exists()
       and not Grant.objects.filter(securable_name__startswith="shop").exists()),
    Op("listSchemas", "get", "/schemas?catalog_name=shop", needed=(("shop", USE_CATALOG),), owns="shop",
       target="shop"),
    Op("createSchema", "post", "/schemas", {"name": "newschema", "catalog_name": "shop"},
       needed=(("shop", USE_CATALOG), ("shop", CREATE_SCHEMA)), owns="shop", action="createSchema", target="shop",
       done=lambda: Schema.objects.filter(catalog__name="shop", name="newschema", owner="bob").exists()),
    Op("getSchema", "get", "/schemas/shop.sales", needed=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA)),
       owns="shop.sales", owner_needs=(("shop", USE_CATALOG),), target="shop.sales"),
    Op("updateSchema", "patch", "/schemas/shop.sales", {"comment": "changed"}, needed=None,
       owns="shop.sales", owner_needs=(("shop", USE_CATALOG),), action="updateSchema", target="shop.sales",
       done=lambda: Schema.objects.get(catalog__name="shop", name="sales").comment == "changed"),
    Op("deleteSchema", "delete", "/schemas/shop.sales?force=true", needed=None,
       owns="shop.sales", owner_needs=(("shop", USE_CATALOG),), action="deleteSchema", target="shop.sales",
       done=lambda: not _schema_exists("shop", "sales") and not _table_exists("shop.sales.trips")),
    Op("listTables", "get", "/tables?catalog_name=shop&schema_name=sales",
       needed=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA)),
       owns="shop.sales", owner_needs=(("shop", USE_CATALOG),), target="shop.sales"),
    Op("createTable", "post", "/tables", external_table_body("newtable"),
       needed=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA), ("shop.sales", CREATE_TABLE)),
       owns="shop.sales", owner_needs=(("shop", USE_CATALOG),), action="createTable", target="shop.sales",
       done=lambda: Table.objects.filter(name="newtable", owner="bob", columns__name="amount").exists()),
    Op("getTable", "get", "/tables/shop.sales.trips",
       needed=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA), ("shop.sales.trips", SELECT)),
       owns="shop.sales.trips", owner_needs=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA)),
       target="shop.sales.trips"),
    Op("getTable(MODIFY)", "get", "/tables/shop.sales.trips",
       needed=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA), ("shop.sales.trips", MODIFY)),
       target="shop.sales.trips"),
    Op("deleteTable", "delete", "/tables/shop.sales.trips", needed=None,
       owns="shop.sales.trips", owner_needs=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA)),
       action="deleteTable", target="shop.sales.trips",
       done=lambda: not _table_exists("shop.sales.trips") and not Grant.objects.filter(
           securable_name="shop.sales.trips").exists()),
    Op("getPermissions(metastore)", "get", "/permissions/metastore/ucweb", nobody=200, in_shop=False),
    # Reading one's own privileges needs what seeing the securable needs (a securable one may not
    # see answers 404, as a missing one does); owners and admins read everyone's.
    Op("getPermissions(catalog)", "get", "/permissions/catalog/shop", needed=(("shop", USE_CATALOG),),
       owns="shop", target="shop"),
    Op("getPermissions(schema)", "get", "/permissions/schema/shop.sales",
       needed=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA)),
       owns="shop.sales", owner_needs=(("shop", USE_CATALOG),), target="shop.sales"),
    Op("getPermissions(table)", "get", "/permissions/table/shop.sales.trips",
       needed=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA), ("shop.sales.trips", SELECT)),
       owns="shop.sales.trips", owner_needs=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA)),
       target="shop.sales.trips"),
    Op("updatePermissions(metastore)", "patch", "/permissions/metastore/ucweb",
       _grant_to_dave(CREATE_CATALOG), needed=None, action="updatePermissions", in_shop=False,
       done=lambda: _dave_holds(METASTORE, CREATE_CATALOG)),
    Op("updatePermissions(catalog)", "patch", "/permissions/catalog/shop",
       _grant_to_dave(USE_CATALOG), needed=None, owns="shop", action="updatePermissions", target="shop",
       done=lambda: _dave_holds("shop", USE_CATALOG)),
    Op("updatePermissions(schema)", "patch", "/permissions/schema/shop.sales",
       _grant_to_dave(USE_SCHEMA), needed=None, owns="shop.sales",
       owner_needs=(("shop", USE_CATALOG),), action="updatePermissions", target="shop.sales",
       done=lambda: _dave_holds("shop.sales", USE_SCHEMA)),
    Op("updatePermissions(table)", "patch", "/permissions/table/shop.sales.trips",
       _grant_to_dave(SELECT), needed=None, owns="shop.sales.trips",
       owner_needs=(("shop", USE_CATALOG), ("shop.sales", USE_SCHEMA)), action="updatePermissions",
       target="shop.sales.trips", done=lambda: _dave_holds("shop.sales.trips", SELECT)),
    Op("getMetastoreSummary", "get", "/metastore_summary", nobody=200, in_shop=False),
]

ALL_PRIVILEGES = tuple(
    (ref, privilege)
    for ref in (METASTORE, "shop", "shop.sales", "shop.sales.trips")
    for privilege in sorted(PRIVILEGES_BY_SECURABLE[ref_type(ref)])
)


def _lift(grants: tuple, to: str) -> tuple:
    """The same privileges granted on container `to` instead of on what lies inside it."""
    lifted = []
    for ref, privilege in grants:
        inside = ref != METASTORE and (ref == to or ref.startswith(to + "."))
        if inside and privilege in PRIVILEGES_BY_SECURABLE[ref_type(to)]:
            ref = to
        lifted.append((ref, privilege))
    return tuple(dict.fromkeys(lifted))


@dataclass(frozen=True)
class Role:
    name: str
    grants: tuple = ()
    owns: str | None = None
    admin: bool = False
    anonymous: bool = False


def roles_for(op: Op):
    """(role, expected status) for every role that makes sense for `op`."""
    yield Role("anonymous", anonymous=True), 401
    yield Role("nobody"), op.nobody
    if op.needed is not None and op.needed:
        yield Role("needed", op.needed), 200
        for index, missing in enumerate(op.needed):
            rest = op.needed[:index] + op.needed[index + 1:]
            yield Role(f"without {missing[1]} on {missing[0]}", rest), op.nobody if not rest else 403
        for container in ("shop.sales", "shop"):
            lifted = _lift(op.needed, container)
            if lifted != op.needed:
                yield Role(f"inherited from {container}", lifted), 200
    yield Role("all privileges, no ownership", ALL_PRIVILEGES), 200 if op.needed is not None else 403
    if op.owns:
        yield Role(f"owner of {op.owns}", op.owner_needs, owns=op.owns), 200
        if op.owner_needs:
            yield Role(f"owner of {op.owns} without USE", (), owns=op.owns), op.nobody
    if op.owns and op.owns.count(".") == 2:
        yield Role("owner of schema shop.sales", (("shop", USE_CATALOG),), owns="shop.sales"), 200
    if op.owns != "shop":
        yield Role("owner of catalog shop", (), owns="shop"), 200 if op.in_shop else op.nobody
    yield Role("admin", admin=True), 200


def sees(role: Role, ref: str) -> str | None:
    """None when `role` sees `ref`; otherwise the error code of the outermost level it does not
    see. Catalogs need USE CATALOG, schemas USE SCHEMA too, tables SELECT or MODIFY too, each
    granted on the securable or a container of it, or ownership of one of them."""
    if role.admin:
        return None
    parts = ref.split(".")

    def has(privilege: str, depth: int) -> bool:
        chain = [".".join(parts[:n]) for n in range(1, depth + 1)]
        return any(role.owns == link or (link, privilege) in role.grants for link in chain)

    if not has(USE_CATALOG, 1):
        return "CATALOG_DOES_NOT_EXIST"
    if len(parts) >= 2 and not has(USE_SCHEMA, 2):
        return "SCHEMA_DOES_NOT_EXIST"
    if len(parts) == 3 and not (has(SELECT, 3) or has(MODIFY, 3)):
        return "TABLE_DOES_NOT_EXIST"
    return None


CASES = [
    pytest.param(op, role, status, id=f"{op.name}-{role.name}")
    for op in OPS
    for role, status in roles_for(op)
]


def client_for(role: Role, make_client) -> APIClient:
    if role.anonymous:
        return APIClient()
    client = make_client("bob", admin=role.admin)
    by_ref = {}
    for ref, privilege in role.grants:
        by_ref.setdefault(ref, []).append(privilege)
    for ref, privileges in by_ref.items():
        grant_on("bob", ref, *privileges)
    if role.owns:
        make_owner("bob", role.owns)
    return client


@pytest.mark.parametrize("op, role, status", CASES)
def test_matrix(world, make_client, op: Op, role: Role, status: int):
    client = client_for(role, make_client)
    before = snapshot()
    last_event = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()

    response = call(client, op.method, op.path, op.body)

    events = list(AuditEvent.objects.filter(id__gt=last_event).order_by("id"))
    hidden = sees(role, op.target) if op.target and not role.anonymous else None
    assert not (status == 200 and hidden), "a case expects success on something the role cannot see"
    if status != 200:
        code = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}[status]
        if status == 403 and hidden:
            status, code = 404, hidden
        assert_uc_error(response, status, code)
        assert snapshot() == before, "a refused request changed the database"
        if status == 401:
            assert response["WWW-Authenticate"].startswith("Bearer")
            assert events == [], "an unauthenticated request wrote an audit event"
        elif op.mutation:
            assert [(e.principal, e.outcome) for e in events] == [("bob", AuditOutcome.DENIED)]
            assert events[0].details["status"] == status
        else:
            assert events == []
        return

    assert response.status_code == 200, response.content
    if op.mutation:
        assert op.done(), f"{op.name} answered 200 but did not happen"
        assert [(e.principal, e.action, e.outcome) for e in events] == [("bob", op.action, AuditOutcome.SUCCESS)]
    else:
        assert snapshot() == before, "a read changed the database"
        assert events == []


# -- authentication ---------------------------------------------------------------------------------
BAD_AUTHORIZATION = [
    "Bearer ucw_not-a-token",
    "Bearer",
    "Bearer ",
    "Basic x",
    "Basic YWRtaW46YWRtaW4=",
    "Token abc",
    "ucw_abc",
]


@pytest.mark.parametrize("header", BAD_AUTHORIZATION)
@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_bad_credentials_are_401(world, op, header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    before, events = snapshot(), AuditEvent.objects.count()
    response = call(client, op.method, op.path, op.body)
    assert_uc_error(response, 401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert snapshot() == before and AuditEvent.objects.count() == events


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
        body = external_table_body(f"t{index}")
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
    response = call(bob, "post", "/tables", external_table_body("newtable"))
    assert_uc_error(response, 403, "PERMISSION_DENIED")
    assert "landing" in response.json()["message"]
    outside = {**external_table_body("elsewhere"), "storage_location": "file:///srv/other/elsewhere"}
    assert_uc_error(call(bob, "post", "/tables", outside), 403, "PERMISSION_DENIED")
    assert snapshot() == before
    grant_on("bob", LANDING, CREATE_EXTERNAL_TABLE)
    assert call(bob, "post", "/tables", external_table_body("newtable")).status_code == 200


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
