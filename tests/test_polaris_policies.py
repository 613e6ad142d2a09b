"""Policies of the Polaris-native API (/api/catalog/polaris/v1), driven by the Apache Polaris
Python client against a live server, with pyiceberg and the Unity Catalog API looking at the same
namespace: their lifecycle and content, attachments (one policy of a type per target, also under
concurrent requests), inheritance catalog → namespace → table, privileges, and what they govern
elsewhere: which maintenance operations Delta clients may commit, dropping a namespace, and the
admin pages."""

from __future__ import annotations

import json

import pytest
from apache_polaris.sdk.catalog.exceptions import ApiException
from apache_polaris.sdk.catalog.models import CreateGenericTableRequest, CreatePolicyRequest, UpdatePolicyRequest

from catalog.models import AuditEvent, Policy, PolicyAttachment, Table
from catalog.models import Schema as UCSchema
from catalog.services import policies
from tests.helpers import grant
from tests.polaris_support import CATALOG, COMPACTION, EXPIRY, ICEBERG_SCHEMA, ORPHANS, content, error_of
from tests.polaris_support import connect, iceberg, polaris, uc  # noqa: F401 - the fixtures

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("polaris")]


# -- policies -------------------------------------------------------------------------------------
def test_policy_lifecycle(polaris):
    created = polaris.create_policy("default", "keep-7d", EXPIRY, content(config={"max_snapshot_age_days": 7}),
                                    description="one week")
    assert (created.name, created.policy_type, created.version, created.inheritable, created.description) == (
        "keep-7d", EXPIRY, 0, True, "one week")
    polaris.create_policy("default", "compact", COMPACTION, content(target_file_size_bytes=134217728))
    assert error_of(lambda: polaris.create_policy("default", "keep-7d")) == (409, "AlreadyExistsException")

    names = [i.name for i in polaris.policies.list_policies(CATALOG, "default").identifiers]
    assert names == ["compact", "keep-7d"]
    only = polaris.policies.list_policies(CATALOG, "default", policy_type=COMPACTION).identifiers
    assert [i.name for i in only] == ["compact"]
    page = polaris.policies.list_policies(CATALOG, "default", page_token="", page_size=1)
    assert [i.name for i in page.identifiers] == ["compact"] and page.next_page_token

    loaded = polaris.policies.load_policy(CATALOG, "default", "keep-7d").policy
    assert json.loads(loaded.content)["config"] == {"max_snapshot_age_days": 7}

    updated = polaris.policies.update_policy(CATALOG, "default", "keep-7d", UpdatePolicyRequest(
        description="two weeks", content=content(config={"max_snapshot_age_days": 14}),
        current_policy_version=0)).policy
    assert (updated.version, updated.description) == (1, "two weeks")
    # An update based on a version that is no longer current is refused and changes nothing.
    assert error_of(lambda: polaris.policies.update_policy(CATALOG, "default", "keep-7d", UpdatePolicyRequest(
        description="stale", current_policy_version=0))) == (409, "PolicyVersionMismatchException")
    assert Policy.objects.get(name="keep-7d").comment == "two weeks"

    polaris.attach("default", "keep-7d", "namespace", ["default"])
    assert error_of(lambda: polaris.policies.drop_policy(CATALOG, "default", "keep-7d")) == (
        400, "PolicyInUseException")
    polaris.policies.drop_policy(CATALOG, "default", "keep-7d", detach_all=True)
    assert not PolicyAttachment.objects.exists()
    assert error_of(lambda: polaris.policies.load_policy(CATALOG, "default", "keep-7d")) == (
        404, "NoSuchPolicyException")
    polaris.policies.drop_policy(CATALOG, "default", "compact")
    actions = sorted(AuditEvent.objects.filter(securable_type="policy", outcome="SUCCESS")
                     .values_list("action", flat=True))
    assert actions == ["attachPolicy", "createPolicy", "createPolicy", "dropPolicy", "dropPolicy", "updatePolicy"]


