"""Nested namespaces: an Iceberg namespace ["a", "b"] is schema b inside schema a.

Driven by pyiceberg and the Iceberg REST API, the Apache Polaris client (policies inherited
catalog → namespace → nested namespace → table, generic tables) and the Unity Catalog API, which
names a nested schema by its path (`unity.a.b`, table `unity.a.b.t`) and keeps back-quoted
one-level names apart (unity.`a.b`.t).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
import requests
from apache_polaris.sdk.catalog.models import CreateGenericTableRequest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NamespaceNotEmptyError, NoSuchNamespaceError, NoSuchTableError, RESTError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from catalog.models import AuditEvent, Schema as UCSchema, Table
from catalog.services import policies
from tests.helpers import UC
from tests.polaris_support import CATALOG, COMPACTION, EXPIRY, ORPHANS, Polaris, content, error_of

pytestmark = pytest.mark.django_db(transaction=True)

ICE = "/api/catalog/v1/unity"
SEP = "\x1f"
ICEBERG_SCHEMA = Schema(NestedField(1, "id", LongType(), required=True))


@pytest.fixture
def iceberg(live_server, bootstrap, make_token, storage_root):
    def connect(name="admin"):
        return RestCatalog(name, uri=f"{live_server.url}/api/catalog", warehouse=CATALOG,
                           token=make_token(name, admin=(name == "admin")))
    return connect


@pytest.fixture
def http(live_server, make_token):
    def connect(name="admin"):
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {make_token(name, admin=(name == 'admin'))}"

        def call(method, path, **kwargs):
            return session.request(method, f"{live_server.url}{path}", **kwargs)
        return call
    return connect


@pytest.fixture
def polaris(live_server, bootstrap, make_token, storage_root):
    return Polaris(live_server.url, make_token("admin", admin=True))


def test_nested_namespaces_through_pyiceberg(iceberg, http):
    admin, uc = iceberg(), http()
    admin.create_namespace(("a",), properties={"owner-team": "x"})
    admin.create_namespace(("a", "b"))
    admin.create_namespace(("a", "b", "c"))
    admin.create_namespace(("a.b",))  # one level whose name holds a dot
    with pytest.raises(RESTError, match="NoSuchNamespaceException"):  # 404, as Polaris answers
        admin.create_namespace(("nowhere", "b"))

    assert sorted(admin.list_namespaces()) == [("a",), ("a.b",), ("default",)]
    assert admin.list_namespaces(("a",)) == [("a", "b")]
    assert admin.list_namespaces(("a", "b")) == [("a", "b", "c")]
    assert admin.list_namespaces(("a", "b", "c")) == []
    assert admin.load_namespace_properties(("a", "b")) == {}
    admin.update_namespace_properties(("a", "b"), updates={"k": "v"})
    assert admin.load_namespace_properties(("a", "b")) == {"k": "v"}

    # Tables round-trip in a nested namespace, and the one-level "a.b" is another namespace.
    table = admin.create_table(("a", "b", "t"), schema=ICEBERG_SCHEMA)
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64())},
                          schema=pa.schema([pa.field("id", pa.int64(), nullable=False)])))
    admin.create_table(("a.b", "t"), schema=ICEBERG_SCHEMA)
    assert admin.load_table(("a", "b", "t")).scan().to_arrow()["id"].to_pylist() == [1, 2, 3]
    assert admin.load_table(("a.b", "t")).scan().to_arrow().num_rows == 0
    assert admin.list_tables(("a", "b")) == [("a", "b", "t")]
    assert admin.list_tables(("a",)) == []

    # Views too.
    view = {"name": "v", "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True}]}, "view-version": {
        "version-id": 1, "timestamp-ms": 1700000000000, "schema-id": 0, "summary": {"engine-name": "test"},
        "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}],
        "default-namespace": ["a", "b"]}, "properties": {}}
    assert uc("POST", f"{ICE}/namespaces/a{SEP}b/views", json=view).status_code == 200
    assert uc("GET", f"{ICE}/namespaces/a{SEP}b/views").json()["identifiers"] == [
        {"namespace": ["a", "b"], "name": "v"}]

    # The Unity Catalog API: a nested schema's name is its path.
    schemas = {s["full_name"]: s["name"] for s in uc("GET", f"{UC}/schemas?catalog_name=unity").json()["schemas"]}
    assert schemas == {"unity.a": "a", "unity.a.b": "a.b", "unity.a.b.c": "a.b.c", "unity.`a.b`": "a.b",
                       "unity.default": "default"}
    assert uc("GET", f"{UC}/schemas/unity.a.b").json()["name"] == "a.b"
    nested = uc("GET", f"{UC}/tables/unity.a.b.t").json()
    dotted = uc("GET", f"{UC}/tables/unity.%60a.b%60.t").json()
    ids = {name: Table.objects.get(schema__path=path, name="t").id for name, path in (("nested", "a.b"),
                                                                                     ("dotted", "`a.b`"))}
    assert (nested["schema_name"], nested["table_id"]) == ("a.b", str(ids["nested"]))
    assert (dotted["schema_name"], dotted["table_id"]) == ("a.b", str(ids["dotted"]))
    listed = uc("GET", f"{UC}/tables?catalog_name=unity&schema_name=a.b").json()["tables"]
    assert [(t["name"], t["table_id"]) for t in listed][0] == ("t", str(ids["nested"]))
    assert [t["name"] for t in listed] == ["t", "v"]
    assert [t["table_id"] for t in uc("GET", f"{UC}/tables?catalog_name=unity&schema_name=%60a.b%60")
            .json()["tables"]] == [str(ids["dotted"])]

    # A namespace with namespaces or tables inside is not empty.
    with pytest.raises(NamespaceNotEmptyError):
        admin.drop_namespace(("a",))
    with pytest.raises(NamespaceNotEmptyError):
        admin.drop_namespace(("a", "b"))
    admin.drop_namespace(("a", "b", "c"))
    admin.drop_table(("a", "b", "t"))
    assert uc("DELETE", f"{ICE}/namespaces/a{SEP}b/views/v").status_code == 204
    admin.drop_namespace(("a", "b"))
    admin.drop_namespace(("a",))
    assert sorted(admin.list_namespaces()) == [("a.b",), ("default",)]
    actions = set(AuditEvent.objects.filter(securable_name__startswith="unity.a.b").values_list("action", flat=True))
    assert {"createSchema", "deleteSchema", "updateNamespaceProperties"} <= actions


def test_unity_catalog_force_drop_and_rename_move_the_nested(iceberg, http):
    admin, uc = iceberg(), http()
    admin.create_namespace(("p",))
    admin.create_namespace(("p", "q"))
    admin.create_table(("p", "q", "t"), schema=ICEBERG_SCHEMA)
    # A rename moves everything inside.
    assert uc("PATCH", f"{UC}/schemas/unity.p", json={"new_name": "r"}).status_code == 200
    assert uc("GET", f"{UC}/tables/unity.r.q.t").status_code == 200
    assert admin.list_tables(("r", "q")) == [("r", "q", "t")]
    assert uc("DELETE", f"{UC}/schemas/unity.r").json()["error_code"] == "SCHEMA_NOT_EMPTY"
    assert uc("DELETE", f"{UC}/schemas/unity.r?force=true").status_code == 200
    assert not UCSchema.objects.filter(catalog__name="unity", path__in=["r", "r.q"]).exists()
    assert not Table.objects.filter(name="t").exists()


def test_storage_of_a_nested_namespace_lies_under_its_parent(iceberg, tmp_path):
    admin = iceberg()
    root = (tmp_path / "sales").as_uri()
    admin.create_namespace(("sales",), properties={"location": root})
    admin.create_namespace(("sales", "eu"))
    parent = UCSchema.objects.get(path="sales")
    table = admin.create_table(("sales", "eu", "orders"), schema=ICEBERG_SCHEMA)
    assert table.location().startswith(parent.storage_location.rstrip("/") + "/tables/")


def test_grants_on_a_namespace_hold_in_the_namespaces_inside(iceberg, http):
    admin, uc = iceberg(), http()
    admin.create_namespace(("top",))
    admin.create_namespace(("top", "mid"))
    admin.create_table(("top", "mid", "t"), schema=ICEBERG_SCHEMA)
    bob = iceberg("bob")

    def grant(kind, name, *privileges):
        uc("PATCH", f"{UC}/permissions/{kind}/{name}",
           json={"changes": [{"principal": "bob", "add": list(privileges)}]}).raise_for_status()

    grant("catalog", "unity", "USE CATALOG")
    # Invisible: the nested namespace and its table answer as missing ones.
    with pytest.raises(NoSuchTableError):
        bob.load_table(("top", "mid", "t"))
    with pytest.raises(NoSuchNamespaceError):
        bob.load_namespace_properties(("top", "mid"))
    assert bob.list_namespaces() == []
    # USE SCHEMA and SELECT on the outer namespace hold inside it.
    grant("schema", "unity.top", "USE SCHEMA", "SELECT")
    assert bob.load_table(("top", "mid", "t")).scan().to_arrow().num_rows == 0
    assert bob.list_namespaces() == [("top",)]
    assert bob.list_namespaces(("top",)) == [("top", "mid")]
    assert uc("GET", f"{UC}/permissions/schema/unity.top.mid").status_code == 200
    # MODIFY on the outer namespace lets bob commit to the table inside (the commit path reads the
    # grants of the whole chain, not only table, schema and catalog).
    with pytest.raises(RESTError, match="Forbidden|MODIFY"):
        bob.load_table(("top", "mid", "t")).transaction().set_properties({"write.k": "v"}).commit_transaction()
    grant("schema", "unity.top", "MODIFY")
    bob.load_table(("top", "mid", "t")).transaction().set_properties({"write.k": "v"}).commit_transaction()
    assert admin.load_table(("top", "mid", "t")).properties["write.k"] == "v"
    uc("PATCH", f"{UC}/permissions/schema/unity.top",
       json={"changes": [{"principal": "bob", "remove": ["MODIFY"]}]}).raise_for_status()
    # A grant on the nested namespace alone opens that one, not its parent.
    uc("PATCH", f"{UC}/permissions/schema/unity.top",
       json={"changes": [{"principal": "bob", "remove": ["USE SCHEMA", "SELECT"]}]}).raise_for_status()
    grant("schema", "unity.top.mid", "USE SCHEMA", "SELECT")
    assert bob.load_table(("top", "mid", "t")).scan().to_arrow().num_rows == 0
    with pytest.raises(NoSuchNamespaceError):
        bob.load_namespace_properties(("top",))
    # Dropping stays the owner's.
    assert http("bob")("DELETE", f"{ICE}/namespaces/top{SEP}mid/tables/t").json()["error"]["code"] == 403


def test_policies_inherit_through_nested_namespaces(iceberg, polaris):
    """catalog → namespace → nested namespace → table, an override at each level: for each type the
    deepest attachment wins (Polaris's getEffectivePolicies)."""
    admin = iceberg()
    admin.create_namespace(("org",))
    admin.create_namespace(("org", "team"))
    admin.create_table(("org", "team", "events"), schema=ICEBERG_SCHEMA)
    nested = f"org{SEP}team"
    polaris.create_policy("default", "expire-7d", EXPIRY)
    polaris.create_policy("default", "compact", COMPACTION)
    polaris.create_policy("org", "expire-14d", EXPIRY)
    polaris.create_policy(nested, "expire-30d", EXPIRY)
    polaris.create_policy(nested, "orphans", ORPHANS)
    polaris.create_policy(nested, "no-compaction", COMPACTION, json.dumps({"enable": False}))

    polaris.attach("default", "expire-7d", "catalog")
    polaris.attach("default", "compact", "catalog")
    polaris.attach("org", "expire-14d", "namespace", ["org"])
    polaris.attach(nested, "expire-30d", "namespace", ["org", "team"])
    polaris.attach(nested, "orphans", "namespace", ["org", "team"])
    polaris.attach(nested, "no-compaction", "table-like", ["org", "team", "events"])

    assert polaris.applicable("org") == {COMPACTION: ("compact", True, ["default"]),
                                         EXPIRY: ("expire-14d", False, ["org"])}
    assert polaris.applicable(nested) == {COMPACTION: ("compact", True, ["default"]),
                                          EXPIRY: ("expire-30d", False, ["org", "team"]),
                                          ORPHANS: ("orphans", False, ["org", "team"])}
    assert polaris.applicable(nested, "events") == {COMPACTION: ("no-compaction", False, ["org", "team"]),
                                                    EXPIRY: ("expire-30d", True, ["org", "team"]),
                                                    ORPHANS: ("orphans", True, ["org", "team"])}
    polaris.detach(nested, "expire-30d", "namespace", ["org", "team"])
    assert polaris.applicable(nested, "events")[EXPIRY] == ("expire-14d", True, ["org"])
    polaris.detach("org", "expire-14d", "namespace", ["org"])
    assert polaris.applicable(nested, "events")[EXPIRY] == ("expire-7d", True, ["default"])
    events = Table.objects.select_related("schema__catalog").get(name="events")
    assert {kind: item.policy.name for kind, item in policies.effective_policies(events).items()} == {
        COMPACTION: "no-compaction", EXPIRY: "expire-7d", ORPHANS: "orphans"}
    assert error_of(lambda: polaris.applicable(f"org{SEP}nothing")) == (404, "NoSuchNamespaceException")

    # Paged like the other listings: pageToken and pageSize.
    first = polaris.policies.get_applicable_policies(CATALOG, namespace=nested, target_name="events",
                                                     page_token="", page_size=2)
    assert [p.policy_type for p in first.applicable_policies] == [COMPACTION, ORPHANS] and first.next_page_token
    second = polaris.policies.get_applicable_policies(CATALOG, namespace=nested, target_name="events",
                                                      page_token=first.next_page_token, page_size=2)
    assert [p.policy_type for p in second.applicable_policies] == [EXPIRY] and not second.next_page_token
    assert error_of(lambda: polaris.policies.get_applicable_policies(CATALOG, page_token="%%%")) == (
        400, "BadRequestException")


def test_generic_tables_keep_any_format(iceberg, polaris, http, uc_sdk):
    iceberg().create_namespace(("lake",))
    iceberg().create_namespace(("lake", "raw"))
    nested = f"lake{SEP}raw"
    created = polaris.tables.create_generic_table(CATALOG, nested, CreateGenericTableRequest(
        name="vectors", format="lance", doc="embeddings")).table
    assert created.format == "lance"
    polaris.tables.create_generic_table(CATALOG, nested, CreateGenericTableRequest(name="rows", format="CSV"))
    assert polaris.tables.load_generic_table(CATALOG, nested, "vectors").table.format == "lance"
    assert polaris.tables.load_generic_table(CATALOG, nested, "rows").table.format == "CSV"
    listed = polaris.tables.list_generic_tables(CATALOG, nested).identifiers
    assert [(i.namespace, i.name) for i in listed] == [(["lake", "raw"], "rows"), (["lake", "raw"], "vectors")]
    # The Unity Catalog API lists them with a valid data_source_format: its own value when the
    # format has one, none for a format it has no value for.
    tables = http()("GET", f"{UC}/tables?catalog_name=unity&schema_name=lake.raw").json()["tables"]
    assert [(t["name"], t["data_source_format"]) for t in tables] == [("rows", "CSV"), ("vectors", None)]
    from unitycatalog.client import TablesApi

    sdk = uc_sdk.run(TablesApi, "admin", lambda api: api.list_tables("unity", "lake.raw"))
    assert [(t.name, t.data_source_format and t.data_source_format.value) for t in sdk.tables] == [
        ("rows", "CSV"), ("vectors", None)]
    # pyiceberg does not see them.
    assert iceberg().list_tables(("lake", "raw")) == []
    assert AuditEvent.objects.get(action="createGenericTable", securable_name="unity.lake.raw.vectors").details[
        "format"] == "lance"


def test_policy_lookups_in_a_namespace_the_caller_may_not_see_are_404(iceberg, polaris, live_server, make_token, http):
    """No existence oracle: a namespace hidden from the caller answers as a missing one, for every
    policy operation that names it, whether the policy exists or not."""
    admin = iceberg()
    admin.create_namespace(("hidden",))
    polaris.create_policy("hidden", "p")
    bob = Polaris(live_server.url, make_token("bob"))
    http()("PATCH", f"{UC}/permissions/catalog/unity",
           json={"changes": [{"principal": "bob", "add": ["USE CATALOG"]}]}).raise_for_status()
    calls = {
        "load": lambda ns, name: bob.policies.load_policy(CATALOG, ns, name),
        "list": lambda ns, name: bob.policies.list_policies(CATALOG, ns),
        "create": lambda ns, name: bob.create_policy(ns, "new", body=content()),
        "attach": lambda ns, name: bob.attach(ns, name, "namespace", [ns]),
        "detach": lambda ns, name: bob.detach(ns, name, "namespace", [ns]),
        "drop": lambda ns, name: bob.policies.drop_policy(CATALOG, ns, name),
        "applicable": lambda ns, name: bob.applicable(ns),
        "generic": lambda ns, name: bob.tables.list_generic_tables(CATALOG, ns),
    }
    for what, call in calls.items():
        there = error_of(lambda call=call: call("hidden", "p"))
        gone = error_of(lambda call=call: call("gone", "p"))
        assert there == gone == (404, "NoSuchNamespaceException"), (what, there, gone)
