"""Groups: a privilege granted to a group is held by every principal in it, however deep, in every
protocol's decisions; membership changes take effect at the next request; the bad inputs and
attacks of a group engine are refused and change nothing.

The world: catalog `lake`, schema `lake.s`, an external Parquet table `t`, an Iceberg table `ice`
and a Polaris generic table `gen`. Group `readers` holds USE CATALOG, USE SCHEMA and SELECT on the
tables; group `outer` contains `readers`, group `top` contains `outer`."""

from __future__ import annotations

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.choices import GroupKind
from catalog.models import AuditEvent, Catalog, Grant, Group, GroupClosure, GroupMember, Principal
from catalog.services import effective_access, groups, principals
from tests.conftest import bearer_client, token_for
from tests.helpers import UC, external_table_body, rows
from ucweb.errors import AlreadyExists, InvalidParameter, PermissionDenied

pytestmark = pytest.mark.django_db(transaction=True)

ICE = "/api/catalog/v1"
DELTA = f"{UC}/delta/v1"
POLARIS = "/api/catalog/polaris/v1"
SCHEMA_JSON = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}
READS = {
    # protocol: (path, the status a principal that may read gets)
    "uc table": (f"{UC}/tables/lake.s.t", 200),
    "uc credentials": ("temporary-table-credentials", 200),
    "delta v1 load": (f"{DELTA}/catalogs/lake/schemas/s/tables/d", 200),
    "delta v1 credentials": (f"{DELTA}/catalogs/lake/schemas/s/tables/d/credentials?operation=READ", 200),
    "iceberg load": (f"{ICE}/lake/namespaces/s/tables/ice", 200),
    "polaris generic table": (f"{POLARIS}/lake/namespaces/s/generic-tables/gen", 200),
}


def _admin() -> Principal:
    return Principal.objects.get(name="admin")


@pytest.fixture
def lake(bootstrap, storage_root, tmp_path):
    admin = bearer_client(token_for("admin", admin=True))
    landing = (tmp_path / "landing").as_uri()
    write_deltalake(str(tmp_path / "landing" / "d"), pa.table({"id": [1, 2], "amount": [1.5, 2.5]}))
    for path, body in ((f"{UC}/catalogs", {"name": "lake"}), (f"{UC}/schemas", {"name": "s", "catalog_name": "lake"}),
                       (f"{UC}/credentials", {"name": "cred", "purpose": "STORAGE",
                                              "aws_iam_role": {"role_arn": "arn:aws:iam::123456789012:role/lake"}}),
                       (f"{UC}/external-locations", {"name": "landing", "url": landing, "credential_name": "cred"}),
                       (f"{UC}/tables", external_table_body("t", f"{landing}/t", catalog="lake", schema="s")),
                       (f"{UC}/tables", external_table_body("d", f"{landing}/d", catalog="lake", schema="s",
                                                            data_source_format="DELTA")),
                       (f"{ICE}/lake/namespaces/s/tables", {"name": "ice", "schema": SCHEMA_JSON}),
                       (f"{POLARIS}/lake/namespaces/s/generic-tables", {"name": "gen", "format": "delta"})):
        response = admin.post(path, body, format="json")
        assert response.status_code == 200, response.content
    for name in ("alice", "bob"):
        principals.ensure_principal(name=name)
    for name in ("readers", "outer", "top"):
        groups.create_group(caller=_admin(), name=name)
    groups.update_members(caller=_admin(), name="outer", add_groups=["readers"])
    groups.update_members(caller=_admin(), name="top", add_groups=["outer"])
    for securable_type, full_name, privilege in (("catalog", "lake", "USE CATALOG"), ("schema", "lake.s", "USE SCHEMA"),
                                                 ("table", "lake.s.t", "SELECT"), ("table", "lake.s.d", "SELECT"),
                                                 ("table", "lake.s.ice", "SELECT"),
                                                 ("table", "lake.s.gen", "SELECT")):
        response = admin.patch(f"{UC}/permissions/{securable_type}/{full_name}",
                               {"changes": [{"principal": "readers", "add": [privilege]}]}, format="json")
        assert response.status_code == 200, response.content
    table_id = admin.get(f"{UC}/tables/lake.s.t").json()["table_id"]
    return {"admin": admin, "table_id": table_id}


def _read(lake, name: str, protocol: str):
    client = bearer_client(token_for(name))
    path, _ = READS[protocol]
    if path == "temporary-table-credentials":
        return client.post(f"{UC}/temporary-table-credentials", {"table_id": lake["table_id"], "operation": "READ"},
                           format="json")
    return client.get(path)