@pytest.mark.parametrize(("policy_type", "body"), [
    (EXPIRY, "not json"),
    (EXPIRY, "[" * 50_000 + "]" * 50_000),
    (EXPIRY, "[1, 2]"),
    (EXPIRY, json.dumps({"version": "2025-02-03"})),                         # enable is required
    (EXPIRY, json.dumps({"enable": "yes"})),
    (EXPIRY, json.dumps({"enable": True, "version": "2024-01-01"})),
    (EXPIRY, json.dumps({"enable": True, "extra": 1})),                      # no other fields
    (EXPIRY, json.dumps({"enable": True, "config": {"k": [1]}})),             # scalar config values
    (EXPIRY, json.dumps({"enable": True, "config": "x"})),
    (COMPACTION, json.dumps({"enable": True, "target_file_size_bytes": "big"})),
    (COMPACTION, json.dumps({"enable": True, "older_than": 1})),             # another type's field
    (ORPHANS, json.dumps({"enable": True, "older_than": True})),
    (ORPHANS, json.dumps({"enable": True, "location": 3})),
    ("system.metadata-compaction", json.dumps({"enable": True, "config": {"k": {"nested": 1}}})),
    ("custom.type", json.dumps({"enable": True})),                           # unknown types
    ("system.snapshot-retention", json.dumps({"enable": True})),
])
def test_policy_content_is_validated(polaris, policy_type, body):
    assert error_of(lambda: polaris.create_policy("default", "p", policy_type, body)) == (400, "BadRequestException")
    assert not Policy.objects.exists()


def test_policy_content_accepts_what_the_schemas_allow(polaris):
    polaris.create_policy("default", "a", COMPACTION, json.dumps(
        {"enable": False, "target_file_size_bytes": 1.5, "config": {"any": {"nested": [1]}}}))
    polaris.create_policy("default", "b", ORPHANS, content(older_than=1707315296, location="s3://b/t",
                                                           config={"k": "v", "n": 1, "f": True}))
    polaris.create_policy("default", "c", "system.metadata-compaction", json.dumps({"enable": True}))
    polaris.policies.update_policy(CATALOG, "default", "c", UpdatePolicyRequest(current_policy_version=0))
    assert error_of(lambda: polaris.policies.update_policy(CATALOG, "default", "c", UpdatePolicyRequest(
        content=json.dumps({"enable": 1}), current_policy_version=1))) == (400, "BadRequestException")
    assert Policy.objects.get(name="c").version == 1


def test_attachments_one_policy_of_a_type_per_target(polaris, iceberg):
    iceberg.create_table(("default", "t"), schema=ICEBERG_SCHEMA)
    polaris.create_policy("default", "p1")
    polaris.create_policy("default", "p2")
    polaris.attach("default", "p1", "table-like", ["default", "t"], {"owner": "x"})
    polaris.attach("default", "p1", "table-like", ["default", "t"], {"owner": "y"})   # again: new parameters
    assert PolicyAttachment.objects.get().parameters == {"owner": "y"}
    assert error_of(lambda: polaris.attach("default", "p2", "table-like", ["default", "t"])) == (
        409, "ConflictPolicyAttachmentException")
    assert error_of(lambda: polaris.attach("default", "p1", "table-like", ["default", "missing"])) == (
        404, "NoSuchTableException")
    assert error_of(lambda: polaris.attach("default", "p1", "namespace", ["missing"])) == (
        404, "NoSuchNamespaceException")
    assert error_of(lambda: polaris.attach("default", "missing", "catalog")) == (404, "NoSuchPolicyException")
    assert error_of(lambda: polaris.attach("default", "p1", "catalog", ["default"])) == (400, "BadRequestException")
    assert error_of(lambda: polaris.detach("default", "p2", "table-like", ["default", "t"])) == (
        404, "NoSuchMappingException")
    polaris.detach("default", "p1", "table-like", ["default", "t"])
    polaris.attach("default", "p2", "table-like", ["default", "t"])
    # Dropping the table takes its attachments with it.
    iceberg.drop_table(("default", "t"))
    assert not PolicyAttachment.objects.exists()


