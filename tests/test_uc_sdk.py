"""The namespace API driven by the official Unity Catalog Python SDK against a live server."""

import pytest
from unitycatalog.client import CatalogsApi, GrantsApi, MetastoresApi, SchemasApi, TablesApi
from unitycatalog.client.exceptions import BadRequestException, ForbiddenException, NotFoundException
from unitycatalog.client.models import (
    ColumnInfo,
    ColumnTypeName,
    CreateCatalog,
    CreateSchema,
    CreateTable,
    DataSourceFormat,
    PermissionsChange,
    Privilege,
    SecurableType,
    TableType,
    UpdateCatalog,
    UpdatePermissions,
    UpdateSchema,
)

from catalog.models import AuditEvent, Catalog, Schema, Table
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sdk(bootstrap, uc_sdk):
    return uc_sdk


@pytest.fixture
def trips(sdk):
    """Catalog shop, schema shop.sales and the external table shop.sales.trips, as the admin made them."""
    sdk.run(CatalogsApi, "admin", lambda api: api.create_catalog(CreateCatalog(name="shop")))
    sdk.run(SchemasApi, "admin", lambda api: api.create_schema(CreateSchema(name="sales", catalog_name="shop")))
    sdk.run(TablesApi, "admin", lambda api: api.create_table(external_table()))


def external_table(name="trips", schema="sales", catalog="shop"):
    return CreateTable(
        name=name,
        catalog_name=catalog,
        schema_name=schema,
        table_type=TableType.EXTERNAL,
        data_source_format=DataSourceFormat.PARQUET,
        storage_location=f"file:///tmp/ucweb-tests/{catalog}/{schema}/{name}",
        columns=[
            ColumnInfo(name="id", type_name=ColumnTypeName.LONG, type_text="bigint", position=0, nullable=False),
            ColumnInfo(
                name="amount", type_name=ColumnTypeName.DECIMAL, type_text="decimal(10,2)",
                type_precision=10, type_scale=2, position=1, comment="in euros",
                type_json='{"name":"amount","type":"decimal(10,2)","nullable":true,"metadata":{}}',
            ),
            ColumnInfo(name="day", type_name=ColumnTypeName.DATE, type_text="date", position=2, partition_index=0),
        ],
        comment="raw trips",
        properties={"owner.team": "sales"},
    )


def test_catalog_lifecycle(sdk):
    created = sdk.run(CatalogsApi, "admin", lambda api: api.create_catalog(
        CreateCatalog(name="shop", comment="the shop", properties={"k": "v"})))
    assert created.name == "shop" and created.owner == "admin" and created.properties == {"k": "v"}
    assert created.id and created.created_at > 0

    listed = sdk.run(CatalogsApi, "admin", lambda api: api.list_catalogs())
    assert {c.name for c in listed.catalogs} == {"unity", "shop"}

    updated = sdk.run(CatalogsApi, "admin", lambda api: api.update_catalog(
        "shop", UpdateCatalog(comment="renamed", new_name="store")))
    assert updated.name == "store" and updated.comment == "renamed" and updated.updated_by == "admin"

    with pytest.raises(NotFoundException) as missing:
        sdk.run(CatalogsApi, "admin", lambda api: api.get_catalog("shop"))
    assert "CATALOG_DOES_NOT_EXIST" in missing.value.body

    with pytest.raises(BadRequestException) as duplicate:
        sdk.run(CatalogsApi, "admin", lambda api: api.create_catalog(CreateCatalog(name="unity")))
    assert "CATALOG_ALREADY_EXISTS" in duplicate.value.body

    sdk.run(CatalogsApi, "admin", lambda api: api.delete_catalog("store"))
    assert not Catalog.objects.filter(name="store").exists()
    assert AuditEvent.objects.filter(action="deleteCatalog", securable_name="store").exists()


