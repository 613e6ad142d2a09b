"""The schema contract `ucweb.schema-contract = additive-only` (catalog.schema_contract) on Delta
tables: once a table's owner sets it, every commit of the table, the owner's and a metastore
admin's included, may add nullable columns and nothing that breaks a reader of the old schema (a
drop, a rename, a type change, promotions included, a tightened nullability, a required new
column). The schemas compared are the table's before and after the commit (the request's columns
and the staged file's metaData), so a change hidden in a commit that also adds files is caught. A
refusal is a 400 in the protocol's own shape (the commit is not ratified) and changes nothing.
Shown with Sail (mergeSchema), DuckDB (INSERTs) and both Delta APIs; Iceberg in
tests/test_schema_contract_iceberg.py.

Bad input: a contract set in the same commit as a change it forbids, a value that is no contract,
a contract on a table the catalog cannot hold to it (an external Delta table, a view, a generic
table, a schema): 400, nothing changed."""

from __future__ import annotations

import json

import pytest
from prometheus_client import REGISTRY

from catalog.models import AuditEvent, Table
from catalog.schema_contract import PROPERTY
from commits.formats.schema_evolution import delta_breaking_changes
from tests.definition_support import WIDER, delta_state, metadata, stage
from tests.definition_support import legacy, people, v1  # noqa: F401 - the fixtures
from tests.delta_client import SCHEMA, log_name, write_version_zero
from tests.delta_v1_client import PROTOCOL, DeltaV1Client, DeltaV1Error
from tests.duckdb_sessions import unity_duckdb
from tests.helpers import UC
from tests.pyiceberg_support import ICEBERG
from tests.test_sail import recorder, sail, sail_catalog, sail_log, sail_storage, sail_token  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)
ADDITIVE = {PROPERTY: "additive-only"}


def field(name, kind="string", nullable=True, **metadata_):
    return {"name": name, "type": kind, "nullable": nullable, "metadata": metadata_}


def struct(*fields):
    return {"type": "struct", "fields": list(fields)}

# -- the rule, as pure functions --------------------------------------------------------------------
ID, CITY = field("id", "long", False), field("city")


@pytest.mark.parametrize("after", [
    [ID, CITY, field("zip")],                                                    # a nullable column
    [CITY, ID],                                                                  # reordered
    [field("id", "long", True), CITY],                                           # NOT NULL relaxed
    [ID, field("city", comment="where")],                                        # a comment
])
def test_delta_changes_that_break_no_reader(after):
    assert delta_breaking_changes([ID, CITY], after) == []


@pytest.mark.parametrize("after, breaks", [
    ([ID], ["drops column city"]),
    ([field("id", "integer", False), CITY], ["changes the type of id from long to integer"]),
    ([ID, field("city", nullable=False)], ["makes column city required (NOT NULL)"]),
    ([ID, CITY, field("zip", nullable=False)],
     ["adds column zip as required (NOT NULL); a new column must be nullable"]),
    ([ID, field("town")], ["drops column city"]),  # without column mapping a rename is a drop and an add
    ([ID, field("City")], ["renames column city to City"]),  # the same column to Spark, not to every reader
    ([ID, field("city", struct(field("zip")))], ["changes the type of city from string to a struct"]),
])
def test_delta_changes_that_break_readers(after, breaks):
    assert delta_breaking_changes([ID, CITY], after) == breaks


