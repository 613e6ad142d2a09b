"""`ucweb.maintenance.*` properties are a table's maintenance policy and belong to its owner: a
writer with MODIFY cannot add, change or remove them through any API (Delta commit metadata,
Iceberg set-properties / remove-properties, multi-table transactions, views). The refusal is a
403 and changes nothing: not the catalog, not storage."""

import hashlib
import uuid

import pytest
import requests

from catalog.models import Catalog, Principal, Schema, Table
from catalog.services import grants
from catalog.storage import storage_for
from commits.models import DeltaCommit, IcebergMetadata
from tests.delta_client import DeltaClient, write_staged
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)
POLICY = "ucweb.maintenance.client-operations"


@pytest.fixture
def people(bootstrap, make_token, storage_root):
    """Tokens of: admin; olivia (CREATE TABLE on unity.default: she owns what she creates);
    wally (USE, SELECT and MODIFY on the whole catalog, owner of nothing)."""
    tokens = {"admin": make_token("admin", admin=True), "olivia": make_token("olivia"), "wally": make_token("wally")}
    admin = Principal.objects.get(name="admin")
    catalog = Catalog.objects.get(name="unity")
    schema = Schema.objects.get(catalog=catalog, name="default")
    grants.update_assignments(securable_type="catalog", securable=catalog, caller=admin, access=None, changes=[
        {"principal": "olivia", "add": ["USE CATALOG"], "remove": []},
        {"principal": "wally", "add": ["USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY"], "remove": []}])
    grants.update_assignments(securable_type="schema", securable=schema, caller=admin, access=None, changes=[
        {"principal": "olivia", "add": ["USE SCHEMA", "CREATE TABLE"], "remove": []}])
    return tokens


def grant_manage(name, table_id):
    """MANAGE on the table: changing its other properties changes its definition, which MODIFY
    alone does not allow (tests/test_definition_rights.py); the maintenance policy stays the
    owner's even then."""
    table = Table.objects.get(id=table_id)
    grants.update_assignments(securable_type="table", securable=table, caller=Principal.objects.get(name="admin"),
                              access=None, changes=[{"principal": name, "add": ["MANAGE"], "remove": []}])


def tree(location):
    storage = storage_for(location)
    return {item.url: hashlib.sha256(storage.read(item.url)).hexdigest() for item in storage.list(location)}


# -- Delta: commit metadata --------------------------------------------------------------------------
@pytest.fixture
def delta_table(live_server, people):
    """A managed Delta table that olivia created (and owns)."""
    olivia = DeltaClient(f"{live_server.url}{UC}", people["olivia"])
    created = olivia.create_table("unity", "default", "events")
    assert Table.objects.get(id=created.table_id).owner == "olivia"
    return created.table_id, created.storage_location


def stage(location, version, operation="WRITE"):
    name = f"{version:020d}.{uuid.uuid4()}.json"
    return version, name, write_staged(location, name, operation=operation)


def propose(live_server, token, table_id, location, staged, *, properties=None):
    version, name, size = staged
    body = {"table_id": table_id, "table_uri": location, "commit_info": {
        "version": version, "timestamp": 1704067200000 + version, "file_name": name, "file_size": size,
        "file_modification_timestamp": 1704067200000 + version}}
    if properties is not None:
        body["metadata"] = {"properties": properties}
    return requests.post(f"{live_server.url}{UC}/delta/commit", json=body, timeout=30,
                         headers={"Authorization": f"Bearer {token}"})


def delta_commit(live_server, token, table_id, location, version, *, properties=None, operation="WRITE"):
    return propose(live_server, token, table_id, location, stage(location, version, operation), properties=properties)


def delta_state(table_id, location):
    row = Table.objects.get(id=table_id)
    return row.latest_version, row.properties, DeltaCommit.objects.filter(table=row).count(), tree(location)


@pytest.mark.parametrize("change", ["add", "change", "remove", "other case"])
def test_a_delta_writer_cannot_change_the_policy(live_server, people, delta_table, change):
    table_id, location = delta_table
    current = dict(Table.objects.get(id=table_id).properties)
    if change in ("change", "remove"):
        assert delta_commit(live_server, people["olivia"], table_id, location, 1,
                            properties={**current, POLICY: "VACUUM"}).status_code == 200
    current = dict(Table.objects.get(id=table_id).properties)
    version = Table.objects.get(id=table_id).latest_version + 1
    proposed = {
        "add": {**current, POLICY: "OPTIMIZE,VACUUM"},
        "change": {**current, POLICY: "OPTIMIZE,VACUUM"},
        "remove": {k: v for k, v in current.items() if k != POLICY},
        "other case": {**current, "UCWEB.Maintenance.Client-Operations": "OPTIMIZE"},
    }[change]
    staged = stage(location, version)
    before = delta_state(table_id, location)
    response = propose(live_server, people["wally"], table_id, location, staged, properties=proposed)
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["error_code"] == "PERMISSION_DENIED" and "ucweb.maintenance.*" in body["message"]
    assert delta_state(table_id, location) == before, "neither the catalog nor storage changed"
    # ... and the maintenance policy is what it was: wally's OPTIMIZE is still refused.
    optimize = delta_commit(live_server, people["wally"], table_id, location, version, operation="OPTIMIZE")
    assert optimize.status_code == 403 and POLICY in optimize.json()["message"]


