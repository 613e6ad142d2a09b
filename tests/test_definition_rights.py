"""Writing data and changing a table's definition are different rights: wally, who holds MODIFY
(and USE CATALOG / USE SCHEMA / SELECT) but neither ownership nor MANAGE, commits data to a
table, and any commit that changes what the table is (its schema, partitioning, protocol, a
property outside the writer-safe set) is refused with 403 in the protocol's own shape, with
nothing changed: no version ratified, no metadata file written, the table row as it was. The
owner, a holder of MANAGE and a metastore admin may. Every commit path: the legacy Delta commit
API, `/delta/v1` updateTable, Iceberg updateTable (pyiceberg) and transactions."""

import json

import pytest
import requests
from pyiceberg.exceptions import ForbiddenError
from pyiceberg.types import StringType

from catalog.models import AuditEvent, Column, Table
from commits.models import IcebergMetadata
from tests.definition_support import WIDER, delta_state, metadata, stage, tree
from tests.definition_support import legacy, people, v1  # noqa: F401 - the fixtures
from tests.delta_client import SCHEMA, protocol_action
from tests.delta_v1_client import DeltaV1Client, DeltaV1Error
from tests.helpers import UC, grant
from tests.pyiceberg_support import ICEBERG, error_of, file_only, new_table, rows
from tests.pyiceberg_support import connect, storage  # noqa: F401 - the fixtures
from tests.test_sail import recorder, sail, sail_catalog, sail_log, sail_storage, sail_token  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def refused(response, *parts):
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["error_code"] == "PERMISSION_DENIED", body
    assert "MANAGE" in body["message"] and all(part in body["message"] for part in parts), body


def test_a_modify_holder_appends_to_a_delta_table(legacy):
    table_id, commit = legacy
    assert commit("wally", 2).status_code == 200
    # Repeating the definition unchanged, and writer-safe properties, are data commits too.
    current = dict(Table.objects.get(id=table_id).properties)
    response = commit("wally", 3, metadata(table_id, SCHEMA, **{"delta.logRetentionDuration": "interval 7 days"}),
                      schema=SCHEMA["fields"], properties={**current, "delta.logRetentionDuration": "interval 7 days"})
    assert response.status_code == 200, response.text
    assert Table.objects.get(id=table_id).latest_version == 3


@pytest.mark.parametrize("change", ["schema in the request", "property in the request", "hidden schema",
                                    "hidden partitioning", "hidden property", "hidden protocol"])
def test_a_modify_holder_cannot_change_a_delta_tables_definition(legacy, change):
    table_id, commit = legacy
    current = dict(Table.objects.get(id=table_id).properties)
    before = delta_state(table_id)
    widened = metadata(table_id, WIDER)
    partitioned = metadata(table_id, SCHEMA)
    partitioned["metaData"]["partitionColumns"] = ["city"]
    response = {
        "schema in the request": lambda: commit("wally", 2, schema=WIDER["fields"]),
        "property in the request": lambda: commit("wally", 2, properties={**current, "delta.enableChangeDataFeed": "true"}),
        "hidden schema": lambda: commit("wally", 2, widened),
        "hidden partitioning": lambda: commit("wally", 2, partitioned),
        "hidden property": lambda: commit("wally", 2, metadata(table_id, SCHEMA, **{"delta.columnMapping.mode": "name"})),
        "hidden protocol": lambda: commit("wally", 2, protocol_action(
            writerFeatures=["catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck", "deletionVectors",
                            "typeWidening"])),
    }[change]()
    refused(response, "table unity.default.events")
    assert AuditEvent.objects.filter(securable_id=table_id, action="commitDelta", outcome="DENIED",
                                     principal="wally").exists(), "the refusal is audited as the commit it refused"
    after = delta_state(table_id)
    assert after[:5] == before[:5], "nothing ratified, the row unchanged"
    new = set(after[5]) - set(before[5])
    assert len(new) == 1 and "/_staged_commits/" in new.pop(), "storage holds nothing new but the refused proposal"
    assert {url: digest for url, digest in after[5].items() if url in before[5]} == before[5]


@pytest.mark.parametrize("who", ["olivia", "mary", "admin"])
def test_the_owner_a_manage_holder_and_an_admin_change_a_delta_tables_schema(legacy, who):
    table_id, commit = legacy
    assert commit(who, 2, metadata(table_id, WIDER), schema=WIDER["fields"]).status_code == 200
    assert list(Column.objects.filter(table_id=table_id).order_by("position").values_list("name", flat=True)) == [
        "id", "city", "zip"]


