"""The Polaris management API (/api/management/v1) driven by Apache Polaris's own `polaris` CLI,
as its documentation shows it, against the live server; then pyiceberg, authenticated with the
new principal's client credentials, can do exactly what was granted. The attacks on the role
model are refused and change no row."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, NoSuchTableError

from catalog.models import AuditEvent, Catalog, Grant, Group, GroupMember, Principal, Table
from catalog.services import groups, principals
from tests.pyiceberg_support import SCHEMA, ids, rows
from ucweb.errors import InvalidParameter

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("polaris")]

MANAGEMENT = "/api/management/v1"


def _state() -> dict:
    """What an attack must leave as it was: every governance row."""
    return {"grants": sorted(Grant.objects.values_list("principal", "securable_name", "privilege")),
            "groups": sorted(Group.objects.values_list("name", "kind")),
            "members": sorted(map(str, GroupMember.objects.values_list("group__name", "principal__name",
                                                                          "member_group__name"))),
            "principals": sorted(Principal.objects.values_list("name", "client_secret_hash")),
            "catalogs": sorted(Catalog.objects.values_list("name", "storage_root"))}


class Service:
    """The server as its metastore admin `ops` (a service principal) sees it: through the CLI and
    through plain HTTP."""

    def __init__(self, url: str, client_id: str, client_secret: str, token: str):
        self.url, self.client_id, self.client_secret = url, client_id, client_secret
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def polaris(self, *args: str) -> str:
        """`polaris --base-url ... --client-id ... --client-secret ... <args>`: its output."""
        done = subprocess.run(
            [sys.executable, "-m", "apache_polaris.cli.polaris_cli", "--base-url", self.url,
             "--client-id", self.client_id, "--client-secret", self.client_secret, *args],
            capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def call(self, method: str, path: str, body=None, *, token: str | None = None) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        return self.session.request(method, f"{self.url}{MANAGEMENT}{path}", json=body, headers=headers, timeout=30)

    def iceberg(self, catalog: str, credential: str | None = None) -> RestCatalog:
        auth = {"credential": credential} if credential else {"token": self.session.headers["Authorization"][7:]}
        # as Polaris documents pyiceberg: the principal's client credentials and the scope of all its roles
        scope = {"scope": "PRINCIPAL_ROLE:ALL"} if credential else {}
        return RestCatalog(f"{catalog}-{bool(credential)}", uri=f"{self.url}/api/catalog", warehouse=catalog,
                           **auth, **scope)


@pytest.fixture
def service(live_server, bootstrap, storage_root, make_token) -> Service:
    _, client_id, client_secret = principals.create_service_principal(name="ops", admin=True)
    return Service(live_server.url, client_id, client_secret, make_token("ops"))


def _catalog_with_a_table(service: Service, tmp_path, name: str) -> None:
    service.polaris("catalogs", "create", "--storage-type", "file",
                    "--default-base-location", (tmp_path / name).as_uri(), name)
    admin = service.iceberg(name)
    admin.create_namespace("sales")
    admin.create_table(("sales", "orders"), schema=SCHEMA).append(rows((1, "2024-01-01T10:00", "a", 1.5)))


def _reader_of_lake(service: Service, principal: str) -> dict:
    """A new principal, analyst (a principal role) holding lake.readers (a catalog role), all
    created through the CLI; the answer is the principal's credentials."""
    credentials = json.loads(service.polaris("principals", "create", principal))
    service.polaris("principal-roles", "create", "analyst")
    service.polaris("principal-roles", "grant", "--principal", principal, "analyst")
    service.polaris("catalog-roles", "create", "--catalog", "lake", "readers")
    service.polaris("catalog-roles", "grant", "--catalog", "lake", "--principal-role", "analyst", "readers")
    return credentials