@pytest.mark.parametrize("protocol", sorted(READS))
def test_a_grant_to_a_group_reaches_members_however_deep(lake, protocol):
    _, allowed = READS[protocol]
    assert _read(lake, "alice", protocol).status_code == 404  # nothing yet: hidden as missing
    groups.update_members(caller=_admin(), name="readers", add_principals=["alice"])
    assert _read(lake, "alice", protocol).status_code == allowed
    groups.update_members(caller=_admin(), name="readers", remove_principals=["alice"])
    assert _read(lake, "alice", protocol).status_code == 404  # at once

    groups.update_members(caller=_admin(), name="top", add_principals=["bob"])  # top ⊃ outer ⊃ readers: not in it
    assert _read(lake, "bob", protocol).status_code == 404
    groups.update_members(caller=_admin(), name="top", remove_principals=["bob"])
    # bob in a group nested in readers holds what readers holds
    groups.create_group(caller=_admin(), name="inner")
    groups.update_members(caller=_admin(), name="readers", add_groups=["inner"])
    groups.update_members(caller=_admin(), name="inner", add_principals=["bob"])
    assert _read(lake, "bob", protocol).status_code == allowed
    groups.update_members(caller=_admin(), name="readers", remove_groups=["inner"])
    assert _read(lake, "bob", protocol).status_code == 404


def test_a_write_through_a_group_and_its_revocation(lake):
    groups.update_members(caller=_admin(), name="readers", add_principals=["alice"])
    alice = bearer_client(token_for("alice"))
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"write.k": "v"}}]}
    assert alice.post(f"{ICE}/lake/namespaces/s/tables/ice", commit, format="json").status_code == 403
    lake["admin"].patch(f"{UC}/permissions/table/lake.s.ice", {"changes": [{"principal": "outer", "add": ["MODIFY"]}]},
                        format="json")
    # outer holds MODIFY; alice is in readers, which is inside outer
    groups.update_members(caller=_admin(), name="readers", remove_principals=["alice"])
    groups.update_members(caller=_admin(), name="outer", add_principals=["alice"])
    # outer's members get outer's grants, not those of readers inside it: no USE CATALOG, so hidden
    assert alice.post(f"{ICE}/lake/namespaces/s/tables/ice", commit, format="json").status_code == 404
    groups.update_members(caller=_admin(), name="readers", add_principals=["alice"])
    assert alice.post(f"{ICE}/lake/namespaces/s/tables/ice", commit, format="json").status_code == 200


def test_a_request_through_groups_costs_no_more_queries(lake):
    """The grants of the caller's groups are read in the query that reads its own (GroupClosure)."""
    lake["admin"].patch(f"{UC}/permissions/table/lake.s.ice", {"changes": [
        {"principal": "bob", "add": ["SELECT"]}]}, format="json")
    for securable_type, full_name, privilege in (("catalog", "lake", "USE CATALOG"), ("schema", "lake.s", "USE SCHEMA")):
        lake["admin"].patch(f"{UC}/permissions/{securable_type}/{full_name}",
                            {"changes": [{"principal": "bob", "add": [privilege]}]}, format="json")
    groups.create_group(caller=_admin(), name="g0")
    for depth in range(1, 5):
        groups.create_group(caller=_admin(), name=f"g{depth}")
        groups.update_members(caller=_admin(), name=f"g{depth}", add_groups=[f"g{depth - 1}"])
    groups.update_members(caller=_admin(), name="g4", add_groups=["top"])
    groups.update_members(caller=_admin(), name="g0", add_principals=["alice"])
    groups.update_members(caller=_admin(), name="readers", add_principals=["alice"])
    counts = {}
    for name in ("bob", "alice"):
        client = bearer_client(token_for(name))
        client.get(f"{ICE}/lake/namespaces/s/tables/ice")  # the token is cached after the first request
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"{ICE}/lake/namespaces/s/tables/ice").status_code == 200
        counts[name] = len(queries)
    assert counts["alice"] == counts["bob"], counts


def test_the_console_says_through_which_group(lake):
    groups.create_group(caller=_admin(), name="inner")
    groups.update_members(caller=_admin(), name="readers", add_groups=["inner"])
    groups.update_members(caller=_admin(), name="inner", add_principals=["alice"])
    table = effective_access.securable_by_id("table", lake["table_id"])
    decision = effective_access.check(principal=Principal.objects.get(name="alice"), securable=table,
                                      privilege="SELECT")
    assert decision.allowed
    assert any("to group readers" in step.reason for step in decision.steps), decision.steps
    holders = {row.principal: row.kind for row in effective_access.on_securable(table)}
    assert holders.get("readers") == "group"


def _state():
    return rows(Group, GroupMember, GroupClosure, Grant, Principal)


def test_cycles_are_refused_and_change_nothing(lake):
    before = _state()
    for group, member in (("readers", "readers"), ("readers", "outer"), ("readers", "top")):
        with pytest.raises(InvalidParameter, match="cycle"):
            groups.update_members(caller=_admin(), name=group, add_groups=[member])
    assert _state() == before


def test_names_are_one_namespace(lake):
    before = _state()
    with pytest.raises(AlreadyExists):
        groups.create_group(caller=_admin(), name="alice")
    with pytest.raises(AlreadyExists):
        principals.ensure_principal(name="readers")
    for bad in ("", "a b", "a/b", "x\u2028y", 5):
        with pytest.raises(InvalidParameter):
            groups.create_group(caller=_admin(), name=bad)
    assert _state() == before