def test_manage_on_the_table_alone_is_enough(legacy, live_server, people):
    table_id, commit = legacy
    refused(commit("wally", 2, schema=WIDER["fields"]))
    grant("wally", "table", "unity.default.events", "MANAGE")
    assert commit("wally", 2, schema=WIDER["fields"]).status_code == 200


# -- /delta/v1 updateTable ------------------------------------------------------------------------------
def v1_refused(call, *parts):
    with pytest.raises(DeltaV1Error) as raised:
        call()
    error = raised.value
    assert error.status == 403 and error.type == "PermissionDeniedException", error.body
    assert "MANAGE" in error.body["error"]["message"] and all(p in error.body["error"]["message"] for p in parts)


def test_delta_v1_a_modify_holder_appends_and_cannot_change_the_schema(v1):
    clients, table = v1
    wally, location = clients["wally"], table["location"]
    clients["wally"].append(table, 1, "a.parquet")
    before = delta_state(table["table-uuid"])
    set_columns = {"action": "set-columns", "columns": WIDER}
    v1_refused(lambda: wally.commit(table, wally.stage_commit(location, 2, "b.parquet"), extra=[set_columns]),
               "schema")
    name, size, now = stage(location, 2, metadata(table["table-uuid"], WIDER))
    hidden = {"version": 2, "timestamp": now, "file-name": name, "file-size": size, "file-modification-timestamp": now}
    v1_refused(lambda: wally.commit(table, hidden), "schema")
    v1_refused(lambda: wally.update(table, [{"action": "set-properties", "updates": {"delta.enableChangeDataFeed": "true"}}]),
               "delta.enableChangeDataFeed")
    after = delta_state(table["table-uuid"])
    assert after[:5] == before[:5]
    # The MANAGE holder (and the owner) may.
    clients["mary"].commit(table, clients["mary"].stage_commit(location, 2, "b.parquet"), extra=[set_columns])
    assert [f["name"] for f in clients["olivia"].load("unity", "default", "events")["metadata"]["columns"]["fields"]] \
        == ["id", "city", "zip"]


# -- Iceberg: pyiceberg and transactions ------------------------------------------------------------
@file_only
def test_pyiceberg_a_modify_holder_appends_and_cannot_change_the_schema(connect, people, live_server):
    table = new_table(connect("olivia"))
    wally = connect("wally").load_table(("default", "events"))
    wally.append(rows((1, "2024-01-01T10:00", "a", 1.5)))
    row = Table.objects.get(name="events")
    state = IcebergMetadata.objects.get(table=row)
    before = (state.metadata_location, state.metadata_json, Table.objects.get(id=row.id).properties,
              tree(row.storage_location))
    wally = connect("wally").load_table(("default", "events"))
    with pytest.raises(ForbiddenError, match="MANAGE"):
        with wally.update_schema() as update:
            update.add_column("note", StringType())
    with pytest.raises(ForbiddenError, match="MANAGE"):
        with wally.update_schema() as update:
            update.delete_column("category")
    with pytest.raises(ForbiddenError, match="MANAGE"):
        wally.transaction().set_properties({"format-version-note": "x"}).commit_transaction()
    state = IcebergMetadata.objects.get(table=row)
    assert (state.metadata_location, state.metadata_json, Table.objects.get(id=row.id).properties,
            tree(row.storage_location)) == before, "no metadata file written, nothing changed"
    assert [f.name for f in connect("wally").load_table(("default", "events")).schema().fields] == [
        "id", "ts", "category", "amount"]
    # Writer-safe properties are the writer's.
    wally.transaction().set_properties({"write.target-file-size-bytes": "1048576"}).commit_transaction()
    # The owner and a MANAGE holder may change the schema.
    with table.update_schema() as update:
        update.add_column("note", StringType())
    mary = connect("mary").load_table(("default", "events"))
    with mary.update_schema() as update:
        update.delete_column("category")
    assert [f.name for f in connect("wally").load_table(("default", "events")).schema().fields] == [
        "id", "ts", "amount", "note"]


@file_only
def test_an_iceberg_transaction_with_a_schema_change_is_refused(connect, people, live_server):
    new_table(connect("olivia"))
    loaded = connect("wally").load_table(("default", "events"))
    schema = json.loads(loaded.schema().model_dump_json(by_alias=True))
    schema["schema-id"] = 1
    schema["fields"].append({"id": 5, "name": "note", "type": "string", "required": False})
    row = Table.objects.get(name="events")
    before = IcebergMetadata.objects.get(table=row).metadata_location
    response = requests.post(
        f"{live_server.url}{ICEBERG}/v1/unity/transactions/commit", timeout=30,
        headers={"Authorization": f"Bearer {people['wally']}"},
        json={"table-changes": [{"identifier": {"namespace": ["default"], "name": "events"},
                                 "requirements": [], "updates": [{"action": "add-schema", "schema": schema},
                                                                 {"action": "set-current-schema", "schema-id": -1}]}]})
    assert error_of(response) == (403, "ForbiddenException")
    assert "MANAGE" in response.json()["error"]["message"]
    assert IcebergMetadata.objects.get(table=row).metadata_location == before


