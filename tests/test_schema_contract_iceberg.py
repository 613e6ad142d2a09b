"""The schema contract `ucweb.schema-contract = additive-only` on Iceberg tables (the rule and the
Delta side: tests/test_schema_contract.py): every commit path, updateTable, multi-table
transactions and Polaris notifications, refuses a schema change that breaks a reader of the old
schema with 400 BadRequestException, to the owner and a metastore admin too, and writes no
metadata file. Fields are matched by id, so a rename is a rename, and a new field may not take the
id of one the table had. Shown with pyiceberg (update_schema, and a transaction that hides a drop
in an append) and DuckDB 1.5 (ALTER TABLE ... ADD / DROP / RENAME COLUMN)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
import requests
from pyiceberg.exceptions import BadRequestError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import (
    DoubleType, FloatType, IntegerType, ListType, LongType, MapType, NestedField, StringType, StructType,
)
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from catalog.models import AuditEvent, Table
from catalog.schema_contract import PROPERTY
from commits.formats.schema_evolution import iceberg_breaking_changes
from commits.models import IcebergMetadata
from tests.definition_support import people, tree  # noqa: F401 - people: the fixture
from tests.duckdb_sessions import iceberg_duckdb
from tests.pyiceberg_support import ICEBERG, error_of, file_only
from tests.pyiceberg_support import connect, storage  # noqa: F401 - the fixtures

pytestmark = pytest.mark.django_db(transaction=True)
ADDITIVE = {PROPERTY: "additive-only"}


# -- the rule, as pure functions --------------------------------------------------------------------
def iceberg_metadata(schema: Schema, last_column_id: int | None = None):
    """Table metadata with `schema` as it is (its field ids kept)."""
    metadata = new_table_metadata(schema=schema, partition_spec=UNPARTITIONED_PARTITION_SPEC,
                                  sort_order=UNSORTED_SORT_ORDER, location="file:///t", properties={})
    schema = schema.model_copy(update={"schema_id": metadata.current_schema_id})
    last_column_id = last_column_id or schema.highest_field_id
    return metadata.model_copy(update={"schemas": [schema], "last_column_id": last_column_id})


BASE = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "qty", IntegerType(), required=False),
              NestedField(3, "tags", ListType(4, StringType(), element_required=False), required=False))


@pytest.mark.parametrize("fields, breaks", [
    ([*BASE.fields, NestedField(5, "note", StringType(), required=False)], []),
    ([NestedField(1, "id", LongType(), required=False), *BASE.fields[1:]], []),
    (BASE.fields[::-1], []),
    ([BASE.fields[0], BASE.fields[2]], ["drops column qty"]),
    ([BASE.fields[0], NestedField(2, "quantity", IntegerType(), required=False), BASE.fields[2]],
     ["renames column qty to quantity"]),
    ([BASE.fields[0], NestedField(2, "qty", LongType(), required=False), BASE.fields[2]],
     ["changes the type of qty from int to long"]),
    ([BASE.fields[0], NestedField(2, "qty", IntegerType(), required=True), BASE.fields[2]],
     ["makes column qty required (NOT NULL)"]),
    ([*BASE.fields[:2], NestedField(3, "tags", ListType(4, StringType(), element_required=True), required=False)],
     ["makes the element of tags required (NOT NULL)"]),
    ([*BASE.fields, NestedField(5, "note", StringType(), required=True)],
     ["adds column note as required (NOT NULL); a new column must be nullable"]),
    ([BASE.fields[0], BASE.fields[2], NestedField(2, "again", IntegerType(), required=False)],
     ["renames column qty to again"]),  # moved and renamed: the same field id
])
def test_iceberg_changes(fields, breaks):
    before = iceberg_metadata(BASE)
    after = iceberg_metadata(Schema(*fields))
    assert iceberg_breaking_changes(before, after) == breaks


def test_iceberg_a_new_column_reusing_a_dropped_id():
    """qty (id 2) was dropped before the contract; a new column may not take its id again."""
    before = iceberg_metadata(Schema(BASE.fields[0], BASE.fields[2]), last_column_id=4)
    after = iceberg_metadata(Schema(BASE.fields[0], BASE.fields[2], NestedField(2, "qty2", StringType())))
    assert iceberg_breaking_changes(before, after) == [
        "adds column qty2 with field id 2, which an earlier column had (the table's last column id is 4)"]
    nested = Schema(NestedField(1, "a", StructType(NestedField(2, "b", StringType(), required=False)), required=False))
    wider = Schema(NestedField(1, "a", StructType(NestedField(2, "b", StringType(), required=False),
                                                  NestedField(3, "c", MapType(4, StringType(), 5, DoubleType())),
                                                  ), required=False))
    assert iceberg_breaking_changes(iceberg_metadata(nested), iceberg_metadata(wider)) == []


# -- pyiceberg, transactions, DuckDB, notifications ------------------------------------------------
ICE_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "qty", IntegerType(), required=False),
    NestedField(3, "price", FloatType(), required=False),
    NestedField(4, "category", StringType(), required=False),
    NestedField(5, "address", StructType(NestedField(6, "city", StringType(), required=False)), required=False),
)


def ice_state(name="orders"):
    row = Table.objects.get(name=name)
    state = IcebergMetadata.objects.get(table=row)
    return state.metadata_location, state.metadata_json, row.properties, tree(row.storage_location)


def metadata_files(name="orders"):
    return sorted(url for url in tree(Table.objects.get(name=name).storage_location) if url.endswith(".metadata.json"))


@pytest.fixture
def orders(connect, people):
    """olivia's Iceberg table under the contract, set when she created it."""
    return connect("olivia").create_table(("default", "orders"), schema=ICE_SCHEMA, properties=ADDITIVE)


