"""Every error row of the UC Delta REST API (`/delta/v1`) for the calls that change a table:
updateTable, createTable and staging (status, error type, nothing changed)."""

import uuid

import pytest

from catalog.models import StagingTable, Table
from tests.delta_v1_client import PROTOCOL
from tests.delta_v1_support import TABLES, V1, error_of, state
from tests.delta_v1_support import table, v1  # noqa: F401 - the fixtures
from tests.helpers import audited_successes, grant

pytestmark = pytest.mark.django_db(transaction=True)


def commit_entry(version, file_name=None, **changes):
    entry = {"version": version, "timestamp": 1704067200000 + version,
             "file-name": file_name or f"{version:020d}.{uuid.uuid4()}.json", "file-size": 1024,
             "file-modification-timestamp": 1704067200000 + version}
    entry.update(changes)
    return entry


# -- every error row of updateTable ----------------------------------------------------------------------
def _bad_updates(table_id):
    uuid_ok = [{"type": "assert-table-uuid", "uuid": table_id}]

    def req(updates, requirements=uuid_ok):
        return {"requirements": requirements, "updates": updates}

    add = {"action": "add-commit", "commit": commit_entry(1)}
    return {
        "requirements not an array": ({"requirements": "x", "updates": [add]}, 400, "BadRequestException"),
        "unknown action": (req([{"action": "drop-everything"}]), 400, "BadRequestException"),
        "unknown requirement": (req([add], uuid_ok + [{"type": "assert-nothing"}]), 400, "BadRequestException"),
        "no updates": (req([]), 400, "InvalidParameterValueException"),
        "no assert-table-uuid": (req([add], []), 400, "InvalidParameterValueException"),
        "two add-commits": (req([add, add]), 400, "InvalidParameterValueException"),
        "two uuid requirements": (req([add], uuid_ok * 2), 400, "InvalidParameterValueException"),
        "version 0": (req([{**add, "commit": commit_entry(0)}]), 400, "InvalidParameterValueException"),
        "negative timestamp": (req([{**add, "commit": commit_entry(1, timestamp=-5)}]), 400,
                               "InvalidParameterValueException"),
        "size 0": (req([{**add, "commit": commit_entry(1, **{"file-size": 0})}]), 400,
                   "InvalidParameterValueException"),
        "file name is a path": (req([{**add, "commit": commit_entry(1, "../../00000000000000000001.x.json")}]),
                                400, "InvalidParameterValueException"),
        "missing file name": (req([{**add, "commit": {k: v for k, v in commit_entry(1).items() if k != "file-name"}}]),
                              400, "InvalidParameterValueException"),
        "gap": (req([{**add, "commit": commit_entry(3)}]), 400, "InvalidParameterValueException"),
        "backfill above latest": (req([{"action": "set-latest-backfilled-version", "latest-published-version": 5}]),
                                  400, "InvalidParameterValueException"),
        "set and remove one key": (req([add, {"action": "set-properties", "updates": {"a": "1"}},
                                        {"action": "remove-properties", "removals": ["a"]}]), 400,
                                   "InvalidParameterValueException"),
        "server-derived key": (req([add, {"action": "set-properties", "updates": {"delta.minReaderVersion": "2"}}]),
                               400, "InvalidParameterValueException"),
        "properties not strings": (req([add, {"action": "set-properties", "updates": {"a": 1}}]), 400,
                                   "InvalidParameterValueException"),
        "columns without a commit": (req([{"action": "set-columns", "columns": {"type": "struct", "fields": []}}]),
                                     400, "InvalidParameterValueException"),
        "columns not a struct": (req([add, {"action": "set-columns", "columns": {"type": "array"}}]), 400,
                                 "InvalidParameterValueException"),
        "protocol without catalogManaged": (req([add, {"action": "set-protocol", "protocol": {
            **PROTOCOL, "reader-features": ["vacuumProtocolCheck"], "writer-features": ["inCommitTimestamp"]}}]),
            400, "InvalidParameterValueException"),
        "removing the table id": (req([add, {"action": "remove-properties", "removals": ["io.unitycatalog.tableId"]}]),
                                  400, "InvalidParameterValueException"),
        "unknown domain": (req([add, {"action": "set-domain-metadata", "updates": {"x.y": {}}}]), 400,
                           "InvalidParameterValueException"),
        "uniform outside the table": (req([{**add, "uniform": {"iceberg": {
            "metadata-location": "file:///elsewhere/m.json", "converted-delta-version": 1,
            "converted-delta-timestamp": 1}}}]), 400, "InvalidParameterValueException"),
        "snapshot version on a managed table": (req([{"action": "update-metadata-snapshot-version",
                                                      "last-commit-version": 1, "last-commit-timestamp-ms": 1}]),
                                                400, "InvalidParameterValueException"),
        "other table uuid": (req([add], [{"type": "assert-table-uuid", "uuid": str(uuid.uuid4())}]), 409,
                             "UpdateRequirementConflictException"),
        "stale etag": (req([add], uuid_ok + [{"type": "assert-etag", "etag": "old"}]), 409,
                       "UpdateRequirementConflictException"),
        "body is a list": ([add], 400, "InvalidParameterValueException"),
    }


