"""The UC Delta REST API (`/delta/v1`) around a table: credentials for a table and for a path,
commit metrics, exists, list, rename and delete, loading (its errors and tables of other
formats), and the error envelope of the API next to the UC API's."""

import json
import uuid

import pytest

from catalog.models import Table
from commits.models import CommitReport
from tests.delta_v1_support import TABLES, V1, error_of
from tests.delta_v1_support import table, v1  # noqa: F401 - the fixtures
from tests.helpers import UC, grant

pytestmark = pytest.mark.django_db(transaction=True)


# -- credentials, metrics, lifecycle -------------------------------------------------------------------
def test_table_credentials(v1, table, admin_client, make_client):
    read = v1.call("GET", "catalogs/unity/schemas/default/tables/events/credentials?operation=READ")
    assert read["storage-credentials"][0]["prefix"] == table["location"]
    assert read["storage-credentials"][0]["operation"] == "READ"
    response = admin_client.get(f"{TABLES}/events/credentials?operation=WRITE")
    assert response.status_code == 400 and error_of(response) == "BadRequestException"
    response = admin_client.get(f"{TABLES}/nope/credentials?operation=READ")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    reader = make_client("reader")
    grant("reader", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT")
    assert reader.get(f"{TABLES}/events/credentials?operation=READ").status_code == 200
    response = reader.get(f"{TABLES}/events/credentials?operation=READ_WRITE")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"


def test_path_credentials_follow_the_uc_rules(v1, table, admin_client, make_client, tmp_path):
    response = admin_client.get(f"{V1}/temporary-path-credentials",
                                {"location": table["location"], "operation": "READ"})
    assert response.status_code in (400, 403)  # managed storage is never a path
    response = make_client("mallory").get(f"{V1}/temporary-path-credentials",
                                          {"location": (tmp_path / "x").as_uri(), "operation": "READ"})
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    response = admin_client.get(f"{V1}/temporary-path-credentials", {"location": "file:///x", "operation": "ALL"})
    assert response.status_code == 400 and error_of(response) == "BadRequestException"


def test_metrics(v1, table, admin_client, make_client):
    report = {"table-id": table["table-uuid"], "report": {"commit-report": {
        "num-files-added": 10, "num-rows-inserted": 1000,
        "file-size-histogram": {"sorted-bin-boundaries": [0, 1024], "file-counts": [9, 1],
                                "total-bytes": [900, 2048], "commit-version": 0}}}}
    response = admin_client.post(f"{TABLES}/events/metrics", report, format="json")
    assert response.status_code == 204, response.content
    stored = CommitReport.objects.get(table_id=table["table-uuid"])
    assert (stored.num_files_added, stored.num_rows_inserted, stored.commit_version) == (10, 1000, 0)
    for body, status, kind in [
        ({**report, "table-id": str(uuid.uuid4())}, 400, "InvalidParameterValueException"),
        ({"table-id": table["table-uuid"], "report": {"commit-report": {"file-size-histogram": {
            "sorted-bin-boundaries": [0, 1], "file-counts": [1], "total-bytes": [1, 2]}}}}, 400,
         "InvalidParameterValueException"),
        ({"report": {}}, 400, "InvalidParameterValueException"),
    ]:
        response = admin_client.post(f"{TABLES}/events/metrics", body, format="json")
        assert response.status_code == status and error_of(response) == kind, body
    response = admin_client.post(f"{TABLES}/events/metrics", "{oops", content_type="application/json")
    assert response.status_code == 400 and error_of(response) == "BadRequestException"
    response = admin_client.post(f"{TABLES}/nope/metrics", report, format="json")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    response = make_client("mallory").post(f"{TABLES}/events/metrics", report, format="json")
    assert response.status_code == 404 and error_of(response) == "NoSuchCatalogException"  # hidden: as missing
    assert CommitReport.objects.count() == 1


def test_exists_list_rename_and_delete(v1, table, admin_client, make_client):
    assert admin_client.head(f"{TABLES}/events").status_code == 204
    assert admin_client.head(f"{TABLES}/nope").status_code == 404
    listed = admin_client.get(TABLES).json()
    assert [t["name"] for t in listed["tables"]] == ["events"]
    v1.create_table("unity", "default", "other")
    response = admin_client.post(f"{TABLES}/events/rename", {"new-name": "other"}, format="json")
    assert response.status_code == 409 and error_of(response) == "AlreadyExistsException"
    writer = make_client("writer")
    grant("writer", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "MODIFY", "SELECT")
    response = writer.post(f"{TABLES}/events/rename", {"new-name": "renamed"}, format="json")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    response = admin_client.post(f"{TABLES}/events/rename", {}, format="json")
    assert response.status_code == 400 and error_of(response) == "InvalidParameterValueException"
    assert admin_client.post(f"{TABLES}/events/rename", {"new-name": "renamed"}, format="json").status_code == 204
    assert admin_client.head(f"{TABLES}/events").status_code == 404
    assert admin_client.get(f"{TABLES}/renamed").json()["metadata"]["table-uuid"] == table["table-uuid"]
    response = writer.delete(f"{TABLES}/renamed")
    assert response.status_code == 403 and error_of(response) == "PermissionDeniedException"
    response = admin_client.delete(f"{TABLES}/events")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    assert admin_client.delete(f"{TABLES}/renamed").status_code == 204
    response = admin_client.get(f"{TABLES}/renamed")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    assert not Table.objects.filter(id=table["table-uuid"]).exists()


def test_load_errors_and_other_formats(v1, table, admin_client, make_client, tmp_path):
    response = admin_client.get(f"{V1}/catalogs/unity/schemas/nope/tables/events")
    assert response.status_code == 404 and error_of(response) == "NoSuchSchemaException"
    response = make_client("mallory").get(f"{TABLES}/events")
    assert response.status_code == 404 and error_of(response) == "NoSuchCatalogException"  # hidden: as missing
    response = admin_client.post(f"{UC}/tables", {
        "name": "flat", "catalog_name": "unity", "schema_name": "default", "table_type": "EXTERNAL",
        "data_source_format": "PARQUET", "storage_location": (tmp_path / "flat").as_uri()}, format="json")
    assert response.status_code == 200, response.content
    response = admin_client.get(f"{TABLES}/flat")
    assert response.status_code == 400 and error_of(response) == "UnsupportedTableFormatException"
    assert admin_client.head(f"{TABLES}/flat").status_code == 204
    response = admin_client.post(f"{UC}/tables", {
        "name": "outside", "catalog_name": "unity", "schema_name": "default", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": (tmp_path / "outside").as_uri()}, format="json")
    assert response.status_code == 200, response.content
    loaded = admin_client.get(f"{TABLES}/outside").json()
    assert loaded["metadata"]["table-type"] == "EXTERNAL"
    assert "commits" not in loaded and "latest-table-version" not in loaded
    assert "delta.feature.catalogManaged" not in loaded["metadata"]["properties"]


def test_errors_use_the_delta_envelope_by_view_not_by_path(admin_client):
    """The UC API keeps its own envelope and statuses for the same condition."""
    response = admin_client.get(f"{UC}/tables/unity.default.nope")
    assert response.status_code == 404 and response.json()["error_code"] == "TABLE_DOES_NOT_EXIST"
    response = admin_client.get(f"{TABLES}/nope")
    assert response.status_code == 404 and error_of(response) == "NoSuchTableException"
    assert json.loads(response.content)["error"]["message"]