def refused_by_contract(call, *parts):
    with pytest.raises(BadRequestError) as raised:
        call()
    assert f"{PROPERTY}=additive-only" in str(raised.value) and all(p in str(raised.value) for p in parts), raised.value


@file_only
@pytest.mark.parametrize("who", ["olivia", "admin"])
def test_pyiceberg_update_schema_under_the_contract(connect, orders, who):
    table = connect(who).load_table(("default", "orders"))
    before = ice_state()

    def change(apply, incompatible=False):
        def call():
            with table.update_schema(allow_incompatible_changes=incompatible) as update:
                apply(update)
        return call

    refused_by_contract(change(lambda u: u.delete_column("category")), "drops column category")
    refused_by_contract(change(lambda u: u.delete_column(("address", "city"))), "drops column address.city")
    refused_by_contract(change(lambda u: u.rename_column("category", "kind")), "renames column category to kind")
    refused_by_contract(change(lambda u: u.update_column("qty", LongType())),
                        "changes the type of qty from int to long")
    refused_by_contract(change(lambda u: u.update_column("price", DoubleType())), "from float to double")
    refused_by_contract(change(lambda u: u.update_column("category", required=True), True), "makes column category")
    refused_by_contract(change(lambda u: u.add_column("must", StringType(), required=True), True),
                        "adds column must as required")
    assert ice_state() == before, "no metadata file written, nothing changed"
    # Additive changes: new optional columns, at the top and inside a struct; a relaxed NOT NULL.
    with table.update_schema() as update:
        update.add_column("note", StringType(), doc="free text")
        update.add_column(("address", "zip"), StringType())
        update.update_column("id", required=False)
    schema = connect("wally").load_table(("default", "orders")).schema()
    assert [f.name for f in schema.fields] == ["id", "qty", "price", "category", "address", "note"]
    assert [f.name for f in schema.find_field("address").field_type.fields] == ["city", "zip"]


@file_only
def test_pyiceberg_a_schema_change_hidden_in_an_append(connect, orders):
    """One transaction that drops a column and appends: the schema the commit leads to is compared,
    whatever else it does. The client wrote its data files and manifests before it asked; the
    catalog writes no metadata file and the table stays where it was."""
    table = connect("olivia").load_table(("default", "orders"))
    before, files = ice_state(), metadata_files()
    transaction = table.transaction()
    transaction.update_schema().delete_column("price").commit()
    transaction.append(pa.Table.from_pylist([{"id": 1, "qty": 2}], schema=pa.schema([
        pa.field("id", pa.int64(), nullable=False), pa.field("qty", pa.int32())])))
    refused_by_contract(transaction.commit_transaction, "drops column price")
    assert ice_state()[:3] == before[:3] and metadata_files() == files
    assert connect("olivia").load_table(("default", "orders")).current_snapshot() is None


@file_only
def test_pyiceberg_bad_contracts(connect, people):
    olivia = connect("olivia")
    with pytest.raises(BadRequestError, match="'additive_only' is not a known schema contract"):
        olivia.create_table(("default", "orders"), schema=ICE_SCHEMA, properties={PROPERTY: "additive_only"})
    assert not Table.objects.filter(name="orders").exists()
    table = olivia.create_table(("default", "orders"), schema=ICE_SCHEMA)
    before = ice_state()
    with pytest.raises(BadRequestError, match="not a known schema contract"):
        table.transaction().set_properties({PROPERTY: "none"}).commit_transaction()
    transaction = table.transaction()
    transaction.set_properties(ADDITIVE)
    transaction.update_schema().delete_column("qty").commit()
    with pytest.raises(BadRequestError, match="forbids what the same commit does: it drops column qty"):
        transaction.commit_transaction()
    assert ice_state() == before
    # A writer may not set it (a definition change); the owner may, in a commit of its own.
    with pytest.raises(Exception, match="MANAGE"):
        connect("wally").load_table(("default", "orders")).transaction().set_properties(ADDITIVE).commit_transaction()
    table.transaction().set_properties(ADDITIVE).commit_transaction()
    assert connect("wally").load_table(("default", "orders")).properties[PROPERTY] == "additive-only"
    # A view has no commits of a table: nothing to hold to a contract.
    sql = SQLViewRepresentation(type="sql", sql="SELECT id FROM orders", dialect="spark")
    version = ViewVersion(version_id=1, schema_id=0, summary={"engine-name": "pyiceberg"},
                          default_namespace=["default"], representations=[sql])
    with pytest.raises(BadRequestError, match="cannot be set on view recent"):
        olivia.create_view(("default", "recent"), Schema(NestedField(1, "id", LongType())), version,
                           properties=ADDITIVE)
    assert not Table.objects.filter(name="recent").exists()