def test_the_cli_grants_and_pyiceberg_may_do_exactly_that(service, tmp_path):
    _catalog_with_a_table(service, tmp_path, "lake")
    credentials = _reader_of_lake(service, "alice")
    table_grant = ("--catalog", "lake", "--catalog-role", "readers", "--namespace", "sales", "--table", "orders",
                   "TABLE_READ_DATA")
    service.polaris("privileges", "table", "grant", *table_grant)
    listed = [json.loads(line) for line in service.polaris(
        "privileges", "list", "--catalog", "lake", "--catalog-role", "readers").splitlines()]
    assert listed == [{"type": "table", "namespace": ["sales"], "tableName": "orders", "privilege": "TABLE_READ_DATA"}]
    assert sorted(Grant.objects.filter(principal="lake.readers").values_list("securable_name", "privilege")) == [
        ("lake", "USE CATALOG"), ("lake.sales", "USE SCHEMA"), ("lake.sales.orders", "SELECT")]

    alice = service.iceberg("lake", f"{credentials['clientId']}:{credentials['clientSecret']}")
    orders = alice.load_table(("sales", "orders"))
    assert ids(orders) == [1]
    with pytest.raises(ForbiddenError):
        orders.append(rows((2, "2024-01-02T10:00", "b", 2.5)))
    assert ids(service.iceberg("lake").load_table(("sales", "orders"))) == [1]

    service.polaris("privileges", "table", "revoke", *table_grant)
    assert not Grant.objects.filter(principal="lake.readers").exists()  # the way to it went with it
    with pytest.raises(NoSuchTableError):
        alice.load_table(("sales", "orders"))


def test_roles_principals_and_catalogs_read_back_as_polaris_shows_them(service, tmp_path):
    _catalog_with_a_table(service, tmp_path, "lake")
    catalog = json.loads(service.polaris("catalogs", "get", "lake"))
    assert catalog["properties"]["default-base-location"] == (tmp_path / "lake").as_uri()
    assert catalog["storageConfigInfo"] == {"storageType": "FILE", "allowedLocations": [(tmp_path / "lake").as_uri()]}
    first = json.loads(service.polaris("principals", "create", "bob"))
    rotated = json.loads(service.polaris("principals", "rotate-credentials", "bob"))
    assert rotated["clientId"] == first["clientId"] and rotated["clientSecret"] != first["clientSecret"]
    service.polaris("principal-roles", "create", "engineer")
    service.polaris("principal-roles", "grant", "--principal", "bob", "engineer")
    service.polaris("catalog-roles", "create", "--catalog", "lake", "writers")
    service.polaris("catalog-roles", "grant", "--catalog", "lake", "--principal-role", "engineer", "writers")
    service.polaris("privileges", "catalog", "grant", "--catalog", "lake", "--catalog-role", "writers",
                    "TABLE_WRITE_DATA")
    service.polaris("privileges", "namespace", "grant", "--catalog", "lake", "--catalog-role", "writers",
                    "--namespace", "sales", "TABLE_CREATE")
    assert service.call("GET", "/catalogs/lake/catalog-roles/writers/grants").json()["grants"] == [
        {"type": "catalog", "privilege": "TABLE_WRITE_DATA"},
        {"type": "namespace", "namespace": ["sales"], "privilege": "TABLE_CREATE"}]
    assert [role["name"] for role in service.call("GET", "/principals/bob/principal-roles").json()["roles"]] == [
        "engineer"]
    assert [role["name"] for role in service.call(
        "GET", "/principal-roles/engineer/catalog-roles/lake").json()["roles"]] == ["writers"]

    bob = service.iceberg("lake", f"{rotated['clientId']}:{rotated['clientSecret']}")
    bob.load_table(("sales", "orders")).append(rows((2, "2024-01-02T10:00", "b", 2.5)))
    bob.create_table(("sales", "returns"), schema=SCHEMA)
    assert ids(service.iceberg("lake").load_table(("sales", "orders"))) == [1, 2]

    # a revoke keeps the way to what the role still holds, and takes the rest of it
    service.polaris("privileges", "namespace", "revoke", "--catalog", "lake", "--catalog-role", "writers",
                    "--namespace", "sales", "TABLE_CREATE")
    assert sorted(Grant.objects.filter(principal="lake.writers").values_list("securable_name", "privilege")) == [
        ("lake", "MODIFY"), ("lake", "SELECT"), ("lake", "USE CATALOG"), ("lake", "USE SCHEMA")]
    bob.load_table(("sales", "orders")).append(rows((3, "2024-01-03T10:00", "c", 3.5)))

    service.polaris("principal-roles", "revoke", "--principal", "bob", "engineer")
    with pytest.raises(NoSuchTableError):
        bob.load_table(("sales", "orders"))
    service.polaris("principals", "delete", "bob")
    assert not Principal.objects.filter(name="bob").exists()