def test_delta_nested_and_mapped_columns():
    address = field("address", struct(field("city"), field("zip")))
    assert delta_breaking_changes([address], [field("address", struct(field("city"), field("zip"), field("n")))]) == []
    assert delta_breaking_changes([address], [field("address", struct(field("zip")))]) == [
        "drops column address.city"]
    tags = field("tags", {"type": "array", "elementType": "string", "containsNull": True})
    assert delta_breaking_changes([tags], [field("tags", {"type": "array", "elementType": "string",
                                                          "containsNull": False})]) == [
        "makes the element of tags required (NOT NULL)"]
    scores = field("scores", {"type": "map", "keyType": "string", "valueType": "integer", "valueContainsNull": True})
    assert delta_breaking_changes([scores], [field("scores", {"type": "map", "keyType": "string",
                                                              "valueType": "long", "valueContainsNull": True})]) == [
        "changes the type of scores.value from integer to long"]
    # With column mapping, the id says which column is which: a rename is a rename.
    mapped = {"delta.columnMapping.id": 2, "delta.columnMapping.physicalName": "col-2"}
    assert delta_breaking_changes([field("city", **mapped)], [field("town", **mapped)]) == [
        "renames column city to town"]


# -- the legacy Delta commit API (seed 000) ---------------------------------------------------------
def contract_refusal(response, *parts):
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error_code"] == "INVALID_PARAMETER_VALUE", body
    assert all(part in body["message"] for part in parts), body["message"]


def attach(table_id, commit, version, who="olivia", value="additive-only", schema=SCHEMA):
    """`who` sets the contract in a commit of `version`, as a Delta writer does: the request's
    properties and the staged metaData's configuration."""
    properties = {**Table.objects.get(id=table_id).properties, PROPERTY: value}
    return commit(who, version, metadata(table_id, schema, **{PROPERTY: value}), properties=properties,
                  schema=schema["fields"])


def unchanged(table_id, before):
    """Nothing ratified, the row as it was; in storage only the refused proposals are new."""
    after = delta_state(table_id)
    assert after[:5] == before[:5]
    assert all("/_staged_commits/" in url for url in set(after[5]) - set(before[5]))
    assert {url: digest for url, digest in after[5].items() if url in before[5]} == before[5]


def test_the_owner_sets_the_contract_and_adds_a_nullable_column(legacy):
    table_id, commit = legacy
    assert attach(table_id, commit, 2).status_code == 200
    assert Table.objects.get(id=table_id).properties[PROPERTY] == "additive-only"
    response = commit("olivia", 3, metadata(table_id, WIDER, **ADDITIVE), schema=WIDER["fields"])
    assert response.status_code == 200, response.text
    assert commit("wally", 4).status_code == 200, "data commits need nothing more"
    row = Table.objects.get(id=table_id)
    assert row.latest_version == 4 and [c.name for c in row.columns.order_by("position")] == ["id", "city", "zip"]


BREAKING = {
    "drop": (struct(ID), "drops column city"),
    "type": (struct(field("id", "integer", False), CITY), "changes the type of id from long to integer"),
    "nullability": (struct(ID, field("city", nullable=False)), "makes column city required"),
    "required column": (struct(ID, CITY, field("zip", nullable=False)), "adds column zip as required"),
    "rename": (struct(ID, field("town")), "drops column city"),
}


@pytest.mark.parametrize("who", ["olivia", "admin"])
@pytest.mark.parametrize("case", sorted(BREAKING))
def test_the_contract_refuses_breaking_changes_to_everyone(legacy, who, case):
    table_id, commit = legacy
    assert attach(table_id, commit, 2).status_code == 200
    schema, words = BREAKING[case]
    before = delta_state(table_id)
    response = commit(who, 3, metadata(table_id, schema, **ADDITIVE), schema=schema["fields"])
    contract_refusal(response, f"{PROPERTY}=additive-only", words, "unity.default.events")
    unchanged(table_id, before)
    assert AuditEvent.objects.filter(securable_id=table_id, action="commitDelta", outcome="FAILED",
                                     principal=who).exists(), "the refusal is audited as the commit it refused"


def refused_count(table_format):
    return REGISTRY.get_sample_value("ucweb_commits_total",
                                     {"format": table_format, "outcome": "refused_by_contract"}) or 0


