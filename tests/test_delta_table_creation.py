"""Creating catalog-managed Delta tables (seed 000): staging, creation from a real 0.json, the
version 0 that is not catalog-managed, and who may stage and finalize."""

import json
import uuid

import pytest
from unitycatalog.client.exceptions import BadRequestException, NotFoundException

from catalog.models import StagingTable, Table
from tests.delta_client import metadata_action, protocol_action
from tests.delta_commit_support import state
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)


def test_staging_then_create_reads_version_zero(delta, storage_root):
    staging = delta.stage("unity", "default", "events")
    assert staging.staging_location.startswith(storage_root.as_uri())
    assert staging.staging_location.endswith(f"/tables/{staging.id}")
    delta.write_version_zero(staging.staging_location, staging.id)
    table = delta.finalize("unity", "default", "events", staging.staging_location)
    assert table.table_id == staging.id
    assert table.table_type == "MANAGED" and table.data_source_format == "DELTA"
    assert [(c.name, c.type_name, c.type_text, c.nullable) for c in table.columns] == [
        ("id", "LONG", "bigint", False), ("city", "STRING", "string", True)]
    assert state(table.table_id) == (0, 0, 0)
    response = delta.get_commits(table.table_id, table.storage_location)
    assert response.commits == [] and response.latest_table_version == 0
    assert StagingTable.objects.get(id=staging.id).finalized_at is not None


def test_staging_table_can_be_finalized_once(delta):
    staging = delta.stage("unity", "default", "events")
    delta.write_version_zero(staging.staging_location, staging.id)
    delta.finalize("unity", "default", "events", staging.staging_location)
    with pytest.raises(BadRequestException):
        delta.finalize("unity", "default", "events", staging.staging_location)
    assert Table.objects.filter(name="events").count() == 1


def test_staging_errors(delta, admin_client, make_client):
    response = admin_client.post(f"{UC}/staging-tables", {"name": "t", "catalog_name": "nope", "schema_name": "default"}, format="json")
    assert response.status_code == 404 and response.json()["error_code"] == "CATALOG_DOES_NOT_EXIST"
    response = admin_client.post(f"{UC}/staging-tables", {"name": "t", "catalog_name": "unity", "schema_name": "nope"}, format="json")
    assert response.status_code == 404 and response.json()["error_code"] == "SCHEMA_DOES_NOT_EXIST"
    delta.create_table("unity", "default", "events")
    response = admin_client.post(f"{UC}/staging-tables", {"name": "events", "catalog_name": "unity", "schema_name": "default"}, format="json")
    assert response.status_code == 400 and response.json()["error_code"] == "TABLE_ALREADY_EXISTS"
    # mallory holds nothing: catalog unity does not exist for her (no existence oracle) ...
    response = make_client("mallory").post(f"{UC}/staging-tables", {"name": "t", "catalog_name": "unity", "schema_name": "default"}, format="json")
    assert response.status_code == 404 and response.json()["error_code"] == "CATALOG_DOES_NOT_EXIST"
    # ... and once she sees the schema, creating in it still needs CREATE TABLE.
    admin_client.patch(f"{UC}/permissions/catalog/unity", {"changes": [
        {"principal": "mallory", "add": ["USE CATALOG", "USE SCHEMA"]}]}, format="json")
    response = make_client("mallory").post(f"{UC}/staging-tables", {"name": "t", "catalog_name": "unity", "schema_name": "default"}, format="json")
    assert response.status_code == 403 and response.json()["error_code"] == "PERMISSION_DENIED"
    assert StagingTable.objects.count() == 1