@file_only
def test_a_transaction_over_two_tables_is_refused_whole(connect, orders, people, live_server):
    connect("olivia").create_table(("default", "free"), schema=ICE_SCHEMA)
    states = ice_state("orders"), ice_state("free")

    def dropping(name):
        loaded = connect("olivia").load_table(("default", name))
        schema = json.loads(loaded.schema().model_dump_json(by_alias=True))
        schema["schema-id"], schema["fields"] = 1, schema["fields"][:-1]
        return {"identifier": {"namespace": ["default"], "name": name}, "requirements": [],
                "updates": [{"action": "add-schema", "schema": schema},
                            {"action": "set-current-schema", "schema-id": -1}]}

    response = requests.post(f"{live_server.url}{ICEBERG}/v1/unity/transactions/commit", timeout=30,
                             headers={"Authorization": f"Bearer {people['olivia']}"},
                             json={"table-changes": [dropping("free"), dropping("orders")]})
    assert error_of(response) == (400, "BadRequestException")
    assert "drops column address" in response.json()["error"]["message"]
    assert (ice_state("orders"), ice_state("free")) == states


@file_only
def test_duckdb_alters_an_iceberg_table_under_the_contract(connect, people, live_server):
    """DuckDB 1.5's ALTER TABLE commits through /transactions/commit: ADD COLUMN passes, DROP and
    RENAME COLUMN are refused (DuckDB reports the 400 without the catalog's message), INSERTs pass."""
    connect("olivia").create_table(("default", "orders"), schema=ICE_SCHEMA, properties=ADDITIVE,
                                   sort_order=UNSORTED_SORT_ORDER)
    con = iceberg_duckdb(live_server.url + ICEBERG, people["olivia"])
    con.execute("INSERT INTO lake.default.orders (id, qty, category) VALUES (1, 2, 'a')")
    con.execute("ALTER TABLE lake.default.orders ADD COLUMN note VARCHAR")
    before = ice_state()
    for statement in ("ALTER TABLE lake.default.orders DROP COLUMN category",
                      "ALTER TABLE lake.default.orders RENAME COLUMN category TO kind"):
        with pytest.raises(Exception, match="400"):
            con.execute(statement)
    assert ice_state() == before
    con.execute("INSERT INTO lake.default.orders (id, note) VALUES (2, 'x')")
    assert sorted(con.execute("SELECT id, category, note FROM lake.default.orders").fetchall()) == [
        (1, "a", None), (2, None, "x")]
    assert [f.name for f in connect("olivia").load_table(("default", "orders")).schema().fields][-1] == "note"
    assert AuditEvent.objects.filter(securable_id=Table.objects.get(name="orders").id, outcome="FAILED",
                                     principal="olivia").count() >= 2


@file_only
def test_a_notification_that_breaks_the_contract(connect, people, live_server, tmp_path):
    """Another system's table, followed by Polaris notifications, with the contract in its own
    metadata: the notification of a version that drops a column is refused (400), the catalog
    keeps the version it had."""
    admin = connect("admin")
    written = admin.create_table(("default", "source"), schema=ICE_SCHEMA, location=(tmp_path / "ext").as_uri(),
                                 properties=ADDITIVE)
    first = written.metadata_location
    data = json.loads(IcebergMetadata.objects.get(table__name="source").metadata_json)
    schema = {**data["schemas"][0], "schema-id": 1, "fields": data["schemas"][0]["fields"][:-1]}
    dropped = {**data, "schemas": [*data["schemas"], schema], "current-schema-id": 1}
    second = first.replace("00000-", "00001-")
    (tmp_path / "ext" / "metadata" / second.rsplit("/", 1)[1]).write_text(json.dumps(dropped))
    renamed = {**data, "properties": {PROPERTY: "additive-onyl"}}
    bogus = first.replace("00000-", "00002-")
    (tmp_path / "ext" / "metadata" / bogus.rsplit("/", 1)[1]).write_text(json.dumps(renamed))
    table_uuid = data["table-uuid"]
    admin.drop_table(("default", "source"))

    def notify(kind, name, timestamp, location):
        return requests.post(
            f"{live_server.url}{ICEBERG}/v1/unity/namespaces/default/tables/{name}/notifications", timeout=30,
            headers={"Authorization": f"Bearer {people['admin']}"},
            json={"notification-type": kind, "payload": {"table-name": name, "timestamp": timestamp,
                                                         "table-uuid": table_uuid, "metadata-location": location}})

    assert notify("CREATE", "bogus", 100, bogus).status_code == 400
    assert not Table.objects.filter(name="bogus").exists()
    assert notify("CREATE", "clicks", 100, first).status_code == 204
    before = ice_state("clicks")
    response = notify("UPDATE", "clicks", 200, second)
    assert error_of(response) == (400, "BadRequestException") and "drops column address" in response.text
    assert ice_state("clicks") == before
