"""SCIM 2.0 provisioning at /api/1.0/unity-control/scim2: a directory (scim2-client over HTTP, as
its docs show) creates, finds, changes and removes users and groups; its changes reach
authorization (a deactivated user's token stops working); the attacks on a SCIM endpoint are
refused with the SCIM error envelope and change nothing."""

from __future__ import annotations

import pytest
from httpx2 import Client
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_models import ListResponse, PatchOp, PatchOperation, SearchRequest

from catalog.models import AuditEvent, Catalog, Grant, GroupClosure, GroupMember, Principal, Token
from catalog.models import Group as GroupRow
from tests.conftest import token_for
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)

SCIM = "/api/1.0/unity-control/scim2"
ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


def _http(live_server, token: str) -> Client:
    return Client(base_url=f"{live_server.url}{SCIM}", headers={"Authorization": f"Bearer {token}"})


@pytest.fixture
def admin_token(db):
    return token_for("directory", admin=True)


@pytest.fixture
def directory(live_server, admin_token):
    scim = SyncSCIMClient(_http(live_server, admin_token))
    scim.discover()
    return scim


@pytest.fixture
def http(live_server, admin_token):
    return _http(live_server, admin_token)


def _state() -> tuple:
    """Everything SCIM may change, to compare before and after a refused request."""
    return (sorted(Principal.objects.values_list("name", "active", "display_name", "external_id",
                                                 "is_metastore_admin")),
            sorted(GroupRow.objects.values_list("name", "external_id")),
            sorted(GroupMember.objects.values_list("group__name", "principal__name", "member_group__name"),
                   key=str),
            sorted(GroupClosure.objects.values_list("principal", "group_name")),
            sorted(Grant.objects.values_list("principal", "privilege", "securable_name")))


def _refused(response, status: int, scim_type: str | None = None) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["schemas"] == [ERROR_SCHEMA] and body["status"] == str(status), body
    if scim_type:
        assert body["scimType"] == scim_type, body
    return body


def _patch(*operations) -> dict:
    return {"schemas": [PATCH], "Operations": list(operations)}


def test_a_directory_provisions_users_and_groups(directory, live_server):
    UserModel, GroupModel = directory.get_resource_model("User"), directory.get_resource_model("Group")
    alice = directory.create(UserModel(user_name="alice@example.com", display_name="Alice", external_id="a-1"))
    assert alice.id == str(Principal.objects.get(name="alice@example.com").id)
    bob = directory.create(UserModel(user_name="bob", external_id="b-1"))

    for search in ('externalId eq "a-1"', 'userName eq "ALICE@example.com"', 'displayName eq "alice"'):
        found = directory.query(UserModel, query_parameters=SearchRequest(filter=search))
        assert isinstance(found, ListResponse) and [user.user_name for user in found.resources] == \
            ["alice@example.com"], search

    readers = directory.create(GroupModel(display_name="readers", members=[{"value": alice.id, "type": "User"}]))
    team = directory.create(GroupModel(display_name="team", members=[{"value": readers.id, "type": "Group"},
                                                                     {"value": bob.id, "type": "User"}]))
    assert set(GroupClosure.objects.filter(principal="alice@example.com").values_list("group_name", flat=True)) \
        == {"readers", "team"}

    alice.display_name = "Alice Liddell"
    alice = directory.replace(alice)
    assert Principal.objects.get(name="alice@example.com").display_name == "Alice Liddell"

    directory.modify(GroupModel, team.id, PatchOp[GroupModel](operations=[
        PatchOperation(op="remove", path=f'members[value eq "{bob.id}"]'),
        PatchOperation(op="replace", path="displayName", value="crew")]))
    crew = directory.query(GroupModel, team.id)
    assert crew.display_name == "crew" and [member.value for member in crew.members] == [readers.id]
    assert not GroupClosure.objects.filter(principal="bob").exists()

    directory.delete(GroupModel, crew.id)
    directory.delete(UserModel, bob.id)
    assert not Principal.objects.filter(name="bob").exists()
    assert set(GroupRow.objects.values_list("name", flat=True)) == {"readers"}


def test_deactivating_a_user_stops_its_token_at_once(live_server, http):
    token = token_for("carol")
    carol = _http(live_server, token)
    me = carol.get("/Me")
    assert me.status_code == 200 and me.json()["userName"] == "carol"
    assert carol.get(f"{live_server.url}{UC}/catalogs").status_code == 200  # and the token is now cached

    response = http.patch(f"/Users/{me.json()['id']}", json=_patch({"op": "Replace", "value": {"active": "False"}}))
    assert response.status_code == 200 and response.json()["active"] is False

    assert carol.get(f"{live_server.url}{UC}/catalogs").status_code == 401
    assert carol.get("/Me").status_code == 401
    response = http.patch(f"/Users/{me.json()['id']}", json=_patch({"op": "replace", "path": "active", "value": True}))
    assert response.status_code == 200 and carol.get("/Me").status_code == 200