def test_inheritance_catalog_namespace_table(polaris, iceberg, uc, django_assert_num_queries):
    """Overrides at each level; the deepest attachment of each type wins (Polaris's
    getEffectivePolicies). ucweb namespaces have one level: catalog → namespace → table."""
    uc("POST", "/schemas", json={"name": "sales", "catalog_name": "unity"}).raise_for_status()
    iceberg.create_table(("sales", "orders"), schema=ICEBERG_SCHEMA)
    polaris.tables.create_generic_table(CATALOG, "sales", CreateGenericTableRequest(name="raw", format="delta"))
    polaris.create_policy("default", "expire-7d", EXPIRY)
    polaris.create_policy("default", "compact", COMPACTION)
    polaris.create_policy("sales", "expire-30d", EXPIRY)
    polaris.create_policy("sales", "no-compaction", COMPACTION, json.dumps({"enable": False}))
    polaris.create_policy("sales", "orphans", ORPHANS)

    polaris.attach("default", "expire-7d", "catalog")
    polaris.attach("default", "compact", "catalog")
    assert polaris.applicable() == {COMPACTION: ("compact", False, ["default"]),
                                    EXPIRY: ("expire-7d", False, ["default"])}
    assert polaris.applicable("sales") == {COMPACTION: ("compact", True, ["default"]),
                                           EXPIRY: ("expire-7d", True, ["default"])}

    polaris.attach("sales", "expire-30d", "namespace", ["sales"])
    polaris.attach("sales", "no-compaction", "table-like", ["sales", "orders"])
    polaris.attach("sales", "orphans", "table-like", ["sales", "raw"])
    assert polaris.applicable("sales") == {COMPACTION: ("compact", True, ["default"]),
                                           EXPIRY: ("expire-30d", False, ["sales"])}
    assert polaris.applicable("sales", "orders") == {COMPACTION: ("no-compaction", False, ["sales"]),
                                                     EXPIRY: ("expire-30d", True, ["sales"])}
    assert polaris.applicable("sales", "raw") == {COMPACTION: ("compact", True, ["default"]),
                                                  EXPIRY: ("expire-30d", True, ["sales"]),
                                                  ORPHANS: ("orphans", False, ["sales"])}
    assert polaris.applicable("sales", "orders", policy_type=EXPIRY) == {EXPIRY: ("expire-30d", True, ["sales"])}
    # The other namespace still gets the catalog's.
    assert polaris.applicable("default") == {COMPACTION: ("compact", True, ["default"]),
                                             EXPIRY: ("expire-7d", True, ["default"])}

    # The same resolution, for the maintenance that the policies configure.
    orders = Table.objects.select_related("schema__catalog").get(name="orders")
    with django_assert_num_queries(1):
        effective = policies.effective_policies(orders)
    assert {kind: item.policy.name for kind, item in effective.items()} == {
        COMPACTION: "no-compaction", EXPIRY: "expire-30d"}
    assert effective[COMPACTION].content == {"enable": False}

    polaris.detach("sales", "expire-30d", "namespace", ["sales"])
    assert polaris.applicable("sales", "orders")[EXPIRY] == ("expire-7d", True, ["default"])
    assert error_of(lambda: polaris.applicable("sales", "missing")) == (404, "NoSuchTableException")
    assert error_of(lambda: polaris.applicable("missing")) == (404, "NoSuchNamespaceException")
    assert error_of(lambda: polaris.applicable(policy_type="custom")) == (400, "BadRequestException")