def test_attacks_on_the_role_model_are_refused_and_change_nothing(service, tmp_path, make_token):
    for name in ("a", "b"):
        _catalog_with_a_table(service, tmp_path, name)
    service.polaris("principals", "create", "carol")
    service.polaris("principal-roles", "create", "team")
    service.polaris("principal-roles", "grant", "--principal", "carol", "team")
    service.polaris("catalog-roles", "create", "--catalog", "a", "r")
    service.polaris("catalog-roles", "grant", "--catalog", "a", "--principal-role", "team", "r")
    before = _state()
    table_read = {"grant": {"type": "table", "namespace": ["sales"], "tableName": "orders",
                            "privilege": "TABLE_READ_DATA"}}
    attacks = [
        # catalog a's role through catalog b's path, by its Polaris and by its global name
        ("PUT", "/catalogs/b/catalog-roles/r/grants", table_read, None, 404),
        ("PUT", "/catalogs/b/catalog-roles/a.r/grants", table_read, None, 404),
        # a namespace that catalog a does not have (catalog b's is not reachable from a's role)
        ("PUT", "/catalogs/a/catalog-roles/r/grants",
         {"grant": {"type": "namespace", "namespace": ["elsewhere"], "privilege": "TABLE_READ_DATA"}}, None, 404),
        # a principal role as its own catalog role: roles are looked up by their kind
        ("PUT", "/principal-roles/team/catalog-roles/a", {"catalogRole": {"name": "team"}}, None, 404),
        ("PUT", "/principals/carol/principal-roles", {"principalRole": {"name": "a.r"}}, None, 404),
        # unknown privileges, and Polaris privileges that ucweb has no equivalent for
        ("PUT", "/catalogs/a/catalog-roles/r/grants", {"grant": {"type": "catalog", "privilege": "TABLE_EAT_DATA"}},
         None, 400),
        ("PUT", "/catalogs/a/catalog-roles/r/grants",
         {"grant": {"type": "catalog", "privilege": "CATALOG_MANAGE_ACCESS"}}, None, 400),
        ("PUT", "/catalogs/a/catalog-roles/r/grants", {"grant": {**table_read["grant"], "privilege": "TABLE_CREATE"}},
         None, 400),
        ("PUT", "/catalogs/a/catalog-roles/r/grants",
         {"grant": {"type": "view", "namespace": ["sales"], "viewName": "v", "privilege": "VIEW_LIST"}}, None, 400),
        ("POST", "/catalogs/a/catalog-roles/r/grants?cascade=true", table_read, None, 400),
        # a catalog with a second location, or an external one
        ("POST", "/catalogs", {"catalog": {"name": "c", "type": "INTERNAL",
                                           "properties": {"default-base-location": (tmp_path / "c").as_uri()},
                                           "storageConfigInfo": {"storageType": "FILE", "allowedLocations": [
                                               (tmp_path / "c").as_uri(), (tmp_path / "d").as_uri()]}}}, None, 400),
        ("POST", "/catalogs", {"catalog": {"name": "c", "type": "EXTERNAL", "properties": {
            "default-base-location": (tmp_path / "c").as_uri()}, "storageConfigInfo": {"storageType": "FILE"}}},
         None, 400),
        ("PUT", "/catalogs/a", {"properties": {"default-base-location": (tmp_path / "moved").as_uri()}}, None, 400),
        ("DELETE", "/catalogs/a", None, None, 409),  # not empty: its roles stay too
        ("DELETE", "/principals/ops", None, None, 400),  # the caller itself
        # a principal that is no metastore admin
        ("GET", "/principals", None, make_token("carol"), 403),
        ("POST", "/principals", {"principal": {"name": "mallory"}}, make_token("carol"), 403),
        ("PUT", "/principals/carol/principal-roles", {"principalRole": {"name": "team"}}, make_token("carol"), 403),
    ]
    for method, path, body, token, status in attacks:
        response = service.call(method, path, body, token=token)
        assert response.status_code == status, (method, path, response.content)
        assert response.json()["error"]["code"] == status
        assert _state() == before, (method, path)

    # The grant engine itself refuses a catalog role privileges in another catalog, and a cycle.
    table_in_b = {"securable_type": "table", "full_name": "b.sales.orders", "privilege": "SELECT"}
    response = requests.patch(f"{service.url}/api/2.1/unity-catalog/permissions/{table_in_b['securable_type']}/"
                              f"{table_in_b['full_name']}", json={"changes": [{"principal": "a.r", "add": ["SELECT"]}]},
                              headers=service.session.headers, timeout=30)
    assert response.status_code == 400, response.content
    with pytest.raises(InvalidParameter, match="cycle"):
        groups.update_members(caller=Principal.objects.get(name="ops"), name="team", add_groups=["a.r"])
    assert _state() == before
    assert AuditEvent.objects.filter(action="updatePermissions", outcome="FAILED").exists()


