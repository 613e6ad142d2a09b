"""The Polaris-native API (/api/catalog/polaris/v1): generic tables and policies, driven by the
Apache Polaris Python client (`apache-polaris`, its generated catalog client) against a live
server, with pyiceberg and the Unity Catalog API looking at the same namespace."""

from __future__ import annotations

import json

import pytest
import requests
from apache_polaris.sdk.catalog import ApiClient, Configuration
from apache_polaris.sdk.catalog.api.generic_table_api import GenericTableAPI
from apache_polaris.sdk.catalog.api.policy_api import PolicyAPI
from apache_polaris.sdk.catalog.exceptions import ApiException
from apache_polaris.sdk.catalog.models import (
    AttachPolicyRequest,
    CreateGenericTableRequest,
    CreatePolicyRequest,
    DetachPolicyRequest,
    PolicyAttachmentTarget,
    UpdatePolicyRequest,
)
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError, TableAlreadyExistsError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from catalog.choices import Privilege
from catalog.models import AuditEvent, Grant, Policy, PolicyAttachment, Table
from catalog.models import Schema as UCSchema
from catalog.services import policies
from tests.helpers import UC, grant
from tests.test_openapi_fuzz import check_error_envelope, fuzz_settings

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("polaris")]

CATALOG = "unity"
COMPACTION = "system.data-compaction"
EXPIRY = "system.snapshot-expiry"
ORPHANS = "system.orphan-file-removal"


def content(**fields) -> str:
    return json.dumps({"version": "2025-02-03", "enable": True, **fields})


class Polaris:
    """The Polaris client's generic-table and policy APIs as one principal."""

    def __init__(self, base_url: str, token: str | None):
        self.client = ApiClient(Configuration(host=f"{base_url}/api/catalog"))
        if token:
            self.client.set_default_header("Authorization", f"Bearer {token}")
        self.tables = GenericTableAPI(self.client)
        self.policies = PolicyAPI(self.client)

    def create_policy(self, namespace, name, policy_type=EXPIRY, body=None, description=None):
        request = CreatePolicyRequest(name=name, type=policy_type, content=body or content(),
                                      description=description)
        return self.policies.create_policy(CATALOG, namespace, request).policy

    def attach(self, namespace, name, kind, path=None, parameters=None):
        target = PolicyAttachmentTarget(type=kind, path=path)
        self.policies.attach_policy(CATALOG, namespace, name,
                                    AttachPolicyRequest(target=target, parameters=parameters))

    def detach(self, namespace, name, kind, path=None):
        self.policies.detach_policy(CATALOG, namespace, name,
                                    DetachPolicyRequest(target=PolicyAttachmentTarget(type=kind, path=path)))

    def applicable(self, namespace=None, target=None, policy_type=None) -> dict:
        result = self.policies.get_applicable_policies(CATALOG, namespace=namespace, target_name=target,
                                                       policy_type=policy_type)
        return {item.policy_type: (item.name, item.inherited, item.namespace)
                for item in result.applicable_policies}


def error_of(call) -> tuple[int, str]:
    """The status and the Iceberg error type of a refused call (the envelope is checked too)."""
    with pytest.raises(ApiException) as raised:
        call()
    body = json.loads(raised.value.body)
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == raised.value.status, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
    return raised.value.status, body["error"]["type"]


@pytest.fixture
def connect(live_server, bootstrap, make_token, storage_root):
    def connect(name: str | None = "admin", *, admin: bool | None = None) -> Polaris:
        token = None if name is None else make_token(name, admin=(name == "admin") if admin is None else admin)
        return Polaris(live_server.url, token)

    return connect


@pytest.fixture
def polaris(connect) -> Polaris:
    return connect()


@pytest.fixture
def iceberg(live_server, bootstrap, make_token, storage_root) -> RestCatalog:
    return RestCatalog("ucweb", uri=f"{live_server.url}/api/catalog", warehouse=CATALOG,
                       token=make_token("admin", admin=True))


@pytest.fixture
def uc(live_server, make_token):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {make_token('admin', admin=True)}"

    def call(method, path, **kwargs):
        return session.request(method, f"{live_server.url}{UC}{path}", **kwargs)

    return call


ICEBERG_SCHEMA = Schema(NestedField(1, "id", LongType(), required=True))