def test_policy_privileges(polaris, connect, iceberg, uc):
    iceberg.create_table(("default", "t"), schema=ICEBERG_SCHEMA)
    polaris.create_policy("default", "adm")
    bob = connect("bob")
    # A warehouse bob may not see answers as a missing one (no existence oracle).
    assert error_of(lambda: bob.create_policy("default", "mine")) == error_of(
        lambda: bob.policies.create_policy("nowhere", "default", CreatePolicyRequest(
            name="mine", type="system.snapshot-expiry", content=json.dumps({"enable": True}))))
    assert Policy.objects.filter(name="mine").count() == 0

    grant("bob", "catalog", "unity", "USE CATALOG")
    grant("bob", "schema", "unity.default", "USE SCHEMA")
    assert error_of(lambda: bob.create_policy("default", "mine")) == (403, "ForbiddenException")
    # A policy he neither owns nor may apply is hidden: it answers as a missing one, and the
    # listing leaves it out.
    assert error_of(lambda: bob.policies.load_policy(CATALOG, "default", "adm")) == (404, "NoSuchPolicyException")
    assert error_of(lambda: bob.policies.load_policy(CATALOG, "default", "adm")) == error_of(
        lambda: bob.policies.load_policy(CATALOG, "default", "nowhere"))
    assert bob.policies.list_policies(CATALOG, "default").identifiers == []

    grant("bob", "schema", "unity.default", "CREATE POLICY")
    bob.create_policy("default", "mine")
    assert [i.name for i in bob.policies.list_policies(CATALOG, "default").identifiers] == ["mine"]
    # Attaching needs APPLY POLICY on the target as well; a target he cannot see answers as a
    # missing one.
    assert error_of(lambda: bob.attach("default", "mine", "table-like", ["default", "t"])) == (
        404, "NoSuchTableException")
    assert error_of(lambda: bob.attach("default", "mine", "table-like", ["default", "t"])) == error_of(
        lambda: bob.attach("default", "mine", "table-like", ["default", "nowhere"]))
    grant("bob", "table", "unity.default.t", "APPLY POLICY")
    bob.attach("default", "mine", "table-like", ["default", "t"])
    # ...and on the policy: the admin's policy cannot be attached by bob until it is granted.
    bob.detach("default", "mine", "table-like", ["default", "t"])
    assert error_of(lambda: bob.attach("default", "adm", "table-like", ["default", "t"])) == (
        404, "NoSuchPolicyException")
    grant("bob", "policy", "unity.default.adm", "APPLY POLICY")
    bob.attach("default", "adm", "table-like", ["default", "t"])
    assert bob.policies.load_policy(CATALOG, "default", "adm").policy.name == "adm"
    # Updating and dropping the admin's policy stay the owner's.
    assert error_of(lambda: bob.policies.update_policy(CATALOG, "default", "adm", UpdatePolicyRequest(
        current_policy_version=0))) == (403, "ForbiddenException")
    assert error_of(lambda: bob.policies.drop_policy(CATALOG, "default", "adm", detach_all=True)) == (
        403, "ForbiddenException")
    assert Policy.objects.get(name="adm").version == 0
    # Applicable policies of a table need SELECT (or MODIFY) on it.
    assert error_of(lambda: bob.applicable("default", "t")) == (403, "ForbiddenException")
    grant("bob", "table", "unity.default.t", "SELECT")
    assert bob.applicable("default", "t") == {EXPIRY: ("adm", False, ["default"])}
    refused = set(AuditEvent.objects.filter(principal="bob", outcome="DENIED").values_list("securable_name", flat=True))
    assert {"unity.default", "unity.default.adm"} <= refused, refused
    listed = uc("GET", "/permissions/policy/unity.default.adm").json()
    assert listed["privilege_assignments"] == [{"principal": "bob", "privileges": ["APPLY POLICY"]}]


