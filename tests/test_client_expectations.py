"""What each real client expects, with the client that sends it (Sail's own test is in test_sail.py):

- pyiceberg names namespaces and tables `TEST NS`, `new.db`, `ta.ble`: created, listed, loaded,
  written and dropped through the Iceberg API, and shown by the Unity Catalog API and its Python SDK
  under full names with back-quoted parts that round-trip (`unity.`new.db`.`ta.ble``);
- the UC SDK sends a DECIMAL function parameter without precision and scale (decimal(10,0)) and
  function properties "null" (no properties);
- the error table of docs/clients.md is the one in ucweb/errors.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from unitycatalog.client import FunctionsApi, SchemasApi, TablesApi
from unitycatalog.client.exceptions import NotFoundException
from unitycatalog.client.models import (
    ColumnTypeName,
    CreateFunction,
    CreateFunctionRequest,
    FunctionParameterInfo,
    FunctionParameterInfos,
)

from catalog.models import Schema as SchemaRow
from catalog.models import Table
from catalog.names import join_full_name, split_full_name
from ucweb.errors import status_table
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()))
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])


@pytest.fixture
def iceberg(live_server, bootstrap, make_token, storage_root) -> RestCatalog:
    return RestCatalog("ucweb", uri=f"{live_server.url}/api/catalog", warehouse="unity",
                       token=make_token("admin", admin=True))


# -- names that Unity Catalog cannot spell --------------------------------------------------------------
@pytest.mark.parametrize("parts, full_name", [
    (["unity", "default", "t"], "unity.default.t"),
    (["unity", "new.db", "ta.ble"], "unity.`new.db`.`ta.ble`"),
    (["unity", "TEST NS", "my table"], "unity.`TEST NS`.`my table`"),
    (["unity", "a-b%c", "x"], "unity.a-b%c.x"),
])
def test_full_names_round_trip(parts, full_name):
    """Back-quotes are characters of a Unity Catalog name unless they quote a dot or a space:
    `a`.`b`.`c` names catalog `a`, schema `b` and table `c`, back-quotes included."""
    assert split_full_name("`a`.`b`.`c`", 3, what="table") == ["`a`", "`b`", "`c`"]
    assert join_full_name(*parts) == full_name
    assert split_full_name(full_name, 3, what="table") == parts


@pytest.mark.parametrize("bad", ["unity.`new.db.t", "unity.`a.b`c.t", "unity.x`y.z`.t", "unity..t", "`x`.y"])
def test_malformed_quoted_full_names_are_refused(admin_client, bad):
    response = admin_client.get(f"{UC}/tables/{quote(bad, safe='')}")
    assert response.status_code == 400 and response.json()["error_code"] == "INVALID_PARAMETER_VALUE"


def test_pyiceberg_names_with_spaces_and_dots(iceberg, uc_sdk, admin_client, storage_root):
    iceberg.create_namespace(("TEST NS",), properties={"comment": "spaced"})
    iceberg.create_namespace(("new.db",))
    assert {("TEST NS",), ("new.db",)} <= set(iceberg.list_namespaces())
    assert iceberg.load_namespace_properties(("TEST NS",))["comment"] == "spaced"

    dotted = iceberg.create_table(("new.db", "ta.ble"), schema=SCHEMA)
    dotted.append(pa.Table.from_pylist([{"id": 1, "name": "one"}, {"id": 2, "name": "two"}], schema=ARROW))
    spaced = iceberg.create_table(("TEST NS", "my table"), schema=SCHEMA)
    assert iceberg.list_tables(("new.db",)) == [("new.db", "ta.ble")]
    assert iceberg.list_tables(("TEST NS",)) == [("TEST NS", "my table")]
    loaded = iceberg.load_table(("new.db", "ta.ble"))
    assert sorted(loaded.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    assert iceberg.table_exists(("TEST NS", "my table")) and not iceberg.table_exists(("TEST NS", "ta.ble"))
    # The table's files are where the catalog put them: under its managed folder, by id.
    row = Table.objects.get(schema__name="new.db", name="ta.ble")
    assert Path(storage_root, "tables", str(row.id)).is_dir()

    # The Unity Catalog API lists them, and finds them under full names that round-trip.
    listed = admin_client.get(f"{UC}/tables?catalog_name=unity&schema_name=new.db").json()["tables"]
    assert [(t["catalog_name"], t["schema_name"], t["name"]) for t in listed] == [("unity", "new.db", "ta.ble")]
    assert [c["name"] for c in listed[0]["columns"]] == ["id", "name"]
    assert join_full_name("unity", "new.db", "ta.ble") == "unity.`new.db`.`ta.ble`"
    for full_name in ("unity.`new.db`.`ta.ble`", quote("unity.`new.db`.`ta.ble`", safe="")):
        got = admin_client.get(f"{UC}/tables/{full_name}")
        assert got.status_code == 200, got.content
        assert got.json()["table_id"] == str(row.id)
    schemas = admin_client.get(f"{UC}/schemas?catalog_name=unity").json()["schemas"]
    assert {(s["name"], s["full_name"]) for s in schemas} >= {("TEST NS", "unity.`TEST NS`"),
                                                             ("new.db", "unity.`new.db`")}

    # ... and so does the UC Python SDK, with the full names it was given.
    sdk_tables = uc_sdk.run(TablesApi, "admin", lambda api: api.list_tables("unity", "TEST NS"))
    assert [(t.schema_name, t.name) for t in sdk_tables.tables] == [("TEST NS", "my table")]
    full_name = join_full_name(sdk_tables.tables[0].catalog_name, sdk_tables.tables[0].schema_name,
                               sdk_tables.tables[0].name)
    fetched = uc_sdk.run(TablesApi, "admin", lambda api: api.get_table(full_name))
    assert fetched.table_id == str(spaced.metadata.table_uuid)
    schema = uc_sdk.run(SchemasApi, "admin", lambda api: api.get_schema("unity.`new.db`"))
    assert schema.name == "new.db" and schema.full_name == "unity.`new.db`"

    # The UC API itself still refuses such names: only Iceberg clients use them.
    refused = admin_client.post(f"{UC}/schemas", {"name": "other.db", "catalog_name": "unity"}, format="json")
    assert refused.status_code == 400

    iceberg.drop_table(("new.db", "ta.ble"))
    iceberg.drop_table(("TEST NS", "my table"))
    with pytest.raises(NoSuchTableError):
        iceberg.load_table(("new.db", "ta.ble"))
    iceberg.drop_namespace(("new.db",))
    iceberg.drop_namespace(("TEST NS",))
    with pytest.raises(NoSuchNamespaceError):
        iceberg.load_namespace_properties(("new.db",))
    assert not SchemaRow.objects.filter(name__in=["new.db", "TEST NS"]).exists()
    with pytest.raises(NotFoundException):
        uc_sdk.run(SchemasApi, "admin", lambda api: api.get_schema("unity.`new.db`"))


@pytest.mark.parametrize("name", ["a/b", "a`b", "a\tb", " ", "x\x00"])
def test_iceberg_names_still_refused(iceberg, admin_client, name):
    response = admin_client.post("/api/catalog/v1/unity/namespaces", {"namespace": [name]}, format="json")
    assert response.status_code == 400, response.content
    assert not SchemaRow.objects.filter(catalog__name="unity").exclude(name="default").exists()


# -- function parameters and properties, as the UC SDK sends them -------------------------------------------
def _function(name: str, parameter: FunctionParameterInfo, **extra) -> CreateFunctionRequest:
    return CreateFunctionRequest(function_info=CreateFunction(
        name=name, catalog_name="unity", schema_name="default",
        input_params=FunctionParameterInfos(parameters=[parameter]),
        data_type=ColumnTypeName.DECIMAL, full_data_type="decimal", routine_body="SQL",
        routine_definition="amount", parameter_style="S", is_deterministic=True, sql_data_access="CONTAINS_SQL",
        is_null_call=False, security_type="DEFINER", specific_name=name, **extra))


def _decimal(**extra) -> FunctionParameterInfo:
    return FunctionParameterInfo(
        name="amount", type_text="decimal", type_name=ColumnTypeName.DECIMAL, position=0,
        type_json=json.dumps({"name": "amount", "type": "decimal", "nullable": True, "metadata": {}}), **extra)


def test_decimal_parameter_defaults_to_10_0_and_null_properties_are_none(uc_sdk, bootstrap, storage_root):
    created = uc_sdk.run(FunctionsApi, "admin", lambda api: api.create_function(
        _function("plain", _decimal(), properties="null")))
    parameter = created.input_params.parameters[0]
    assert (parameter.type_precision, parameter.type_scale) == (10, 0)
    assert created.properties is None
    fetched = uc_sdk.run(FunctionsApi, "admin", lambda api: api.get_function("unity.default.plain"))
    assert (fetched.input_params.parameters[0].type_precision, fetched.properties) == (10, None)

    scaled = uc_sdk.run(FunctionsApi, "admin", lambda api: api.create_function(
        _function("scaled", _decimal(type_precision=12), properties=json.dumps({"k": "v"}))))
    assert (scaled.input_params.parameters[0].type_precision, scaled.input_params.parameters[0].type_scale) == (12, 0)
    assert json.loads(scaled.properties) == {"k": "v"}


def test_decimal_scale_above_precision_is_refused(admin_client, storage_root):
    body = _function("bad", _decimal(type_precision=4, type_scale=6)).to_dict()
    response = admin_client.post(f"{UC}/functions", body, format="json")
    assert response.status_code == 400 and "type_scale" in response.json()["message"]


# -- the README's error table ------------------------------------------------------------------------------
def test_readme_error_table_is_the_error_module():
    readme = (Path(__file__).resolve().parent.parent / "docs" / "clients.md").read_text()
    for row in status_table():
        line = (f"| `{row['error_code']}` ({row['error']}) | {row['uc']} | {row['delta']} | {row['iceberg']} "
                f"`{row['iceberg_type']}` |")
        assert line in readme, line