BAD_VERSION_ZERO = {
    "no catalogManaged": (lambda tid: [protocol_action(readerFeatures=["vacuumProtocolCheck"], writerFeatures=["inCommitTimestamp", "vacuumProtocolCheck"]), metadata_action(tid)], "catalogManaged"),
    "no inCommitTimestamp": (lambda tid: [protocol_action(writerFeatures=["catalogManaged", "vacuumProtocolCheck"]), metadata_action(tid)], "inCommitTimestamp"),
    "no vacuumProtocolCheck": (lambda tid: [protocol_action(readerFeatures=["catalogManaged"], writerFeatures=["catalogManaged", "inCommitTimestamp"]), metadata_action(tid)], "vacuumProtocolCheck"),
    "reader 2": (lambda tid: [protocol_action(minReaderVersion=2), metadata_action(tid)], "minReaderVersion"),
    "writer 6": (lambda tid: [protocol_action(minWriterVersion=6), metadata_action(tid)], "minWriterVersion"),
    "other table id": (lambda tid: [protocol_action(), metadata_action(str(uuid.uuid4()))], "io.unitycatalog.tableId"),
    "no protocol": (lambda tid: [metadata_action(tid)], "protocol"),
}


@pytest.mark.parametrize("case", sorted(BAD_VERSION_ZERO))
def test_create_rejects_a_version_zero_that_is_not_catalog_managed(delta, case):
    build, named = BAD_VERSION_ZERO[case]
    staging = delta.stage("unity", "default", "events")
    delta.write_version_zero(staging.staging_location, staging.id, actions=build(staging.id))
    with pytest.raises(BadRequestException) as error:
        delta.finalize("unity", "default", "events", staging.staging_location)
    body = json.loads(error.value.body)
    assert body["error_code"] == "INVALID_PARAMETER_VALUE" and named in body["message"]
    assert not Table.objects.filter(name="events").exists()
    assert StagingTable.objects.get(id=staging.id).finalized_at is None


def test_create_without_version_zero_or_staging(delta, admin_client):
    staging = delta.stage("unity", "default", "events")
    with pytest.raises(BadRequestException) as error:
        delta.finalize("unity", "default", "events", staging.staging_location)
    assert "Not a Delta table" in json.loads(error.value.body)["message"]
    with pytest.raises(NotFoundException) as missing:
        delta.finalize("unity", "default", "events", staging.staging_location + "-elsewhere")
    assert json.loads(missing.value.body)["error_code"] == "TABLE_DOES_NOT_EXIST"
    assert not Table.objects.exists()


def test_only_the_creator_of_a_staging_table_finalizes_it(delta, make_client):
    from catalog.services import grants
    from catalog.models import Catalog, Principal

    staging = delta.stage("unity", "default", "events")
    delta.write_version_zero(staging.staging_location, staging.id)
    client = make_client("bob")
    catalog = Catalog.objects.get(name="unity")
    schema = catalog.schemas.get(name="default")
    admin = Principal.objects.get(name="admin")
    grants.update_assignments(securable_type="catalog", securable=catalog, caller=admin, access=None,
                              changes=[{"principal": "bob", "add": ["USE CATALOG"], "remove": []}])
    grants.update_assignments(securable_type="schema", securable=schema, caller=admin, access=None,
                              changes=[{"principal": "bob", "add": ["USE SCHEMA", "CREATE TABLE"], "remove": []}])
    response = client.post(f"{UC}/tables", {
        "name": "events", "catalog_name": "unity", "schema_name": "default", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": staging.staging_location, "columns": []}, format="json")
    assert response.status_code == 403, response.content
    assert not Table.objects.exists()


def test_create_reads_no_version_zero_through_a_link_to_another_tables_log(delta):
    """B's `_delta_log` is a link to A's: finalizing B reads nothing through it (and names
    nothing of A), and B is not created."""
    import os

    from catalog.storage import parse

    first = delta.stage("unity", "default", "first")
    delta.write_version_zero(first.staging_location, first.id)
    second = delta.stage("unity", "default", "second")
    os.makedirs(parse(second.staging_location).path, exist_ok=True)
    os.symlink(os.path.join(parse(first.staging_location).path, "_delta_log"),
               os.path.join(parse(second.staging_location).path, "_delta_log"))
    with pytest.raises(BadRequestException) as error:
        delta.finalize("unity", "default", "second", second.staging_location)
    message = json.loads(error.value.body)["message"]
    assert "symbolic link" in message and str(first.id) not in message
    assert not Table.objects.filter(name="second").exists()