# -- generic tables -------------------------------------------------------------------------------
def test_generic_table_lifecycle(polaris, uc, tmp_path):
    location = (tmp_path / "events").as_uri()
    created = polaris.tables.create_generic_table(CATALOG, "default", CreateGenericTableRequest(
        name="events", format="delta", base_location=location, doc="raw events", properties={"a": "1"})).table
    assert (created.name, created.format, created.base_location, created.doc, created.properties) == (
        "events", "delta", location, "raw events", {"a": "1"})
    polaris.tables.create_generic_table(CATALOG, "default", CreateGenericTableRequest(name="lines", format="csv"))

    loaded = polaris.tables.load_generic_table(CATALOG, "default", "events").table
    assert (loaded.format, loaded.base_location, loaded.doc) == ("delta", location, "raw events")

    listed = polaris.tables.list_generic_tables(CATALOG, "default")
    assert [(i.namespace, i.name) for i in listed.identifiers] == [(["default"], "events"), (["default"], "lines")]
    first = polaris.tables.list_generic_tables(CATALOG, "default", page_token="", page_size=1)
    assert [i.name for i in first.identifiers] == ["events"] and first.next_page_token
    second = polaris.tables.list_generic_tables(CATALOG, "default", page_token=first.next_page_token, page_size=1)
    assert [i.name for i in second.identifiers] == ["lines"] and not second.next_page_token

    # The Unity Catalog API sees the same row: an EXTERNAL DELTA table at the base location.
    info = uc("GET", "/tables/unity.default.events").json()
    assert (info["table_type"], info["data_source_format"], info["storage_location"], info["comment"]) == (
        "EXTERNAL", "DELTA", location, "raw events")
    assert {t["name"] for t in uc("GET", "/tables", params={"catalog_name": "unity", "schema_name": "default"})
            .json()["tables"]} == {"events", "lines"}

    polaris.tables.drop_generic_table(CATALOG, "default", "events")
    assert error_of(lambda: polaris.tables.load_generic_table(CATALOG, "default", "events")) == (
        404, "NoSuchTableException")
    assert error_of(lambda: polaris.tables.drop_generic_table(CATALOG, "default", "events")) == (
        404, "NoSuchTableException")
    events = AuditEvent.objects.filter(securable_name="unity.default.events")
    assert sorted(events.filter(outcome="SUCCESS").values_list("action", flat=True)) == [
        "createGenericTable", "dropGenericTable"]
    (refused,) = events.filter(outcome="FAILED")   # the second drop
    assert refused.action == "deleteGenericTable"  # the refused request is audited under its operation


def test_generic_tables_and_iceberg_tables_share_names_but_not_endpoints(polaris, iceberg, uc):
    iceberg.create_table(("default", "ice"), schema=ICEBERG_SCHEMA)
    polaris.tables.create_generic_table(CATALOG, "default", CreateGenericTableRequest(name="gen", format="parquet"))
    # A delta table of the Unity Catalog API is a generic table too; a view is not.
    uc("POST", "/tables", json={"name": "ucdelta", "catalog_name": "unity", "schema_name": "default",
                                "table_type": "EXTERNAL", "data_source_format": "DELTA",
                                "storage_location": "file:///tmp/ucweb-polaris-test/ucdelta"}).raise_for_status()
    uc("POST", "/tables", json={"name": "v", "catalog_name": "unity", "schema_name": "default",
                                "table_type": "VIEW", "view_definition": "select 1"}).raise_for_status()

    for name in ("ice", "ucdelta", "v"):
        assert error_of(lambda name=name: polaris.tables.create_generic_table(
            CATALOG, "default", CreateGenericTableRequest(name=name, format="csv"))) == (409, "AlreadyExistsException")
    with pytest.raises(TableAlreadyExistsError):
        iceberg.create_table(("default", "gen"), schema=ICEBERG_SCHEMA)

    assert error_of(lambda: polaris.tables.load_generic_table(CATALOG, "default", "ice")) == (
        404, "NoSuchTableException")
    assert error_of(lambda: polaris.tables.load_generic_table(CATALOG, "default", "v")) == (
        404, "NoSuchTableException")
    assert error_of(lambda: polaris.tables.drop_generic_table(CATALOG, "default", "ice")) == (
        404, "NoSuchTableException")
    assert iceberg.table_exists(("default", "ice"))
    with pytest.raises(NoSuchTableError):
        iceberg.load_table(("default", "gen"))
    assert iceberg.list_tables("default") == [("default", "ice")]
    names = [i.name for i in polaris.tables.list_generic_tables(CATALOG, "default").identifiers]
    assert names == ["gen", "ucdelta"]
    assert polaris.tables.load_generic_table(CATALOG, "default", "ucdelta").table.format == "delta"