def test_a_delta_writer_keeps_the_policy_and_changes_other_properties(live_server, people, delta_table):
    table_id, location = delta_table
    grant_manage("wally", table_id)
    current = dict(Table.objects.get(id=table_id).properties)
    assert delta_commit(live_server, people["olivia"], table_id, location, 1,
                        properties={**current, POLICY: "OPTIMIZE"}).status_code == 200
    current = dict(Table.objects.get(id=table_id).properties)
    response = delta_commit(live_server, people["wally"], table_id, location, 2, properties={**current, "team": "geo"})
    assert response.status_code == 200, response.text
    assert Table.objects.get(id=table_id).properties == {**current, "team": "geo"}
    # The owner's policy lets wally's OPTIMIZE through.
    assert delta_commit(live_server, people["wally"], table_id, location, 3, operation="OPTIMIZE").status_code == 200


def test_the_owner_and_an_admin_may_change_the_policy(live_server, people, delta_table):
    table_id, location = delta_table
    current = dict(Table.objects.get(id=table_id).properties)
    assert delta_commit(live_server, people["olivia"], table_id, location, 1,
                        properties={**current, POLICY: "OPTIMIZE"}).status_code == 200
    assert delta_commit(live_server, people["admin"], table_id, location, 2,
                        properties={**current, POLICY: "OPTIMIZE,VACUUM"}).status_code == 200
    assert Table.objects.get(id=table_id).properties[POLICY] == "OPTIMIZE,VACUUM"


# -- Iceberg: commits, transactions, views -------------------------------------------------------------
ICEBERG_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


class Iceberg:
    def __init__(self, base, token):
        self.base, self.headers = base, {"Authorization": f"Bearer {token}"}

    def __call__(self, method, path, body=None):
        return requests.request(method, self.base + path, json=body, headers=self.headers, timeout=30)


@pytest.fixture
def ice(live_server, people):
    base = f"{live_server.url}/api/catalog/v1/unity"
    return {name: Iceberg(base, token) for name, token in people.items()}


@pytest.fixture
def ice_table(ice):
    response = ice["olivia"]("POST", "/namespaces/default/tables", {
        "name": "events", "schema": ICEBERG_SCHEMA, "properties": {POLICY: "VACUUM", "team": "geo"}})
    assert response.status_code == 200, response.text
    table = Table.objects.get(name="events")
    assert table.owner == "olivia"
    return table


def iceberg_state(table):
    state = IcebergMetadata.objects.get(table=table)
    return state.metadata_location, state.metadata_json, Table.objects.get(id=table.id).properties, tree(table.storage_location)


def refused_403(response):
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["type"] == "ForbiddenException" and error["code"] == 403
    assert "ucweb.maintenance.*" in error["message"]


UPDATES = {
    "set": [{"action": "set-properties", "updates": {POLICY: "OPTIMIZE"}}],
    "set another key": [{"action": "set-properties", "updates": {"ucweb.maintenance.snapshot-expiry": "off"}}],
    "other case": [{"action": "set-properties", "updates": {"UCWEB.MAINTENANCE.CLIENT-OPERATIONS": "OPTIMIZE"}}],
    "remove": [{"action": "remove-properties", "removals": [POLICY]}],
}


@pytest.mark.parametrize("case", sorted(UPDATES))
def test_an_iceberg_writer_cannot_change_the_policy(ice, ice_table, case):
    before = iceberg_state(ice_table)
    refused_403(ice["wally"]("POST", "/namespaces/default/tables/events", {"updates": UPDATES[case]}))
    refused_403(ice["wally"]("POST", "/transactions/commit", {"table-changes": [
        {"identifier": {"namespace": ["default"], "name": "events"}, "updates": UPDATES[case]}]}))
    assert iceberg_state(ice_table) == before


def test_an_iceberg_writer_changes_other_properties(ice, ice_table):
    grant_manage("wally", ice_table.id)
    response = ice["wally"]("POST", "/namespaces/default/tables/events", {
        "updates": [{"action": "set-properties", "updates": {"team": "maps", POLICY: "VACUUM"}}]})
    assert response.status_code == 200, response.text
    assert Table.objects.get(id=ice_table.id).properties[POLICY] == "VACUUM"
    assert Table.objects.get(id=ice_table.id).properties["team"] == "maps"


def test_the_iceberg_owner_changes_the_policy(ice, ice_table):
    for who, value in (("olivia", "OPTIMIZE"), ("admin", "OPTIMIZE,VACUUM")):
        response = ice[who]("POST", "/namespaces/default/tables/events", {
            "updates": [{"action": "set-properties", "updates": {POLICY: value}}]})
        assert response.status_code == 200, response.text
        assert Table.objects.get(id=ice_table.id).properties[POLICY] == value


def test_a_view_writer_cannot_change_the_policy(ice):
    created = ice["olivia"]("POST", "/namespaces/default/views", {
        "name": "recent", "schema": ICEBERG_SCHEMA, "view-version": {
            "version-id": 1, "schema-id": 0, "timestamp-ms": 1735689600000, "summary": {},
            "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}],
            "default-namespace": ["default"]}})
    assert created.status_code == 200, created.text
    view = Table.objects.get(name="recent")
    before = iceberg_state(view)
    refused_403(ice["wally"]("POST", "/namespaces/default/views/recent", {
        "updates": [{"action": "set-properties", "updates": {POLICY: "OPTIMIZE"}}]}))
    assert iceberg_state(view) == before
    allowed = ice["olivia"]("POST", "/namespaces/default/views/recent", {
        "updates": [{"action": "set-properties", "updates": {POLICY: "OPTIMIZE"}}]})
    assert allowed.status_code == 200, allowed.text


def test_namespace_policy_properties_are_the_owners(ice, people):
    """Schema properties (a policy there applies to every table of the schema) were already
    the owner's: a writer with every privilege but ownership is refused."""
    before = dict(Schema.objects.get(name="default").properties)
    response = ice["wally"]("POST", "/namespaces/default/properties", {"updates": {POLICY: "OPTIMIZE"}, "removals": []})
    assert response.status_code == 403, response.text
    assert Schema.objects.get(name="default").properties == before