def test_deleting_a_catalog_role_that_holds_grants_revokes_them(service, tmp_path):
    _catalog_with_a_table(service, tmp_path, "lake")
    credentials = _reader_of_lake(service, "dave")
    service.polaris("privileges", "namespace", "grant", "--catalog", "lake", "--catalog-role", "readers",
                    "--namespace", "sales", "TABLE_READ_DATA")
    dave = service.iceberg("lake", f"{credentials['clientId']}:{credentials['clientSecret']}")
    assert ids(dave.load_table(("sales", "orders"))) == [1]

    service.polaris("catalog-roles", "delete", "--catalog", "lake", "readers")
    assert not Grant.objects.filter(principal="lake.readers").exists()
    assert not Group.objects.filter(name="lake.readers").exists()
    with pytest.raises(NoSuchTableError):
        dave.load_table(("sales", "orders"))
    # a role of the same name starts with nothing: the old grants do not come back
    service.polaris("catalog-roles", "create", "--catalog", "lake", "readers")
    assert service.call("GET", "/catalogs/lake/catalog-roles/readers/grants").json() == {"grants": []}
    assert service.call("GET", "/catalogs/lake/catalog-roles/readers/principal-roles").json() == {"roles": []}


def test_bad_bodies_get_a_clear_error_and_change_nothing(service, tmp_path):
    _catalog_with_a_table(service, tmp_path, "lake")
    service.polaris("catalog-roles", "create", "--catalog", "lake", "r")
    before = _state()
    location = (tmp_path / "x").as_uri()
    cases = [
        ("POST", "/catalogs", {}, 400),
        ("POST", "/catalogs", {"catalog": {"name": "x", "properties": {}}}, 400),
        ("POST", "/catalogs", {"catalog": {"name": "x", "properties": {"default-base-location": location + "\x00"}}},
         400),
        ("POST", "/catalogs", {"catalog": {"name": "x", "properties": {"default-base-location": location,
                                                                      "k": "v\x00"}}}, 400),
        ("POST", "/catalogs", {"catalog": {"name": "x", "properties": {"default-base-location": location},
                                           "storageConfigInfo": {"storageType": "S3"}}}, 400),
        ("POST", "/principals", {"principal": {"name": "a\x00"}}, 400),
        ("POST", "/principals", {"principal": {"name": "ops"}}, 409),
        ("POST", "/principal-roles", {"principalRole": "x"}, 400),
        ("POST", "/catalogs/lake/catalog-roles", {"catalogRole": {"name": "r"}}, 409),
        ("PUT", "/principals/ops/principal-roles", {"principalRole": {"name": 5}}, 404),
        ("PUT", "/catalogs/lake/catalog-roles/r/grants", {"grant": {"type": "namespace", "namespace": ["\x00"],
                                                                    "privilege": "TABLE_READ_DATA"}}, 400),
        ("PUT", "/catalogs/lake/catalog-roles/r/grants", {"grant": {"type": "table", "namespace": ["sales"],
                                                                    "tableName": {"a": 1}, "privilege": "TABLE_READ_DATA"}},
         400),
        ("PUT", "/catalogs/lake/catalog-roles/r/grants", {"grant": "TABLE_READ_DATA"}, 400),
    ]
    for method, path, body, status in cases:
        response = service.call(method, path, body)
        assert response.status_code == status, (method, path, body, response.content)
        assert _state() == before, (method, path, body)