def test_generic_table_bad_input_changes_nothing(polaris, connect, tmp_path):
    before = Table.objects.count()
    cases = [
        CreateGenericTableRequest(name="t", format="iceberg"),
        # Any format name is accepted (`lance`, see below); a blank one or control characters are not.
        CreateGenericTableRequest(name="t", format=" "),
        CreateGenericTableRequest(name="t", format="lan\nce"),
        CreateGenericTableRequest(name="a.b", format="csv"),
        CreateGenericTableRequest(name="t", format="csv", base_location="http://example.com/x"),
        CreateGenericTableRequest(name="t", format="csv", base_location="not a url"),
    ]
    for request in cases:
        assert error_of(lambda request=request: polaris.tables.create_generic_table(
            CATALOG, "default", request)) == (400, "BadRequestException"), request
    assert error_of(lambda: polaris.tables.create_generic_table(
        CATALOG, "nope", CreateGenericTableRequest(name="t", format="csv"))) == (404, "NoSuchNamespaceException")
    assert error_of(lambda: polaris.tables.list_generic_tables("nowhere", "default")) == (
        404, "NoSuchWarehouseException")
    # A base location outside every external location is for admins only, as for UC external tables.
    bob = connect("bob")
    schema = UCSchema.objects.get(catalog__name="unity", name="default")
    Grant.objects.create(securable_type="catalog", securable_id=schema.catalog_id, securable_name="unity",
                         principal="bob", privilege=Privilege.USE_CATALOG)
    for privilege in (Privilege.USE_SCHEMA, Privilege.CREATE_TABLE):
        Grant.objects.create(securable_type="schema", securable_id=schema.id, securable_name="unity.default",
                             principal="bob", privilege=privilege)
    assert error_of(lambda: bob.tables.create_generic_table(CATALOG, "default", CreateGenericTableRequest(
        name="t", format="csv", base_location=(tmp_path / "x").as_uri()))) == (403, "ForbiddenException")
    assert Table.objects.count() == before
    # Without a location bob may create one, and it is his.
    bob.tables.create_generic_table(CATALOG, "default", CreateGenericTableRequest(name="t", format="csv"))
    assert Table.objects.get(name="t").owner == "bob"


def test_unauthenticated_and_unknown_routes_answer_the_envelope(connect, live_server):
    anonymous = connect(None)
    assert error_of(lambda: anonymous.tables.list_generic_tables(CATALOG, "default")) == (
        401, "NotAuthorizedException")
    assert error_of(lambda: anonymous.policies.list_policies(CATALOG, "default")) == (401, "NotAuthorizedException")
    for path in ("/api/catalog/polaris/v1/unity/nothing-here", "/api/catalog/v2/unity", "/api/2.1/unity-catalog/x"):
        response = requests.get(f"{live_server.url}{path}")
        assert response.status_code == 404, path
        assert response.headers["Content-Type"].startswith("application/json"), path
        body = response.json()
        if path.startswith("/api/catalog"):
            assert body["error"]["code"] == 404 and body["error"]["type"] == "NotFoundException"
        else:
            assert body["error_code"] == "NOT_FOUND"


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
    # Reading a policy he neither owns nor may apply is refused; the listing leaves it out.
    assert error_of(lambda: bob.policies.load_policy(CATALOG, "default", "adm")) == (403, "ForbiddenException")
    assert bob.policies.list_policies(CATALOG, "default").identifiers == []

    grant("bob", "schema", "unity.default", "CREATE POLICY")
    bob.create_policy("default", "mine")
    assert [i.name for i in bob.policies.list_policies(CATALOG, "default").identifiers] == ["mine"]
    # Attaching needs APPLY POLICY on the target as well.
    assert error_of(lambda: bob.attach("default", "mine", "table-like", ["default", "t"])) == (
        403, "ForbiddenException")
    grant("bob", "table", "unity.default.t", "APPLY POLICY")
    bob.attach("default", "mine", "table-like", ["default", "t"])
    # ...and on the policy: the admin's policy cannot be attached by bob until it is granted.
    bob.detach("default", "mine", "table-like", ["default", "t"])
    assert error_of(lambda: bob.attach("default", "adm", "table-like", ["default", "t"])) == (
        403, "ForbiddenException")
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