def test_granting_to_a_missing_group_is_refused(lake):
    before = _state()
    response = lake["admin"].patch(f"{UC}/permissions/table/lake.s.t",
                                   {"changes": [{"principal": "nobody-group", "add": ["SELECT"]}]}, format="json")
    assert response.status_code == 404 and response.json()["error_code"] == "PRINCIPAL_DOES_NOT_EXIST"
    assert _state() == before


def test_only_the_owner_or_an_admin_changes_a_group(lake):
    alice = Principal.objects.get(name="alice")
    before = _state()
    with pytest.raises(PermissionDenied):
        groups.update_members(caller=alice, name="readers", add_principals=["alice"])
    with pytest.raises(PermissionDenied):
        groups.delete_group(caller=alice, name="readers")
    with pytest.raises(PermissionDenied):
        groups.create_group(caller=alice, name="mine")
    assert _state() == before
    assert not AuditEvent.objects.filter(principal="alice", action__in=["createGroup", "updateGroup", "deleteGroup"])


def test_dropping_a_group_revokes_its_grants(lake):
    groups.update_members(caller=_admin(), name="readers", add_principals=["alice"])
    assert _read(lake, "alice", "uc table").status_code == 200
    groups.delete_group(caller=_admin(), name="readers")
    assert not Grant.objects.filter(principal="readers").exists()
    assert not GroupClosure.objects.filter(group_name="readers").exists()
    assert _read(lake, "alice", "uc table").status_code == 404
    event = AuditEvent.objects.filter(action="deleteGroup").latest("id")
    assert "SELECT on lake.s.t" in event.details["revoked"]
    # A new group of the same name holds nothing of the old one.
    groups.create_group(caller=_admin(), name="readers")
    groups.update_members(caller=_admin(), name="readers", add_principals=["alice"])
    assert _read(lake, "alice", "uc table").status_code == 404


def test_a_catalog_role_holds_privileges_in_its_catalog_only(lake):
    other = Catalog.objects.get(name="unity")
    role = groups.create_group(caller=_admin(), name="unity.reader", kind=GroupKind.CATALOG_ROLE, catalog=other)
    before = _state()
    response = lake["admin"].patch(f"{UC}/permissions/table/lake.s.t",
                                   {"changes": [{"principal": role.name, "add": ["SELECT"]}]}, format="json")
    assert response.status_code == 400 and "its catalog" in response.json()["message"]
    assert _state() == before
    response = lake["admin"].patch(f"{UC}/permissions/catalog/unity",
                                   {"changes": [{"principal": role.name, "add": ["USE CATALOG"]}]}, format="json")
    assert response.status_code == 200


def test_ten_thousand_members(lake):
    names = [f"user{index:05d}" for index in range(10_000)]
    Principal.objects.bulk_create([Principal(name=name) for name in names])
    groups.update_members(caller=_admin(), name="readers", add_principals=names)
    assert GroupClosure.objects.filter(group_name="top").count() == 10_000
    token = principals.issue_token(principal=Principal.objects.get(name="user09999"))
    assert bearer_client(token).get(f"{UC}/tables/lake.s.t").status_code == 200
    groups.update_members(caller=_admin(), name="outer", remove_groups=["readers"])
    assert not GroupClosure.objects.filter(group_name="top").exists()
    assert GroupClosure.objects.filter(group_name="readers").count() == 10_000


def test_a_hundred_levels_and_no_more(lake):
    groups.update_members(caller=_admin(), name="readers", add_principals=["alice"])
    chain = [f"level{index:03d}" for index in range(97)]  # with readers, outer and top: 100 levels
    previous = "top"
    for name in chain:
        groups.create_group(caller=_admin(), name=name)
        groups.update_members(caller=_admin(), name=name, add_groups=[previous])
        previous = name
    assert set(groups.groups_of(Principal.objects.get(name="alice"))) == {"readers", "outer", "top", *chain}
    lake["admin"].patch(f"{UC}/permissions/catalog/lake", {"changes": [
        {"principal": chain[-1], "add": ["MODIFY"]}]}, format="json")
    alice = bearer_client(token_for("alice"))
    commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"write.k": "v"}}]}
    assert alice.post(f"{ICE}/lake/namespaces/s/tables/ice", commit, format="json").status_code == 200
    groups.create_group(caller=_admin(), name="one-too-many")
    before = _state()
    with pytest.raises(InvalidParameter, match="100 levels"):
        groups.update_members(caller=_admin(), name="one-too-many", add_groups=[chain[-1]])
    with pytest.raises(InvalidParameter, match="100 levels"):
        groups.update_members(caller=_admin(), name="readers", add_groups=["one-too-many"])  # below the bottom
    assert _state() == before


def test_a_deactivated_principal_is_refused(lake):
    groups.update_members(caller=_admin(), name="readers", add_principals=["alice"])
    token = token_for("alice")
    assert bearer_client(token).get(f"{UC}/tables/lake.s.t").status_code == 200
    Principal.objects.filter(name="alice").update(active=False)
    principals.forget_cached_tokens()
    response = bearer_client(token).get(f"{UC}/tables/lake.s.t")
    assert response.status_code == 401