def test_catalog_pagination(sdk):
    for index in range(7):
        sdk.run(CatalogsApi, "admin", lambda api, i=index: api.create_catalog(CreateCatalog(name=f"c{i}")))
    seen, token = [], None
    while True:
        page = sdk.run(CatalogsApi, "admin", lambda api: api.list_catalogs(max_results=3, page_token=token))
        assert len(page.catalogs) <= 3
        seen += [c.name for c in page.catalogs]
        token = page.next_page_token
        if not token:
            break
    assert sorted(seen) == sorted([f"c{i}" for i in range(7)] + ["unity"])
    assert len(seen) == len(set(seen))


def test_schema_and_table_lifecycle(sdk):
    sdk.run(CatalogsApi, "admin", lambda api: api.create_catalog(CreateCatalog(name="shop")))
    schema = sdk.run(SchemasApi, "admin", lambda api: api.create_schema(
        CreateSchema(name="sales", catalog_name="shop", comment="sales data")))
    assert schema.full_name == "shop.sales" and schema.schema_id

    table = sdk.run(TablesApi, "admin", lambda api: api.create_table(external_table()))
    assert table.table_type == TableType.EXTERNAL and table.data_source_format == DataSourceFormat.PARQUET
    assert [c.name for c in table.columns] == ["id", "amount", "day"]
    amount = table.columns[1]
    assert (amount.type_precision, amount.type_scale, amount.comment) == (10, 2, "in euros")
    assert amount.type_json.startswith('{"name":"amount"')
    assert table.columns[0].nullable is False and table.columns[2].partition_index == 0

    fetched = sdk.run(TablesApi, "admin", lambda api: api.get_table("shop.sales.trips"))
    assert fetched.table_id == table.table_id and fetched.properties == {"owner.team": "sales"}

    listed = sdk.run(TablesApi, "admin", lambda api: api.list_tables(catalog_name="shop", schema_name="sales"))
    assert [t.name for t in listed.tables] == ["trips"]

    with pytest.raises(BadRequestException) as duplicate:
        sdk.run(TablesApi, "admin", lambda api: api.create_table(external_table()))
    assert "TABLE_ALREADY_EXISTS" in duplicate.value.body

    with pytest.raises(BadRequestException) as not_empty:
        sdk.run(SchemasApi, "admin", lambda api: api.delete_schema("shop.sales"))
    assert Schema.objects.filter(name="sales").exists() and "SCHEMA_NOT_EMPTY" in not_empty.value.body

    renamed = sdk.run(SchemasApi, "admin", lambda api: api.update_schema(
        "shop.sales", UpdateSchema(new_name="revenue", comment="renamed")))
    assert renamed.full_name == "shop.revenue"
    assert sdk.run(TablesApi, "admin", lambda api: api.get_table("shop.revenue.trips")).name == "trips"

    sdk.run(TablesApi, "admin", lambda api: api.delete_table("shop.revenue.trips"))
    with pytest.raises(NotFoundException) as gone:
        sdk.run(TablesApi, "admin", lambda api: api.get_table("shop.revenue.trips"))
    assert "TABLE_DOES_NOT_EXIST" in gone.value.body

    sdk.run(TablesApi, "admin", lambda api: api.create_table(external_table(schema="revenue")))
    sdk.run(SchemasApi, "admin", lambda api: api.delete_schema("shop.revenue", force=True))
    assert not Table.objects.filter(schema__catalog__name="shop").exists()


def test_catalog_delete_needs_force_when_not_empty(sdk, trips):
    with pytest.raises(BadRequestException):
        sdk.run(CatalogsApi, "admin", lambda api: api.delete_catalog("shop"))
    assert Catalog.objects.filter(name="shop").exists()
    sdk.run(CatalogsApi, "admin", lambda api: api.delete_catalog("shop", force=True))
    assert not Catalog.objects.filter(name="shop").exists() and not Table.objects.exists()


def test_percent_encoded_full_names(sdk, trips, admin_client):
    response = admin_client.get(f"{UC}/tables/shop%2Esales%2Etrips")
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "trips"
    assert admin_client.get(f"{UC}/schemas/shop%252Esales").json()["full_name"] == "shop.sales"