# -- Iceberg: notifications and register-view ---------------------------------------------------------
@pytest.fixture
def catalog_api(live_server, make_token):
    from apache_polaris.sdk.catalog.api.catalog_api import CatalogAPI

    def connect(name="admin"):
        client = ApiClient(Configuration(host=f"{live_server.url}/api/catalog"))
        client.set_default_header("Authorization", f"Bearer {make_token(name, admin=(name == 'admin'))}")
        return CatalogAPI(client)

    return connect


def notification(kind, table, timestamp, table_uuid, location):
    from apache_polaris.sdk.catalog.models import NotificationRequest, TableUpdateNotification

    return NotificationRequest(notification_type=kind, payload=TableUpdateNotification(
        table_name=table, timestamp=timestamp, table_uuid=table_uuid, metadata_location=location))


def test_notifications_follow_metadata_another_system_writes(iceberg, catalog_api, connect, tmp_path, storage_root):
    import pyarrow as pa

    # "Another system" writes two versions of a table outside managed storage, then forgets it.
    location = (tmp_path / "external" / "clicks").as_uri()
    written = iceberg.create_table(("default", "source"), schema=ICEBERG_SCHEMA, location=location)
    first = written.metadata_location
    written.append(pa.Table.from_pylist([{"id": 1}, {"id": 2}], schema=pa.schema([pa.field("id", pa.int64(), False)])))
    second = written.metadata_location
    table_uuid = str(written.metadata.table_uuid)
    iceberg.drop_table(("default", "source"))
    api = catalog_api()

    api.send_notification(CATALOG, "default", "clicks", notification("CREATE", "clicks", 100, table_uuid, first))
    assert iceberg.load_table(("default", "clicks")).metadata_location == first
    api.send_notification(CATALOG, "default", "clicks", notification("UPDATE", "clicks", 200, table_uuid, second))
    loaded = iceberg.load_table(("default", "clicks"))
    assert loaded.metadata_location == second
    assert sorted(loaded.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    # Not newer than the last admitted: 409, nothing changes.
    for timestamp in (200, 150):
        assert error_of(lambda timestamp=timestamp: api.send_notification(CATALOG, "default", "clicks", notification(
            "UPDATE", "clicks", timestamp, table_uuid, first))) == (409, "AlreadyExistsException")
    assert iceberg.load_table(("default", "clicks")).metadata_location == second
    # Bad input: a table name that is not the path's, another table's uuid, a file that is not there.
    bad = [notification("UPDATE", "other", 300, table_uuid, second),
           notification("UPDATE", "clicks", 300, "00000000-0000-0000-0000-000000000000", second),
           notification("UPDATE", "clicks", 300, table_uuid, location + "/metadata/missing.json")]
    for request in bad:
        assert error_of(lambda request=request: api.send_notification(CATALOG, "default", "clicks", request)) == (
            400, "BadRequestException")
    # A metadata file may not point the catalog at storage it would then vend and purge: here the
    # managed storage of the catalog (the same rule as the file's own location).
    forged = json.loads(Table.objects.get(name="clicks").iceberg.metadata_json)
    forged["location"] = storage_root.as_uri() + "/tables/someone-else"
    forged_path = tmp_path / "external" / "clicks" / "metadata" / "forged.metadata.json"
    forged_path.write_text(json.dumps(forged))
    assert error_of(lambda: api.send_notification(CATALOG, "default", "clicks", notification(
        "UPDATE", "clicks", 300, table_uuid, forged_path.as_uri()))) == (400, "BadRequestException")
    assert iceberg.load_table(("default", "clicks")).metadata_location == second
    # Nor at another live table's storage in the same external location, by an update or a create.
    neighbour = iceberg.create_table(("default", "neighbour"), schema=ICEBERG_SCHEMA,
                                     location=(tmp_path / "external" / "neighbour").as_uri())
    forged["location"] = neighbour.metadata.location
    forged_path.write_text(json.dumps(forged))
    tree = sorted(p for p in (tmp_path / "external").rglob("*") if "forged" not in p.name)
    for kind, name in (("UPDATE", "clicks"), ("CREATE", "clicks_again")):
        assert error_of(lambda kind=kind, name=name: api.send_notification(CATALOG, "default", name, notification(
            kind, name, 400, table_uuid, forged_path.as_uri()))) == (400, "BadRequestException")
    assert Table.objects.get(name="clicks").storage_location == location
    assert not Table.objects.filter(name="clicks_again").exists()
    assert sorted(p for p in (tmp_path / "external").rglob("*") if "forged" not in p.name) == tree
    # A table whose metadata this catalog writes takes no notifications.
    iceberg.create_table(("default", "managed"), schema=ICEBERG_SCHEMA)
    assert error_of(lambda: api.send_notification(CATALOG, "default", "managed", notification(
        "UPDATE", "managed", 1, table_uuid, second))) == (400, "BadRequestException")
    # Someone without an external location over the file may not point the catalog at it (and
    # bob, who may not even see the catalog, is answered as for a missing warehouse).
    assert error_of(lambda: catalog_api("bob").send_notification(CATALOG, "default", "clicks", notification(
        "VALIDATE", "clicks", 300, table_uuid, second))) == (404, "NoSuchWarehouseException")
    api.send_notification(CATALOG, "default", "clicks", notification("VALIDATE", "clicks", 300, table_uuid, second))

    api.send_notification(CATALOG, "default", "clicks", notification("DROP", "clicks", 400, table_uuid, second))
    with pytest.raises(NoSuchTableError):
        iceberg.load_table(("default", "clicks"))
    assert storage_exists(second)   # dropped from the catalog, not purged
    actions = sorted(AuditEvent.objects.filter(securable_name="unity.default.clicks", outcome="SUCCESS")
                     .values_list("action", flat=True))
    assert actions == ["createTableByNotification", "dropTableByNotification", "updateTableByNotification"]


def storage_exists(url: str) -> bool:
    from catalog.storage import storage_for

    return storage_for(url).exists(url)


def test_register_view(iceberg, catalog_api, tmp_path):
    from apache_polaris.sdk.catalog.models import RegisterViewRequest
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

    version = ViewVersion(version_id=1, schema_id=1, timestamp_ms=1, summary={}, default_namespace=["default"],
                          representations=[SQLViewRepresentation(type="sql", sql="SELECT 1 AS id", dialect="spark")])
    location = (tmp_path / "external" / "v").as_uri()
    view = iceberg.create_view(("default", "v1"), ICEBERG_SCHEMA, version, location=location)
    metadata_location = Table.objects.get(name="v1").iceberg.metadata_location
    iceberg.drop_view(("default", "v1"))
    del view

    api = catalog_api()
    loaded = api.register_view(CATALOG, "default", RegisterViewRequest(name="again", metadata_location=metadata_location))
    assert loaded.metadata_location == metadata_location
    assert iceberg.load_view(("default", "again")).metadata.location == location
    assert Table.objects.get(name="again").view_definition == "SELECT 1 AS id"
    assert error_of(lambda: api.register_view(CATALOG, "default", RegisterViewRequest(
        name="again", metadata_location=metadata_location))) == (409, "AlreadyExistsException")
    assert error_of(lambda: api.register_view(CATALOG, "default", RegisterViewRequest(
        name="x", metadata_location=location + "/missing.json"))) == (400, "BadRequestException")


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


# -- the OpenAPI document and fuzzing of the new operations ---------------------------------------------
NEW_OPERATIONS = {
    ("GET", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/generic-tables"): "listGenericTables",
    ("POST", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/generic-tables"): "createGenericTable",
    ("GET", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/generic-tables/{table}"): "loadGenericTable",
    ("DELETE", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/generic-tables/{table}"): "dropGenericTable",
    ("GET", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies"): "listPolicies",
    ("POST", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies"): "createPolicy",
    ("GET", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy}"): "loadPolicy",
    ("PUT", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy}"): "updatePolicy",
    ("DELETE", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy}"): "dropPolicy",
    ("PUT", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy}/mappings"): "attachPolicy",
    ("POST", "/api/catalog/polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy}/mappings"): "detachPolicy",
    ("GET", "/api/catalog/polaris/v1/{prefix}/applicable-policies"): "getApplicablePolicies",
    ("POST", "/api/catalog/v1/{prefix}/namespaces/{namespace}/register-view"): "registerView",
    ("POST", "/api/catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}/notifications"): "sendNotification",
}


def test_the_schema_describes_the_new_operations_with_typed_bodies(client):
    import yaml

    schema = yaml.safe_load(client.get("/api/schema/").content)
    components = schema["components"]["schemas"]
    for (method, path), operation_id in NEW_OPERATIONS.items():
        operation = schema["paths"][path][method.lower()]
        assert operation["operationId"] == operation_id
        if "requestBody" in operation:
            ref = next(iter(operation["requestBody"]["content"].values()))["schema"]["$ref"]
            assert components[ref.rsplit("/", 1)[1]]["properties"], path
        success = operation["responses"].get("200")
        if success is not None and path.startswith("/api/catalog/polaris"):
            ref = success["content"]["application/json"]["schema"]["$ref"]
            assert components[ref.rsplit("/", 1)[1]]["properties"], path
    for name in ("CreatePolicyRequest", "AttachPolicyRequest", "GetApplicablePoliciesResponse", "GenericTable"):
        assert any(component.startswith(name) for component in components), name


NEW_PATHS = r"^/api/catalog/(polaris/|v1/\{prefix\}/namespaces/\{namespace\}/(register-view|tables/\{table\}/notifications))"


def _ensure_polaris_rows() -> None:
    from catalog.models import Principal, Schema as Namespace
    from catalog.services import generic_tables
    from catalog.services import policies as policy_service

    admin = Principal.objects.get(name="admin")
    schema = Namespace.objects.get(catalog__name=CATALOG, name="default")
    if not Table.objects.filter(schema=schema, name="gen").exists():
        generic_tables.create_generic_table(caller=admin, prefix=CATALOG, namespace="default",
                                            body={"name": "gen", "format": "delta"})
    if not Policy.objects.filter(schema=schema, name="p").exists():
        policy_service.create_policy(caller=admin, prefix=CATALOG, namespace="default",
                                     body={"name": "p", "type": EXPIRY, "content": content()})


@pytest.fixture
def polaris_api_schema(live_server, bootstrap, storage_root):
    import schemathesis

    _ensure_polaris_rows()
    return schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json")


def _fuzz():
    import schemathesis

    return schemathesis.pytest.from_fixture("polaris_api_schema").include(path_regex=NEW_PATHS)


@_fuzz().parametrize()
@fuzz_settings(max_examples=15)
def test_new_operations_have_no_server_errors(case, live_server, make_token):
    import zlib

    from schemathesis.checks import not_a_server_error

    # Half of the cases are aimed at rows that exist, so that they reach the code under test.
    data = repr((case.operation.label, case.path_parameters, case.query, case.body))
    if zlib.crc32(data.encode("utf-8", "surrogatepass")) % 2 == 0:
        _ensure_polaris_rows()
        params = case.path_parameters or {}
        for key, value in (("prefix", CATALOG), ("namespace", "default"), ("policy", "p"), ("table", "gen")):
            if key in params:
                params[key] = value
    token = make_token("admin", admin=True)
    response = case.call(base_url=live_server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    case.validate_response(response, checks=[not_a_server_error])
    check_error_envelope(response)


# -- policies and the maintenance policy of managed Delta tables ----------------------------------------
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


# -- vended credentials for generic tables ------------------------------------------------------------
from tests.seaweedfs_sts import sts_s3_server  # noqa: E402,F401 - the module-scoped server fixture
from tests.test_credentials_vending import allowed, lake  # noqa: E402,F401


def test_generic_table_load_vends_credentials_on_request(connect, tmp_path):
    polaris = connect()
    location = (tmp_path / "files").as_uri()
    polaris.tables.create_generic_table(CATALOG, "default", CreateGenericTableRequest(
        name="files", format="parquet", base_location=location))
    plain = polaris.tables.load_generic_table(CATALOG, "default", "files")
    assert plain.storage_access_configs is None
    vended = polaris.tables.load_generic_table(CATALOG, "default", "files",
                                               polaris_generic_table_access_delegation="vended-credentials")
    assert [(c.prefix, c.config) for c in vended.storage_access_configs] == [(location, {})]
    assert error_of(lambda: polaris.tables.load_generic_table(
        CATALOG, "default", "files", polaris_generic_table_access_delegation="remote-signing")) == (
        400, "BadRequestException")
    polaris.tables.create_generic_table(CATALOG, "default", CreateGenericTableRequest(name="nowhere", format="csv"))
    assert error_of(lambda: polaris.tables.load_generic_table(
        CATALOG, "default", "nowhere", polaris_generic_table_access_delegation="vended-credentials")) == (
        400, "BadRequestException")


@pytest.mark.s3
def test_generic_table_credentials_are_scoped_to_the_table_on_s3(lake, connect, uc):  # noqa: F811
    """The EXTERNAL PARQUET table of the Unity Catalog API is a generic table; bob, with SELECT,
    gets read-only S3 credentials for its prefix and nothing else."""
    server, keys, bucket = lake["server"], lake["keys"], lake["server"].bucket
    for securable_type, name, privilege in (("catalog", "unity", "USE CATALOG"), ("schema", "unity.default", "USE SCHEMA"),
                                            ("table", "unity.default.trips", "SELECT")):
        uc("PATCH", f"/permissions/{securable_type}/{name}",
           json={"changes": [{"principal": "bob", "add": [privilege]}]}).raise_for_status()
    loaded = connect("bob").tables.load_generic_table(CATALOG, "default", "trips",
                                                      polaris_generic_table_access_delegation="vended-credentials")
    assert loaded.table.format == "parquet"
    (config,) = loaded.storage_access_configs
    assert config.prefix == f"{lake['location_url']}/trips"
    s3 = server.client(access_key=config.config["s3.access-key-id"], secret_key=config.config["s3.secret-access-key"],
                       session_token=config.config["s3.session-token"])
    assert config.config["s3.access-key-id"] != server.access_key
    assert s3.get_object(Bucket=bucket, Key=keys["inside"])["Body"].read() == keys["inside"].encode()
    for key in ("sibling", "other", "outside"):
        assert not allowed(lambda k=key: s3.get_object(Bucket=bucket, Key=keys[k])), key
    assert not allowed(lambda: s3.put_object(Bucket=bucket, Key=keys["inside"], Body=b"overwritten"))
    assert AuditEvent.objects.filter(action="generateTemporaryTableCredentials", principal="bob").count() == 1


def test_the_unity_catalog_sdk_reads_generic_tables(polaris, uc_sdk):
    from unitycatalog.client import TablesApi

    for name, data_format in (("c", "csv"), ("d", "delta"), ("j", "json")):
        polaris.tables.create_generic_table(CATALOG, "default", CreateGenericTableRequest(
            name=name, format=data_format, doc=f"a {data_format} table"))
    listed = uc_sdk.run(TablesApi, "admin", lambda api: api.list_tables("unity", "default"))
    assert [(t.name, t.data_source_format.value, t.table_type.value, t.comment) for t in listed.tables] == [
        ("c", "CSV", "EXTERNAL", "a csv table"), ("d", "DELTA", "EXTERNAL", "a delta table"),
        ("j", "JSON", "EXTERNAL", "a json table")]
    uc_sdk.run(TablesApi, "admin", lambda api: api.delete_table("unity.default.d"))
    assert [i.name for i in polaris.tables.list_generic_tables(CATALOG, "default").identifiers] == ["c", "j"]


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


def test_config_advertises_the_polaris_endpoints(live_server, make_token, bootstrap):
    from apache_polaris.sdk.catalog.api.configuration_api import ConfigurationAPI

    client = ApiClient(Configuration(host=f"{live_server.url}/api/catalog"))
    client.set_default_header("Authorization", f"Bearer {make_token('admin', admin=True)}")
    endpoints = set(ConfigurationAPI(client).get_config(warehouse=CATALOG).endpoints)
    assert {"POST /polaris/v1/{prefix}/namespaces/{namespace}/generic-tables",
            "GET /polaris/v1/{prefix}/applicable-policies",
            "POST /v1/{prefix}/namespaces/{namespace}/register-view",
            "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/notifications"} <= endpoints