@pytest.mark.parametrize("case", sorted(_bad_updates("t")))
def test_update_errors_change_nothing(table, admin_client, case):
    body, status, kind = _bad_updates(table["table-uuid"])[case]
    before = (state(table["table-uuid"]), audited_successes("updateDeltaTable"))
    response = admin_client.post(f"{TABLES}/events", body, format="json")
    assert response.status_code == status, response.content
    assert error_of(response) == kind
    assert (state(table["table-uuid"]), audited_successes("updateDeltaTable")) == before


def test_update_needs_modify_and_a_table(table, make_client, admin_client):
    body = {"requirements": [{"type": "assert-table-uuid", "uuid": table["table-uuid"]}],
            "updates": [{"action": "add-commit", "commit": commit_entry(1)}]}
    reader = make_client("reader")
    grant("reader", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT")
    before = state(table["table-uuid"])
    response = reader.post(f"{TABLES}/events", body, format="json")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    assert reader.get(f"{TABLES}/events").status_code == 200
    response = admin_client.post(f"{TABLES}/nope", body, format="json")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    response = make_client(None).post(f"{TABLES}/events", body, format="json")
    assert response.status_code == 401 and error_of(response) == "NotAuthorizedException"
    response = admin_client.post(f"{TABLES}/events", "{not json", content_type="application/json")
    assert response.status_code == 400 and error_of(response) == "BadRequestException"
    assert state(table["table-uuid"]) == before


# -- creation errors -------------------------------------------------------------------------------
def _create_body(staging, **changes):
    body = {"name": "fresh", "table-type": "MANAGED", "location": staging["location"],
            "columns": {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]},
            "properties": {"io.unitycatalog.tableId": staging["table-id"], "delta.enableInCommitTimestamps": "true"},
            "protocol": PROTOCOL, "last-commit-timestamp-ms": 1704067400000}
    body.update(changes)
    return body