def test_a_schema_change_hidden_in_a_data_commit(legacy):
    """The request says nothing of the schema; the staged file's metaData drops a column."""
    table_id, commit = legacy
    assert attach(table_id, commit, 2).status_code == 200
    before, counted = delta_state(table_id), refused_count("delta")
    contract_refusal(commit("olivia", 3, metadata(table_id, struct(ID), **ADDITIVE)), "drops column city")
    assert refused_count("delta") == counted + 1, "counted in ucweb_commits_total"
    # The request's own columns are compared too, whatever the staged file says.
    contract_refusal(commit("admin", 3, metadata(table_id, SCHEMA, **ADDITIVE), schema=[ID]), "drops column city")
    unchanged(table_id, before)
    assert commit("olivia", 3).status_code == 200


def test_removing_the_contract_is_the_owners_and_comes_first(legacy):
    table_id, commit = legacy
    assert attach(table_id, commit, 2).status_code == 200
    properties = {k: v for k, v in Table.objects.get(id=table_id).properties.items() if k != PROPERTY}
    before = delta_state(table_id)
    # A writer may neither drop the contract (a definition change) nor change the schema.
    assert commit("wally", 3, properties=properties).status_code == 403
    # Removing it in the same commit as a drop: the contract held before the commit applies.
    contract_refusal(commit("olivia", 3, metadata(table_id, struct(ID)), properties=properties, schema=[ID]),
                     "drops column city", "remove it first")
    unchanged(table_id, before)
    assert commit("olivia", 3, properties=properties).status_code == 200
    assert commit("olivia", 4, metadata(table_id, struct(ID)), schema=[ID]).status_code == 200
    assert [c.name for c in Table.objects.get(id=table_id).columns.all()] == ["id"]


def test_a_contract_that_forbids_what_its_own_commit_does(legacy):
    table_id, commit = legacy
    before = delta_state(table_id)
    contract_refusal(attach(table_id, commit, 2, schema=struct(ID)), "that this commit sets", "drops column city",
                     "separate commits")
    contract_refusal(attach(table_id, commit, 2, value="append-only"), "'append-only' is not a known schema contract")
    unchanged(table_id, before)
    assert PROPERTY not in Table.objects.get(id=table_id).properties


# -- /delta/v1 updateTable --------------------------------------------------------------------------
def v1_refusal(call, *parts):
    with pytest.raises(DeltaV1Error) as raised:
        call()
    error = raised.value
    assert error.status == 400 and error.type == "InvalidParameterValueException", error.body
    assert all(part in error.body["error"]["message"] for part in parts), error.body


def test_delta_v1_the_contract_on_every_update(v1):
    clients, table = v1
    olivia, location = clients["olivia"], table["location"]
    olivia.update(table, [{"action": "set-properties", "updates": ADDITIVE}])
    assert olivia.load("unity", "default", "events")["metadata"]["properties"][PROPERTY] == "additive-only"
    before = delta_state(table["table-uuid"])
    narrower = {"action": "set-columns", "columns": struct(ID)}
    v1_refusal(lambda: olivia.commit(table, olivia.stage_commit(location, 1, "a.parquet"), extra=[narrower]),
               "drops column city")
    name, size, now = stage(location, 1, metadata(table["table-uuid"], struct(ID, field("city", "integer"))))
    hidden = {"version": 1, "timestamp": now, "file-name": name, "file-size": size, "file-modification-timestamp": now}
    v1_refusal(lambda: clients["admin"].commit(table, hidden), "changes the type of city from string to integer")
    unchanged(table["table-uuid"], before)
    # Attaching another value, or the contract with the drop it forbids: 400 too.
    v1_refusal(lambda: olivia.update(table, [{"action": "set-properties", "updates": {PROPERTY: "frozen"}}]),
               "not a known schema contract")
    # Additive changes pass, the owner's and (with MANAGE) mary's.
    wider = {"action": "set-columns", "columns": WIDER}
    olivia.commit(table, olivia.stage_commit(location, 1, "a.parquet"), extra=[wider])
    clients["wally"].append(table, 2, "b.parquet")
    assert [f["name"] for f in olivia.load("unity", "default", "events")["metadata"]["columns"]["fields"]] == [
        "id", "city", "zip"]