def test_lists_page_and_count(http):
    for index in range(5):
        Principal.objects.create(name=f"user{index}")
    body = http.get("/Users", params={"startIndex": 2, "count": 2}).json()
    assert body["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:ListResponse"]
    assert (body["totalResults"], body["itemsPerPage"], body["startIndex"]) == (6, 2, 2)
    assert [user["userName"] for user in body["Resources"]] == ["user0", "user1"]  # after "directory"
    assert http.get("/Users", params={"filter": 'id eq "not-a-uuid"'}).json()["totalResults"] == 0


@pytest.mark.parametrize("bad_filter", [
    'userName eq "a" or 1 eq 1', 'userName eq "a" or userName pr', 'userName co "x"', 'userName sw "x"',
    "garbage", 'userName eq "unbalanced', '"', "userName eq", "(userName eq \"a\"", 'emails.value eq "a"',
    'roles eq "admin"', "userName eq " + '"' + "x" * 5000 + '"', 'members[value eq "x"]', "userName eq 1",
    "(" * 450 + 'userName eq "a"' + ")" * 449, 'not (userName eq "a")', 'userName eq "a" and active eq true',
    'userName eq "a"; DROP TABLE catalog_principal', "userName eq 'a'",
])
def test_filters_other_than_one_equality_are_refused(http, bad_filter):
    before = _state()
    _refused(http.get("/Users", params={"filter": bad_filter}), 400, "invalidFilter")
    _refused(http.get("/Groups", params={"filter": bad_filter}), 400, "invalidFilter")
    assert _state() == before


@pytest.mark.parametrize("attempt", [
    {"path": "roles", "op": "add", "value": [{"value": "metastore_admin"}]},
    {"path": "entitlements", "op": "add", "value": [{"value": "admin"}]},
    {"path": "urn:ietf:params:scim:schemas:extension:ucweb:2.0:User:is_metastore_admin", "op": "replace",
     "value": True},
    {"path": "is_metastore_admin", "op": "replace", "value": True},
])
def test_no_patch_path_makes_a_metastore_admin(http, attempt):
    user = http.post("/Users", json={"userName": "eve"}).json()
    before = _state()
    _refused(http.patch(f"/Users/{user['id']}", json=_patch(attempt)), 400, "invalidPath")
    assert _state() == before and not Principal.objects.get(name="eve").is_metastore_admin


def test_admin_attributes_in_a_body_are_not_stored(http):
    escalate = {"roles": [{"value": "admin", "primary": True}], "entitlements": [{"value": "metastore_admin"}],
                "is_metastore_admin": True, "isMetastoreAdmin": True,
                "urn:ietf:params:scim:schemas:extension:ucweb:2.0:User": {"is_metastore_admin": True}}
    user = http.post("/Users", json={"userName": "mallory", **escalate})
    assert user.status_code == 201, user.text
    assert http.put(f"/Users/{user.json()['id']}", json={"userName": "mallory", **escalate}).status_code == 200
    assert http.patch(f"/Users/{user.json()['id']}", json=_patch({"op": "replace", "value": escalate})) \
        .status_code == 200
    assert not Principal.objects.get(name="mallory").is_metastore_admin


def test_only_a_metastore_admin_writes(live_server, http):
    alice = http.post("/Users", json={"userName": "alice"}).json()
    group = http.post("/Groups", json={"displayName": "g"}).json()
    outsider = _http(live_server, token_for("outsider"))
    before = _state()
    for method, path, body in (("POST", "/Users", {"userName": "x"}), ("PUT", f"/Users/{alice['id']}", {"userName": "alice"}),
                               ("PATCH", f"/Users/{alice['id']}", _patch({"op": "replace", "path": "active", "value": False})),
                               ("DELETE", f"/Users/{alice['id']}", None), ("POST", "/Groups", {"displayName": "h"}),
                               ("PATCH", f"/Groups/{group['id']}", _patch({"op": "add", "path": "members",
                                                                          "value": [{"value": alice["id"]}]})),
                               ("DELETE", f"/Groups/{group['id']}", None)):
        _refused(outsider.request(method, path, json=body), 403)
    assert _state() == before
    assert AuditEvent.objects.filter(principal="outsider", action="deletePrincipal", outcome="DENIED").exists()
    assert outsider.get("/Me").json()["userName"] == "outsider"  # reading itself needs no admin