def test_create_table_errors(v1, table, admin_client, make_client):
    staging = v1.call("POST", "catalogs/unity/schemas/default/staging-tables", {"name": "fresh"})
    cases = {
        "missing columns": (_create_body(staging, columns=None), 400, "InvalidParameterValueException"),
        "bad table type": (_create_body(staging, **{"table-type": "VIEW"}), 400, "InvalidParameterValueException"),
        "no protocol": (_create_body(staging, protocol=None), 400, "InvalidParameterValueException"),
        "no timestamp": (_create_body(staging, **{"last-commit-timestamp-ms": None}), 400,
                         "InvalidParameterValueException"),
        "no catalogManaged": (_create_body(staging, protocol={**PROTOCOL, "reader-features": []}), 400,
                              "InvalidParameterValueException"),
        "other table id": (_create_body(staging, properties={"io.unitycatalog.tableId": str(uuid.uuid4()),
                                                             "delta.enableInCommitTimestamps": "true"}),
                           400, "InvalidParameterValueException"),
        "partition column unknown": (_create_body(staging, **{"partition-columns": ["nope"]}), 400,
                                     "InvalidParameterValueException"),
        "uniform without the property": (_create_body(staging, uniform={"iceberg": {
            "metadata-location": staging["location"] + "/metadata/0.json", "converted-delta-version": 0,
            "converted-delta-timestamp": 1}}), 400, "InvalidParameterValueException"),
        "no staging table there": (_create_body(staging, location=staging["location"] + "-x"), 404,
                                   "NoSuchTableException"),
    }
    for case, (body, status, kind) in cases.items():
        response = admin_client.post(TABLES, body, format="json")
        assert response.status_code == status, (case, response.content)
        assert error_of(response) == kind, case
    # Staging names are not reserved: uniqueness is enforced at createTable.
    second = v1.call("POST", "catalogs/unity/schemas/default/staging-tables", {"name": "dup"})
    v1.create_table("unity", "default", "dup")
    response = admin_client.post(TABLES, _create_body(second, name="dup"), format="json")
    assert response.status_code == 409 and error_of(response) == "AlreadyExistsException"
    response = admin_client.post(TABLES, "{oops", content_type="application/json")
    assert response.status_code == 400 and error_of(response) == "BadRequestException"
    response = admin_client.post(f"{V1}/catalogs/unity/schemas/nope/tables", _create_body(staging), format="json")
    assert response.status_code == 404 and error_of(response) == "NoSuchSchemaException"
    writer = make_client("writer")
    grant("writer", "catalog", "unity", "USE CATALOG", "USE SCHEMA")
    response = writer.post(TABLES, _create_body(staging), format="json")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    assert not Table.objects.filter(name="fresh").exists()
    assert StagingTable.objects.get(id=staging["table-id"]).finalized_at is None
    # Version 0 was never written: declared columns make the table, version 0 is checked later.
    assert admin_client.post(TABLES, _create_body(staging), format="json").status_code == 200
    response = admin_client.post(TABLES, _create_body(staging, name="again"), format="json")
    assert response.status_code == 400 and error_of(response) == "InvalidParameterValueException"


def test_staging_errors(v1, table, admin_client, make_client):
    staging_url = f"{V1}/catalogs/unity/schemas/default/staging-tables"
    count = StagingTable.objects.count()
    for body, url, status, kind in [
        ({}, staging_url, 400, "InvalidParameterValueException"),
        ({"name": "events"}, staging_url, 409, "AlreadyExistsException"),
        ({"name": "x"}, f"{V1}/catalogs/unity/schemas/nope/staging-tables", 404, "NoSuchSchemaException"),
        ({"name": "x"}, f"{V1}/catalogs/nope/schemas/default/staging-tables", 404, "NoSuchCatalogException"),
    ]:
        response = admin_client.post(url, body, format="json")
        assert response.status_code == status and error_of(response) == kind, body
    response = admin_client.post(staging_url, "{oops", content_type="application/json")
    assert response.status_code == 400 and error_of(response) == "BadRequestException"
    # A catalog the caller may not see answers as a missing one (no existence oracle).
    response = make_client("mallory").post(staging_url, {"name": "x"}, format="json")
    assert response.status_code == 404 and error_of(response) == "NoSuchCatalogException"
    assert StagingTable.objects.count() == count
    staging = v1.call("POST", "catalogs/unity/schemas/default/staging-tables", {"name": "x"})
    response = make_client("mallory").get(f"{V1}/staging-tables/{staging['table-id']}/credentials")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    for unknown in (str(uuid.uuid4()), table["table-uuid"]):  # a finalized staging table is a table now
        response = admin_client.get(f"{V1}/staging-tables/{unknown}/credentials")
        assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