def test_only_tables_whose_commits_the_catalog_ratifies_take_a_contract(live_server, people, admin_client, tmp_path):
    """An external Delta table's log changes without the catalog, a view has no commits, a generic
    table or a schema has no schema of the catalog's: 400 on every path, nothing created."""
    def uc(kind, name, **extra):
        return admin_client.post(f"{UC}/tables", {"name": name, "catalog_name": "unity", "schema_name": "default",
                                                  "table_type": kind, "properties": ADDITIVE, **extra}, format="json")

    response = uc("EXTERNAL", "outside", data_source_format="DELTA", storage_location=(tmp_path / "o").as_uri())
    assert response.status_code == 400 and "external table unity.default.outside" in response.json()["message"]
    response = uc("VIEW", "recent", view_definition="SELECT 1")
    assert response.status_code == 400 and "cannot be set on view" in response.json()["message"]
    assert not Table.objects.filter(name__in=["outside", "recent"]).exists()
    # An external Delta table that exists: /delta/v1 set-properties.
    assert uc("EXTERNAL", "outside", data_source_format="DELTA", storage_location=(tmp_path / "o").as_uri(),
              properties={}).status_code == 200
    outside = {"name": "outside", "table-uuid": str(Table.objects.get(name="outside").id)}
    v1_refusal(lambda: DeltaV1Client(f"{live_server.url}{UC}", people["admin"]).update(
        outside, [{"action": "set-properties", "updates": ADDITIVE}]), "cannot be set on table unity.default.outside")
    assert PROPERTY not in Table.objects.get(name="outside").properties
    # A generic table, a schema, a namespace.
    response = admin_client.post("/api/catalog/polaris/v1/unity/namespaces/default/generic-tables",
                                 {"name": "lance", "format": "lance", "properties": ADDITIVE}, format="json")
    assert response.status_code == 400 and "generic table" in response.json()["error"]["message"]
    response = admin_client.patch(f"{UC}/schemas/unity.default", {"properties": ADDITIVE}, format="json")
    assert response.status_code == 400 and "schema default" in response.json()["message"]
    response = admin_client.post(f"{ICEBERG}/v1/unity/namespaces/default/properties", {"updates": ADDITIVE},
                                 format="json")
    assert response.status_code == 400 and "namespace default" in response.json()["error"]["message"]
    assert not Table.objects.filter(name="lance").exists()


def test_a_managed_delta_table_created_with_an_unknown_contract(live_server, people):
    client = DeltaV1Client(f"{live_server.url}{UC}", people["olivia"])
    staging = client.call("POST", "catalogs/unity/schemas/default/staging-tables", {"name": "events"})
    table_id, location = staging["table-id"], staging["location"]
    now = write_version_zero(location, table_id)
    body = {"name": "events", "table-type": "MANAGED", "location": location, "columns": SCHEMA,
            "properties": {"io.unitycatalog.tableId": table_id, "delta.enableInCommitTimestamps": "true",
                           "delta.enableDeletionVectors": "true", PROPERTY: "additive"},
            "protocol": PROTOCOL, "last-commit-timestamp-ms": now}
    with pytest.raises(DeltaV1Error) as raised:
        client.call("POST", "catalogs/unity/schemas/default/tables", body)
    assert raised.value.status == 400, raised.value.body
    assert "'additive' is not a known schema contract" in raised.value.body["error"]["message"]
    assert not Table.objects.filter(name="events").exists()


