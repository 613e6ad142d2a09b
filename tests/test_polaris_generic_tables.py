"""Generic tables of the Polaris-native API (/api/catalog/polaris/v1), driven by the Apache
Polaris Python client against a live server, with pyiceberg and the Unity Catalog API (and its
SDK) looking at the same namespace: their lifecycle, names shared with Iceberg tables but not
endpoints, bad input, the envelope of unauthenticated and unknown routes, and credentials vended
on request, scoped to the table on SeaweedFS with STS (tests/seaweedfs_sts.py)."""

from __future__ import annotations

import pytest
import requests
from apache_polaris.sdk.catalog.models import CreateGenericTableRequest
from pyiceberg.exceptions import NoSuchTableError, TableAlreadyExistsError

from catalog.choices import Privilege
from catalog.models import AuditEvent, Grant, Table
from catalog.models import Schema as UCSchema
from tests.polaris_support import CATALOG, ICEBERG_SCHEMA, error_of
from tests.polaris_support import connect, iceberg, polaris, uc  # noqa: F401 - the fixtures
from tests.seaweedfs_sts import allowed
from tests.seaweedfs_sts import sts_s3_server  # noqa: F401 - the module-scoped server fixture
from tests.test_credentials_vending import lake  # noqa: F401 - the fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("polaris")]


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
    assert refused.action == "dropGenericTable"  # a refused drop is audited under the drop's own name


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


# -- vended credentials for generic tables ----------------------------------------------------------
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
