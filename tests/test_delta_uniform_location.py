"""The Iceberg metadata a UniForm Delta table reports lies inside the table, through either commit
API (the legacy `/delta/preview/commits` and `/delta/commit`, and `/delta/v1`): a location
elsewhere is refused with 400, and nothing is written or later served as the table's metadata."""

import uuid

import pytest

from catalog import locations
from catalog.models import AuditEvent, Table
from commits import delta
from commits.models import DeltaCommit
from commits.staged import StagedCommit
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
        "a triple-encoded .. escape": f"{own}/%25252e%25252e/%25252e%25252e/x/metadata/00001.metadata.json",
        "the table's location itself": own,
        "not a location": "metadata/00001.metadata.json",
    }


def written(table_id):
    """Everything a commit could change: the row, its commits, and the audit of both APIs."""
    row = Table.objects.get(id=table_id)
    return (row.latest_version, row.uniform_iceberg, row.properties, DeltaCommit.objects.filter(table=row).count(),
            AuditEvent.objects.filter(action__in=["commitDelta", "updateDeltaTable"], outcome="SUCCESS").count())


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


def other_spellings(own: str) -> dict[str, str]:
    """Texts that name the file `<own>/metadata/00001.metadata.json` but are not its canonical URL."""
    scheme, rest = own.split("://", 1)
    first = rest.index("/", 1) + 1  # the first letter of the path (after an s3 bucket)
    return {
        "a doubled slash": f"{scheme}://{rest[:first]}/{rest[first:]}/metadata/00001.metadata.json",
        "an encoded letter": f"{scheme}://{rest[:first]}%{ord(rest[first]):02x}{rest[first + 1:]}"
                             "/metadata/00001.metadata.json",
        "an upper-case scheme": f"{scheme.upper()}://{rest}/metadata/00001.metadata.json",
    }


@pytest.mark.parametrize("api", ["legacy", "v1"])
def test_the_canonical_url_is_stored_and_served(tables, admin_client, api):
    """What a reader is served is the URL that was checked, not the text the client sent."""
    own, _ = tables
    inside = f"{own.storage_location}/metadata/00001.metadata.json"
    for case, spelling in other_spellings(own.storage_location).items():
        Table.objects.filter(id=own.table_id).update(latest_version=0, uniform_iceberg=None)
        DeltaCommit.objects.filter(table_id=own.table_id).delete()
        if api == "legacy":
            response = admin_client.post(f"{UC}/delta/commit", legacy_commit(own, spelling), format="json")
        else:
            response = admin_client.post(V1_TABLE, v1_commit(own, spelling), format="json")
        assert response.status_code == 200, (case, response.content)
        assert Table.objects.get(id=own.table_id).uniform_iceberg["metadata_location"] == inside, case
        assert admin_client.get(V1_TABLE).json()["uniform"]["iceberg"]["metadata-location"] == inside, case


S3_TABLE = "s3://b/tables/t"


@pytest.fixture
def s3_table(tables, monkeypatch):
    """The committing table's row moved to an S3 location: the location rule needs nothing more
    (no staged commit is written there; the legacy API reads it before the rule is checked)."""
    own, _ = tables
    Table.objects.filter(id=own.table_id).update(storage_location=S3_TABLE)
    monkeypatch.setattr(delta, "read_staged_commit", lambda uri, name: StagedCommit(name, problem="absent"))
    monkeypatch.setattr(f"{__name__}.staged", lambda location, version: (f"{version:020d}.{uuid.uuid4()}.json", 1024))
    own.storage_location = S3_TABLE
    return own


def test_an_s3_table_refuses_what_a_reader_would_find_elsewhere(s3_table, admin_client):
    escapes = {
        **elsewhere(S3_TABLE, "s3://b/tables/victim"),
        "another bucket": "s3://c/tables/t/metadata/00001.metadata.json",
        "an s3a URL into another bucket": "s3a://c/tables/t/metadata/00001.metadata.json",
        "a doubly encoded .. escape": f"{S3_TABLE}/%252e%252e/u/00001.metadata.json",
    }
    for case, location in escapes.items():
        legacy = admin_client.post(f"{UC}/delta/commit", legacy_commit(s3_table, location), format="json")
        assert legacy.status_code == 400, (case, legacy.content)
        assert "metadata_location must be inside the table's location" in legacy.json()["message"], case
        v1 = admin_client.post(V1_TABLE, v1_commit(s3_table, location), format="json")
        assert v1.status_code == 400, (case, v1.content)
        assert "metadata-location must be inside the table's location" in v1.json()["error"]["message"], case


def test_an_s3_metadata_location_is_stored_as_its_canonical_url():
    inside = f"{S3_TABLE}/metadata/00001.metadata.json"
    spellings = {**other_spellings(S3_TABLE), "s3a": f"s3a://b/tables/t/metadata/00001.metadata.json",
                 "S3A": f"S3A://b/tables/t/metadata/00001.metadata.json"}
    for case, spelling in spellings.items():
        assert locations.file_inside_table(spelling, S3_TABLE, field="m") == inside, case
        assert not locations.is_file_inside_table(spelling, S3_TABLE), case  # not what is stored
    assert locations.is_file_inside_table(inside, S3_TABLE)


def test_a_row_stored_before_the_rule_is_not_served(tables, admin_client):
    own, other = tables
    stored = {"metadata_location": None, "converted_delta_version": 1, "converted_delta_timestamp": 1704067200001}
    for case, location in {**elsewhere(own.storage_location, other.storage_location),
                           **other_spellings(own.storage_location)}.items():
        Table.objects.filter(id=own.table_id).update(uniform_iceberg={**stored, "metadata_location": location})
        assert "uniform" not in admin_client.get(V1_TABLE).json(), case
    inside = f"{own.storage_location}/metadata/00001.metadata.json"
    Table.objects.filter(id=own.table_id).update(uniform_iceberg={**stored, "metadata_location": inside})
    assert admin_client.get(V1_TABLE).json()["uniform"]["iceberg"]["metadata-location"] == inside