def _change_grants(sdk, securable_type, name, *, principal: str, add=(), remove=()):
    """The admin's PATCH /permissions through the SDK: one change for `principal`."""
    return sdk.run(GrantsApi, "admin", lambda api: api.update(securable_type, name, UpdatePermissions(
        changes=[PermissionsChange(principal=principal, add=list(add), remove=list(remove))])))


def test_grants_through_the_sdk(sdk, trips):

    # What bob may not see answers as missing (no existence oracle).
    with pytest.raises(NotFoundException):
        sdk.run(TablesApi, "bob", lambda api: api.get_table("shop.sales.trips"))

    def grant(securable_type, name, privileges):
        return _change_grants(sdk, securable_type, name, principal="bob", add=privileges)

    grant(SecurableType.CATALOG, "shop", [Privilege.USE_CATALOG])
    grant(SecurableType.SCHEMA, "shop.sales", [Privilege.USE_SCHEMA])
    # What bob may not see answers as missing (no existence oracle).
    with pytest.raises(NotFoundException):
        sdk.run(TablesApi, "bob", lambda api: api.get_table("shop.sales.trips"))
    result = grant(SecurableType.TABLE, "shop.sales.trips", [Privilege.SELECT])
    assert [(a.principal, a.privileges) for a in result.privilege_assignments] == [("bob", [Privilege.SELECT])]
    assert sdk.run(TablesApi, "bob", lambda api: api.get_table("shop.sales.trips")).name == "trips"

    permissions = sdk.run(GrantsApi, "admin", lambda api: api.get(SecurableType.CATALOG, "shop"))
    assert permissions.privilege_assignments[0].privileges == [Privilege.USE_CATALOG]

    _change_grants(sdk, SecurableType.TABLE, "shop.sales.trips", principal="bob", remove=[Privilege.SELECT])
    # What bob may not see answers as missing (no existence oracle).
    with pytest.raises(NotFoundException):
        sdk.run(TablesApi, "bob", lambda api: api.get_table("shop.sales.trips"))


def test_metastore_summary(sdk):
    summary = sdk.run(MetastoresApi, "admin", lambda api: api.summary())
    assert summary.metastore_id


def test_grants_to_a_group_through_the_sdk(sdk, trips):
    """The SDK's PATCH /permissions names a group as `principal`; a member of a group nested in it
    reads the table, and loses it when taken out of the group."""
    from catalog.models import Principal
    from catalog.services import groups, principals

    admin = Principal.objects.get(name="admin")
    principals.ensure_principal(name="bob")
    groups.create_group(caller=admin, name="analysts")
    groups.create_group(caller=admin, name="interns")
    groups.update_members(caller=admin, name="analysts", add_groups=["interns"])
    groups.update_members(caller=admin, name="interns", add_principals=["bob"])

    def grant(securable_type, name, privileges):
        return _change_grants(sdk, securable_type, name, principal="analysts", add=privileges)

    grant(SecurableType.CATALOG, "shop", [Privilege.USE_CATALOG])
    grant(SecurableType.SCHEMA, "shop.sales", [Privilege.USE_SCHEMA])
    result = grant(SecurableType.TABLE, "shop.sales.trips", [Privilege.SELECT])
    assert [(a.principal, a.privileges) for a in result.privilege_assignments] == [("analysts", [Privilege.SELECT])]
    assert sdk.run(TablesApi, "bob", lambda api: api.get_table("shop.sales.trips")).name == "trips"
    groups.update_members(caller=admin, name="interns", remove_principals=["bob"])
    with pytest.raises(NotFoundException):
        sdk.run(TablesApi, "bob", lambda api: api.get_table("shop.sales.trips"))
    with pytest.raises(NotFoundException):  # a grantee that is neither a principal nor a group
        sdk.run(GrantsApi, "admin", lambda api: api.update(SecurableType.TABLE, "shop.sales.trips", UpdatePermissions(
            changes=[PermissionsChange(principal="no-such-group", add=[Privilege.SELECT], remove=[])])))