def test_group_cycles_and_name_clashes_are_refused(http):
    user = http.post("/Users", json={"userName": "dana"}).json()
    outer = http.post("/Groups", json={"displayName": "outer"}).json()
    inner = http.post("/Groups", json={"displayName": "inner", "members": [{"value": outer["id"], "type": "Group"}]}).json()
    before = _state()
    _refused(http.patch(f"/Groups/{outer['id']}", json=_patch(
        {"op": "add", "path": "members", "value": [{"value": inner["id"], "type": "Group"}]})), 400)
    _refused(http.patch(f"/Groups/{outer['id']}", json=_patch(
        {"op": "add", "path": "members", "value": [{"value": outer["id"]}]})), 400)
    _refused(http.patch(f"/Groups/{outer['id']}", json=_patch(  # the rename goes back with the refused cycle
        {"op": "replace", "path": "displayName", "value": "renamed"},
        {"op": "add", "path": "members", "value": [{"value": inner["id"], "type": "Group"}]})), 400)
    _refused(http.post("/Groups", json={"displayName": "dana"}), 409, "uniqueness")
    _refused(http.post("/Users", json={"userName": "inner"}), 409, "uniqueness")
    _refused(http.post("/Users", json={"userName": "dana"}), 409, "uniqueness")
    _refused(http.patch(f"/Groups/{outer['id']}", json=_patch(
        {"op": "replace", "path": "displayName", "value": "dana"})), 409, "uniqueness")
    _refused(http.put(f"/Users/{user['id']}", json={"userName": "renamed"}), 400, "mutability")
    _refused(http.patch(f"/Groups/{outer['id']}", json=_patch(
        {"op": "add", "path": "members", "value": [{"value": "00000000-0000-0000-0000-000000000000"}]})), 400)
    _refused(http.get("/Users/not-an-id"), 404)
    assert _state() == before


def test_a_metastore_admin_is_neither_deactivated_nor_deleted(http):
    directory = Principal.objects.get(name="directory")
    before = _state()
    _refused(http.patch(f"/Users/{directory.id}", json=_patch({"op": "replace", "path": "active", "value": False})),
             400, "mutability")
    _refused(http.delete(f"/Users/{directory.id}"), 400, "mutability")
    assert _state() == before


def test_deleting_a_user_revokes_its_grants_and_tokens(live_server, http):
    user = http.post("/Users", json={"userName": "frank"}).json()
    Grant.objects.create(securable_type="metastore", securable_id=directory_id(), securable_name="ucweb",
                         principal="frank", privilege="CREATE CATALOG")
    token = token_for("frank")
    frank = _http(live_server, token)
    assert frank.get("/Me").status_code == 200
    assert http.delete(f"/Users/{user['id']}").status_code == 204
    assert not Grant.objects.filter(principal="frank").exists()
    assert frank.get("/Me").status_code == 401 and not Token.objects.filter(principal__name="frank").exists()
    assert AuditEvent.objects.get(action="deletePrincipal", outcome="SUCCESS").details["revoked"] == [
        "CREATE CATALOG on ucweb"]


def directory_id():
    return Principal.objects.get(name="directory").id


def test_ten_thousand_members_in_one_patch(http):
    Principal.objects.bulk_create([Principal(name=f"member{index:05}") for index in range(10_000)])
    ids = [str(value) for value in Principal.objects.filter(name__startswith="member").values_list("id", flat=True)]
    group = http.post("/Groups", json={"displayName": "everyone"}).json()
    response = http.patch(f"/Groups/{group['id']}", json=_patch(
        {"op": "add", "path": "members", "value": [{"value": member, "type": "User"} for member in ids]}),
        timeout=None)
    assert response.status_code == 200, response.text[:500]
    assert GroupMember.objects.filter(group__name="everyone").count() == 10_000
    assert GroupClosure.objects.filter(group_name="everyone").count() == 10_000


def test_discovery_documents(http):
    config = http.get("/ServiceProviderConfig").json()
    assert config["patch"]["supported"] is True and config["filter"]["supported"] is True
    assert {item["id"] for item in http.get("/ResourceTypes").json()["Resources"]} == {"User", "Group"}
    assert http.get("/ServiceProviderConfig").headers["content-type"].startswith("application/scim+json")