def test_duckdb_inserts_with_modify_alone(live_server, people):
    """DuckDB's commits (through /delta/v1) are data commits: a MODIFY holder's INSERTs are ratified."""
    from tests.duckdb_sessions import unity_duckdb

    created = DeltaV1Client(f"{live_server.url}{UC}", people["olivia"]).create_table("unity", "default", "events")
    con = unity_duckdb(live_server.url, people["wally"])
    con.execute("INSERT INTO lake.default.events VALUES (1, 'Paris'), (2, 'Lyon')")
    con.execute("INSERT INTO lake.default.events VALUES (3, 'Nantes')")
    assert sorted(con.execute("SELECT id FROM lake.default.events").fetchall()) == [(1,), (2,), (3,)]
    row = Table.objects.get(id=created["metadata"]["table-uuid"])
    assert row.latest_version == 2 and row.owner == "olivia"


def test_setting_or_removing_the_schema_contract_is_a_definition_change(v1):
    """The schema contract (tests/test_schema_contract.py) is a property outside the writer-safe set."""
    clients, table = v1
    contract = {"ucweb.schema-contract": "additive-only"}
    v1_refused(lambda: clients["wally"].update(table, [{"action": "set-properties", "updates": contract}]),
               "ucweb.schema-contract")
    clients["mary"].update(table, [{"action": "set-properties", "updates": contract}])
    v1_refused(lambda: clients["wally"].update(table, [{"action": "remove-properties",
                                                         "removals": ["ucweb.schema-contract"]}]),
               "ucweb.schema-contract")
    assert Table.objects.get(id=table["table-uuid"]).properties["ucweb.schema-contract"] == "additive-only"


@pytest.mark.spark
@pytest.mark.xdist_group("sail")
def test_sail_with_modify_alone_writes_data_not_the_schema(sail, sail_catalog, sail_token, recorder, sail_log):
    """Sail acting for wally (MODIFY, no MANAGE) on the admin's table: its INSERTs are ratified, a
    mergeSchema append that adds a column is refused (403) and nothing changes. Sail 0.7 does not
    implement ALTER TABLE ... DROP COLUMN (nor ADD COLUMNS, SET TBLPROPERTIES) for catalog-managed
    tables: it refuses them itself and the catalog never sees them."""
    from pyspark.errors import PySparkException
    from pyspark.sql.connect.session import SparkSession

    from catalog.models import Token
    from catalog.services import principals
    from tests.delta_commit_support import COMMITS
    from tests.test_sail import managed

    spark = SparkSession.builder.remote(sail.remote).create()
    try:
        spark.sql("CREATE TABLE unity.default.readings (id INT, value DOUBLE) USING DELTA")
        spark.sql("INSERT INTO unity.default.readings VALUES (1, 0.5)")
        # Sail read its token once; the principal it stands for becomes wally.
        grant("wally", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY")
        wally = principals.ensure_principal(name="wally", admin=False)
        Token.objects.filter(key_hash=principals._digest(sail_token)).update(principal=wally)
        principals.forget_cached_tokens()  # the live server runs in this process

        spark.sql("INSERT INTO unity.default.readings VALUES (2, 1.5)")
        assert managed("readings").latest_version == 2
        recorder.clear()
        wider = spark.createDataFrame([(3, 2.5, "kPa")], "id INT, value DOUBLE, unit STRING")
        with pytest.raises(PySparkException):
            wider.write.format("delta").mode("append").option("mergeSchema", "true").saveAsTable(
                "unity.default.readings")
        (proposal,) = recorder.find("POST", COMMITS)
        assert proposal.status == 403 and "MANAGE" in proposal.response["message"]
        table = managed("readings")
        assert table.latest_version == 2 and [c.name for c in table.columns.order_by("position")] == ["id", "value"]
        with pytest.raises(PySparkException, match="unsupported ALTER TABLE operation"):
            spark.sql("ALTER TABLE unity.default.readings DROP COLUMN value").collect()
        assert len(recorder.find("POST", COMMITS)) == 1
        assert AuditEvent.objects.filter(securable_id=table.id, action="commitDelta", outcome="DENIED",
                                         principal="wally").exists()
    finally:
        spark.stop()