def test_concurrent_attachments_of_one_type_to_one_target(connect, polaris):
    """Two different policies of one type attached to one target at the same time: one wins, the
    other is 409, never both."""
    import threading

    names = [f"race-{i}" for i in range(6)]
    for name in names:
        polaris.create_policy("default", name)
    barrier = threading.Barrier(len(names))
    outcomes = {}
    clients = {name: connect() for name in names}   # tokens made here: the threads only send requests

    def attach(name):
        client = clients[name]
        barrier.wait()
        try:
            client.attach("default", name, "namespace", ["default"])
            outcomes[name] = 204
        except ApiException as refused:
            outcomes[name] = (refused.status, json.loads(refused.body)["error"]["type"])

    threads = [threading.Thread(target=attach, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [name for name, outcome in outcomes.items() if outcome == 204]
    assert len(winners) == 1, outcomes
    assert all(outcome == (409, "ConflictPolicyAttachmentException")
               for name, outcome in outcomes.items() if name not in winners), outcomes
    assert list(PolicyAttachment.objects.values_list("policy__name", flat=True)) == winners


# -- what policies govern elsewhere: Delta maintenance, namespaces, the admin -----------------------
def test_policies_decide_which_maintenance_clients_may_commit(delta, polaris, uc):
    """A managed Delta table is a generic table; Polaris policies on it, its namespace or the
    catalog say whether the catalog runs compaction (then clients may not OPTIMIZE) or not, as
    the property ucweb.maintenance.client-operations does; the deepest statement wins."""
    from unitycatalog.client.exceptions import ApiException as UCApiException

    created = delta.create_table("unity", "default", "events")
    table_id, location = created.table_id, created.storage_location
    assert polaris.tables.load_generic_table(CATALOG, "default", "events").table.format == "delta"

    def client_may(operation) -> bool:
        number = Table.objects.get(id=table_id).latest_version + 1
        info = delta.stage_commit(location, number, f"c{number}-{operation[:3]}.parquet", operation=operation)
        try:
            delta.ratify(table_id, location, info)
        except UCApiException as refused:
            assert refused.status == 403, refused.body
            assert Table.objects.get(id=table_id).latest_version == number - 1
            return False
        return True

    def set_property(row, value):
        row.properties = {**row.properties, "ucweb.maintenance.client-operations": value} if value else {}
        row.save()

    assert not client_may("OPTIMIZE")                     # the default: the catalog's
    polaris.create_policy("default", "compaction-off", COMPACTION, json.dumps({"enable": False}))
    polaris.create_policy("default", "compaction-on", COMPACTION, json.dumps({"enable": True}))
    polaris.create_policy("default", "orphans-off", ORPHANS, json.dumps({"enable": False}))
    polaris.attach("default", "compaction-off", "catalog")
    assert client_may("OPTIMIZE") and client_may("REORG")   # the catalog does not compact
    assert not client_may("VACUUM END")                   # another type: still the catalog's
    polaris.attach("default", "orphans-off", "namespace", ["default"])
    assert client_may("VACUUM END")
    polaris.attach("default", "compaction-on", "table-like", ["default", "events"])
    assert not client_may("OPTIMIZE")                     # the table's own policy is deeper
    schema = UCSchema.objects.get(catalog__name="unity", name="default")
    set_property(schema, "OPTIMIZE")
    assert not client_may("OPTIMIZE")                     # a schema property is above the table's policy
    set_property(Table.objects.get(id=table_id), "OPTIMIZE")
    assert client_may("OPTIMIZE")                         # the table property, at the same level, wins
    set_property(Table.objects.get(id=table_id), "")
    polaris.detach("default", "compaction-on", "table-like", ["default", "events"])
    set_property(schema, "")
    assert client_may("OPTIMIZE")                         # back to the catalog-wide policy


def test_a_namespace_with_policies_is_not_empty(polaris, iceberg, uc):
    from pyiceberg.exceptions import NamespaceNotEmptyError

    uc("POST", "/schemas", json={"name": "ops", "catalog_name": "unity"}).raise_for_status()
    polaris.create_policy("ops", "p")
    polaris.attach("ops", "p", "catalog")
    with pytest.raises(NamespaceNotEmptyError):
        iceberg.drop_namespace("ops")
    assert uc("DELETE", "/schemas/unity.ops").status_code == 400
    # With force the policy and its attachments go with the schema.
    assert uc("DELETE", "/schemas/unity.ops", params={"force": "true"}).status_code == 200
    assert not Policy.objects.exists() and not PolicyAttachment.objects.exists()


def test_admin_shows_what_a_policy_applies_to(polaris, iceberg, client, uc):
    from django.contrib.auth import get_user_model

    uc("POST", "/schemas", json={"name": "sales", "catalog_name": "unity"}).raise_for_status()
    iceberg.create_table(("sales", "orders"), schema=ICEBERG_SCHEMA)
    iceberg.create_table(("sales", "returns"), schema=ICEBERG_SCHEMA)
    polaris.create_policy("sales", "wide")
    polaris.create_policy("sales", "narrow")
    polaris.attach("sales", "wide", "namespace", ["sales"])
    polaris.attach("sales", "narrow", "table-like", ["sales", "returns"])
    client.force_login(get_user_model().objects.create_superuser("governance", "gov@example.com", "pw"))
    listing = client.get("/admin/catalog/policy/").content.decode()
    assert "namespace unity.sales" in listing and "table-like unity.sales.returns" in listing
    page = client.get(f"/admin/catalog/policy/{Policy.objects.get(name='wide').id}/change/").content.decode()
    assert "<li>unity.sales.orders</li>" in page and "<li>unity.sales.returns</li>" not in page