def test_the_schema_describes_every_management_operation(client):
    import yaml

    schema = yaml.safe_load(client.get("/api/schema/").content)
    operations = {operation["operationId"] for path, item in schema["paths"].items()
                  if path.startswith(MANAGEMENT) for operation in item.values()}
    assert operations == {
        "listPolarisCatalogs", "createPolarisCatalog", "getPolarisCatalog", "updatePolarisCatalog",
        "deletePolarisCatalog", "listPrincipals", "createPrincipal", "getPrincipal", "deletePrincipal",
        "rotateCredentials", "listPrincipalRolesAssigned", "assignPrincipalRole", "revokePrincipalRole",
        "listPrincipalRoles", "createPrincipalRole", "getPrincipalRole", "deletePrincipalRole",
        "listAssigneePrincipalsForPrincipalRole", "listCatalogRolesForPrincipalRole",
        "assignCatalogRoleToPrincipalRole", "revokeCatalogRoleFromPrincipalRole", "listCatalogRoles",
        "createCatalogRole", "getCatalogRole", "deleteCatalogRole", "listAssigneePrincipalRolesForCatalogRole",
        "listGrantsForCatalogRole", "addGrantToCatalogRole", "revokeGrantFromCatalogRole"}


def test_client_secrets_are_safe_to_pass_on_a_command_line(db):
    """A secret is an argument of the `polaris` CLI and of curl: none may begin with "-" (argparse
    then takes it for an option) or hold characters a shell treats specially."""
    from catalog.services import principals

    for index in range(200):
        _, client_id, secret = principals.create_service_principal(name=f"robot{index}")
        assert re.fullmatch(r"[0-9a-f]{64}", secret), secret


def test_a_catalog_may_not_be_placed_on_another_securables_storage(service, tmp_path):
    """The management API places a catalog's root by the one location rule (catalog.locations.
    place_root): a root inside another securable's location or managed area is refused and
    nothing is written. (A root that holds others, or
    that another catalog shares, is allowed: each catalog's managed area is a folder of its own.)"""
    _catalog_with_a_table(service, tmp_path, "lake")
    table = Table.objects.get(name="orders")
    lake_area = Catalog.objects.get(name="lake").storage_location
    files = sorted(str(path) for path in tmp_path.rglob("*"))
    before = _state()
    for location in (table.storage_location, f"{table.storage_location}/data", lake_area, f"{lake_area}/x"):
        response = service.call("POST", "/catalogs", {"catalog": {
            "name": "intruder", "type": "INTERNAL", "properties": {"default-base-location": location},
            "storageConfigInfo": {"storageType": "FILE", "allowedLocations": [location]}}})
        assert response.status_code in (400, 403), (location, response.text)
        assert response.json()["error"]["type"] in ("BadRequestException", "ForbiddenException"), response.text
    assert _state() == before
    assert sorted(str(path) for path in tmp_path.rglob("*")) == files