def test_duckdb_inserts_into_a_delta_table_under_the_contract(v1, live_server, people):
    """DuckDB cannot change a Delta table's schema through Unity Catalog (ALTER TABLE is "Not
    implemented" in its unity_catalog extension); its INSERTs are data commits, ratified under the
    contract."""
    clients, table = v1
    clients["olivia"].update(table, [{"action": "set-properties", "updates": ADDITIVE}])
    con = unity_duckdb(live_server.url, people["wally"])
    con.execute("INSERT INTO lake.default.events VALUES (1, 'Paris'), (2, 'Lyon')")
    with pytest.raises(Exception, match="Not implemented"):
        con.execute("ALTER TABLE lake.default.events DROP COLUMN city")
    con.execute("INSERT INTO lake.default.events VALUES (3, 'Nantes')")
    assert sorted(con.execute("SELECT id FROM lake.default.events").fetchall()) == [(1,), (2,), (3,)]
    assert Table.objects.get(id=table["table-uuid"]).latest_version == 2


# -- Sail ---------------------------------------------------------------------------------------------
@pytest.mark.spark
@pytest.mark.xdist_group("sail")
def test_sail_merge_schema_under_the_contract(sail_session, recorder, sail_log):
    """Sail sets the contract with CREATE TABLE ... TBLPROPERTIES (its ALTER TABLE SET TBLPROPERTIES
    is not implemented for catalog-managed tables). A mergeSchema append that adds a nullable
    column is ratified; one that widens a column (Delta type widening, int to bigint) is refused
    to the metastore admin Sail acts for; ALTER TABLE ... DROP COLUMN, which Sail 0.7 does not
    implement, never reaches the catalog."""
    from pyspark.errors import PySparkException

    from tests.delta_commit_support import COMMITS
    from tests.test_sail import local_path, managed

    spark = sail_session
    spark.sql("CREATE TABLE unity.default.readings (id INT, value DOUBLE) USING DELTA "
              f"TBLPROPERTIES ('{PROPERTY}'='additive-only', 'delta.enableTypeWidening'='true')")
    spark.sql("INSERT INTO unity.default.readings VALUES (1, 0.5)")
    wider = spark.createDataFrame([(2, 1.5, "kPa")], "id INT, value DOUBLE, unit STRING")
    wider.write.format("delta").mode("append").option("mergeSchema", "true").saveAsTable("unity.default.readings")
    table = managed("readings")
    assert table.properties[PROPERTY] == "additive-only" and table.latest_version == 2
    assert [c.name for c in table.columns.order_by("position")] == ["id", "value", "unit"]

    recorder.clear()
    widened = spark.createDataFrame([(3, 2.5, "kPa")], "id BIGINT, value DOUBLE, unit STRING")
    with pytest.raises(PySparkException, match="400"):  # Sail does not show the catalog's message
        widened.write.format("delta").mode("append").option("mergeSchema", "true").saveAsTable("unity.default.readings")
    (proposal,) = recorder.find("POST", COMMITS)
    assert proposal.status == 400 and "changes the type of id from integer to long" in json.dumps(proposal.response)
    table = managed("readings")
    assert table.latest_version == 2 and [(c.name, c.type_name) for c in table.columns.order_by("position")] == [
        ("id", "INT"), ("value", "DOUBLE"), ("unit", "STRING")]
    assert not (local_path(table.storage_location) / "_delta_log" / log_name(3)).exists()

    recorder.clear()
    with pytest.raises(PySparkException, match="unsupported ALTER TABLE operation"):
        spark.sql("ALTER TABLE unity.default.readings DROP COLUMN unit").collect()
    assert not recorder.find("POST", COMMITS)
    assert sorted(tuple(r) for r in spark.sql("SELECT id, unit FROM unity.default.readings").collect()) == [
        (1, None), (2, "kPa")]


@pytest.fixture
def sail_session(sail, sail_catalog, recorder):
    """A Spark Connect session on the session's Sail server (tests/test_sail.py), acting for the
    metastore admin (this module's `connect` is pyiceberg's, so test_sail's `spark` is not used)."""
    from pyspark.sql.connect.session import SparkSession

    session = SparkSession.builder.remote(sail.remote).create()
    yield session
    session.stop()