def test_a_list_costs_the_same_queries_for_one_resource_or_many(admin_token):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.conftest import bearer_client

    client = bearer_client(admin_token)
    directory = Principal.objects.get(name="directory")

    def queries(path: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(f"{SCIM}{path}").status_code == 200
        return len(captured)

    group = GroupRow.objects.create(name="g0", owner="directory")
    GroupMember.objects.create(group=group, principal=directory)
    GroupMember.objects.create(group=group, member_group=GroupRow.objects.create(name="inner", owner="directory"))
    queries("/Me")  # the token is looked up once, then cached
    one_user, one_group = queries("/Users"), queries("/Groups")
    for index in range(1, 6):
        user = Principal.objects.create(name=f"u{index}")
        group = GroupRow.objects.create(name=f"g{index}", owner="directory")
        GroupMember.objects.create(group=group, principal=user)
        GroupMember.objects.create(group=group, member_group=GroupRow.objects.get(name="g0"))
    assert (queries("/Users"), queries("/Groups")) == (one_user, one_group)


@pytest.mark.parametrize("body", [
    [], {"Operations": "x"}, {"Operations": []}, {"Operations": [{"op": "move", "path": "members"}]},
    {"Operations": [{"op": "add", "path": "members", "value": "x"}]},
    {"Operations": [{"op": "add", "path": "members", "value": [{"value": "not-an-id"}]}]},
    {"Operations": [{"op": "add", "path": "members", "value": [{"value": None, "type": "Robot"}]}]},
    {"Operations": [{"op": "add", "path": 'members[value eq "x"]', "value": []}]},
    {"Operations": [{"op": "remove", "path": "members[value co \"x\"]"}]},
    {"Operations": [{"op": "replace", "path": "displayName", "value": "has space"}]},
    {"Operations": [{"op": "replace", "path": "displayName", "value": ""}]},
    {"Operations": [{"op": "add", "path": "members", "value": []}, {"op": "replace", "value": "x"}]},
])
def test_malformed_patches_are_refused_and_change_nothing(http, body):
    user = http.post("/Users", json={"userName": "gina"}).json()
    group = http.post("/Groups", json={"displayName": "team", "members": [{"value": user["id"]}]}).json()
    before = _state()
    response = http.patch(f"/Groups/{group['id']}", json=body)
    _refused(response, 400)
    assert _state() == before


def test_a_user_named_by_its_primary_email_as_unity_catalog_clients_send_it(http):
    response = http.post("/Users", json={"displayName": "freedom analyst",
                                         "emails": [{"value": "analyst@example.com", "primary": True}]})
    assert response.status_code == 201, response.text
    assert response.json()["userName"] == "analyst@example.com"
    assert response.json()["emails"] == [{"value": "analyst@example.com", "primary": True}]
    assert Principal.objects.get(name="analyst@example.com").display_name == "freedom analyst"
    _refused(http.post("/Users", json={"displayName": "nobody", "emails": [{"value": "x@example.com"}]}), 400)


def test_polaris_roles_are_not_a_directorys_groups(http, bootstrap):
    from catalog.choices import GroupKind

    user = http.post("/Users", json={"userName": "hank"}).json()
    catalog = Catalog.objects.first()
    role = GroupRow.objects.create(name="catalog_reader", owner="directory", kind=GroupKind.CATALOG_ROLE,
                                   catalog=catalog)
    group = http.post("/Groups", json={"displayName": "staff"}).json()
    assert [item["displayName"] for item in http.get("/Groups").json()["Resources"]] == ["staff"]
    before = _state()
    _refused(http.get(f"/Groups/{role.id}"), 404)
    _refused(http.patch(f"/Groups/{role.id}", json=_patch(
        {"op": "add", "path": "members", "value": [{"value": user["id"]}]})), 404)
    _refused(http.patch(f"/Groups/{group['id']}", json=_patch(
        {"op": "add", "path": "members", "value": [{"value": str(role.id), "type": "Group"}]})), 400)
    assert _state() == before


def test_renaming_a_group_keeps_its_grants_and_members(http):
    user = http.post("/Users", json={"userName": "ivy"}).json()
    group = http.post("/Groups", json={"displayName": "analysts", "members": [{"value": user["id"]}]}).json()
    Grant.objects.create(securable_type="metastore", securable_id=directory_id(), securable_name="ucweb",
                         principal="analysts", privilege="CREATE CATALOG")
    response = http.put(f"/Groups/{group['id']}", json={"displayName": "data-analysts",
                                                         "members": [{"value": user["id"], "type": "User"}]})
    assert response.status_code == 200 and response.json()["displayName"] == "data-analysts"
    assert list(Grant.objects.values_list("principal", flat=True)) == ["data-analysts"]
    assert list(GroupClosure.objects.filter(principal="ivy").values_list("group_name", flat=True)) == ["data-analysts"]
