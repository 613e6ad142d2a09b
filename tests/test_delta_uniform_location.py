"""The Iceberg metadata a UniForm Delta table reports lies inside the table, through either commit
API (the legacy `/delta/preview/commits` and `/delta/commit`, and `/delta/v1`): a location
elsewhere is refused with 400, and nothing is written or later served as the table's metadata."""

import uuid

import pytest

from catalog.models import AuditEvent, Table
from commits.models import DeltaCommit
from tests.delta_client import write_staged
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)
V1_TABLE = f"{UC}/delta/v1/catalogs/unity/schemas/default/tables/events"


@pytest.fixture
def tables(delta):
    """The table that commits, and another table whose directory it must not name."""
    return delta.create_table("unity", "default", "events"), delta.create_table("unity", "default", "victim")


def elsewhere(own: str, other: str) -> dict[str, str]:
    return {
        "another table's directory": f"{other}/metadata/00001.metadata.json",
        "outside every storage root": "file:///etc/ucweb/metadata/00001.metadata.json",
        "a .. escape into another table": f"{own}/../{other.rsplit('/', 1)[1]}/metadata/00001.metadata.json",
        "an encoded .. escape": f"{own}/%2e%2e/metadata/00001.metadata.json",
        "a sibling that shares the prefix": f"{own}-x/metadata/00001.metadata.json",
        "the table's location itself": own,
        "not a location": "metadata/00001.metadata.json",
    }


def written(table_id):
    """Everything a commit could change: the row, its commits, and the audit of both APIs."""
    row = Table.objects.get(id=table_id)
    return (row.latest_version, row.uniform_iceberg, row.properties, DeltaCommit.objects.filter(table=row).count(),
            AuditEvent.objects.filter(action__in=["commitDelta", "updateDeltaTable"]).count())


def staged(location: str, version: int) -> tuple[str, int]:
    file_name = f"{version:020d}.{uuid.uuid4()}.json"
    return file_name, write_staged(location, file_name, size=1024)


def legacy_commit(table, metadata_location: str) -> dict:
    file_name, size = staged(table.storage_location, 1)
    return {
        "table_id": table.table_id, "table_uri": table.storage_location,
        "commit_info": {"version": 1, "timestamp": 1704067200001, "file_name": file_name, "file_size": size,
                        "file_modification_timestamp": 1704067200001},
        "uniform": {"iceberg": {"metadata_location": metadata_location, "converted_delta_version": 1,
                                "converted_delta_timestamp": "2026-02-09T17:00:00.000000Z"}},
    }


def v1_commit(table, metadata_location: str) -> dict:
    file_name, size = staged(table.storage_location, 1)
    return {
        "requirements": [{"type": "assert-table-uuid", "uuid": table.table_id}],
        "updates": [
            {"action": "add-commit",
             "commit": {"version": 1, "timestamp": 1704067200001, "file-name": file_name, "file-size": size,
                        "file-modification-timestamp": 1704067200001},
             "uniform": {"iceberg": {"metadata-location": metadata_location, "converted-delta-version": 1,
                                     "converted-delta-timestamp": 1704067200001}}},
            {"action": "set-properties", "updates": {"delta.universalFormat.enabledFormats": "iceberg"}},
        ],
    }


@pytest.mark.parametrize("path", ["/delta/preview/commits", "/delta/commit"])
def test_the_legacy_api_refuses_a_metadata_location_outside_the_table(tables, admin_client, path):
    own, other = tables
    for case, location in elsewhere(own.storage_location, other.storage_location).items():
        before = written(own.table_id)
        response = admin_client.post(f"{UC}{path}", legacy_commit(own, location), format="json")
        assert response.status_code == 400, (case, response.content)
        body = response.json()
        assert body["error_code"] == "INVALID_PARAMETER_VALUE", case
        assert "uniform.iceberg.metadata_location must be inside the table's location" in body["message"], case
        assert written(own.table_id) == before, case
    assert "uniform" not in admin_client.get(V1_TABLE).json()  # nothing to serve to Iceberg readers

    inside = f"{own.storage_location}/metadata/00001.metadata.json"
    response = admin_client.post(f"{UC}{path}", legacy_commit(own, inside), format="json")
    assert response.status_code == 200, response.content
    assert Table.objects.get(id=own.table_id).uniform_iceberg["metadata_location"] == inside
    assert admin_client.get(V1_TABLE).json()["uniform"]["iceberg"]["metadata-location"] == inside


def test_delta_v1_refuses_the_same_locations(tables, admin_client):
    own, other = tables
    for case, location in elsewhere(own.storage_location, other.storage_location).items():
        before = written(own.table_id)
        response = admin_client.post(V1_TABLE, v1_commit(own, location), format="json")
        assert response.status_code == 400, (case, response.content)
        error = response.json()["error"]
        assert error["type"] == "InvalidParameterValueException", case
        assert "add-commit.uniform.iceberg.metadata-location must be inside the table's location" in error["message"]
        assert written(own.table_id) == before, case

    inside = f"{own.storage_location}/metadata/00001.metadata.json"
    response = admin_client.post(V1_TABLE, v1_commit(own, inside), format="json")
    assert response.status_code == 200, response.content
    assert response.json()["uniform"]["iceberg"]["metadata-location"] == inside
