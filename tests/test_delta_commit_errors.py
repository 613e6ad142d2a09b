"""Every error row of the UC Delta commit API (seed 000): writing a commit (status, error code,
nothing changed) and the MODIFY it needs, reading commits, and the validation of commit
metrics."""

import uuid

import pytest

from commits.models import CommitReport
from tests.delta_commit_support import commit_body, post_commit, state
from tests.delta_commit_support import table  # noqa: F401 - the fixture
from tests.helpers import UC, audited_successes

pytestmark = pytest.mark.django_db(transaction=True)


# -- every error row of "Write a Commit" -----------------------------------------------------------------
def _bad_commits(table_id, location, *, stage=False):
    ok = commit_body(table_id, location, 1, stage=stage)
    no_info = {k: v for k, v in ok.items() if k != "commit_info"}
    def info(**changes):
        return {**ok, "commit_info": {**ok["commit_info"], **changes}}
    return {
        "missing table_id": ({**ok, "table_id": None}, 400, "INVALID_PARAMETER_VALUE"),
        "table_id not a uuid": ({**ok, "table_id": "nope"}, 400, "INVALID_PARAMETER_VALUE"),
        "unknown table": ({**ok, "table_id": str(uuid.uuid4())}, 404, "TABLE_DOES_NOT_EXIST"),
        "missing table_uri": ({**ok, "table_uri": None}, 400, "INVALID_PARAMETER_VALUE"),
        "other table_uri": ({**ok, "table_uri": location + "x"}, 400, "INVALID_PARAMETER_VALUE"),
        "nothing to do": (no_info, 400, "INVALID_PARAMETER_VALUE"),
        "version 0": (info(version=0), 400, "INVALID_PARAMETER_VALUE"),
        "negative version": (info(version=-1), 400, "INVALID_PARAMETER_VALUE"),
        "version as text": (info(version="one"), 400, "INVALID_PARAMETER_VALUE"),
        "gap": (info(version=3), 400, "INVALID_PARAMETER_VALUE"),
        "timestamp 0": (info(timestamp=0), 400, "INVALID_PARAMETER_VALUE"),
        "no file name": (info(file_name=""), 400, "INVALID_PARAMETER_VALUE"),
        "file name is a path": (info(file_name="../../x.json"), 400, "INVALID_PARAMETER_VALUE"),
        "size 0": (info(file_size=0), 400, "INVALID_PARAMETER_VALUE"),
        "mtime 0": (info(file_modification_timestamp=0), 400, "INVALID_PARAMETER_VALUE"),
        "published above latest": ({**no_info, "latest_published_version": 5}, 400, "INVALID_PARAMETER_VALUE"),
        "backfill with metadata": ({**no_info, "latest_published_version": 0, "metadata": {"description": "x"}}, 400, "INVALID_PARAMETER_VALUE"),
        "schema not an array": ({**ok, "metadata": {"schema": "id long"}}, 400, "INVALID_PARAMETER_VALUE"),
        "properties not strings": ({**ok, "metadata": {"properties": {"a": 1}}}, 400, "INVALID_PARAMETER_VALUE"),
        "uniform without location": ({**ok, "uniform": {"iceberg": {"converted_delta_version": 1}}}, 400, "INVALID_PARAMETER_VALUE"),
        "body is a list": ([ok], 400, "INVALID_PARAMETER_VALUE"),
    }


@pytest.mark.parametrize("case", sorted(_bad_commits("t", "l")))
def test_write_commit_errors_change_nothing(table, admin_client, case):
    table_id, location = table
    body, status, code = _bad_commits(table_id, location, stage=True)[case]
    before = (state(table_id), audited_successes("commitDelta"))
    response = post_commit(admin_client, body)
    assert response.status_code == status, response.content
    assert response.json()["error_code"] == code
    assert (state(table_id), audited_successes("commitDelta")) == before


def test_write_commit_needs_modify(table, make_client):
    from catalog.models import Catalog, Principal
    from catalog.services import grants

    table_id, location = table
    admin = Principal.objects.get(name="admin")
    reader = make_client("reader")
    catalog = Catalog.objects.get(name="unity")
    grants.update_assignments(securable_type="catalog", securable=catalog, caller=admin, access=None,
                              changes=[{"principal": "reader", "add": ["USE CATALOG", "USE SCHEMA", "SELECT"], "remove": []}])
    response = post_commit(reader, commit_body(table_id, location, 1))
    assert response.status_code == 403 and response.json()["error_code"] == "PERMISSION_DENIED"
    assert reader.get(f"{UC}/delta/commits", {"table_id": table_id, "table_uri": location}).status_code == 200
    assert state(table_id) == (0, 0, 0)


# -- get commits errors --------------------------------------------------------------------------------
def test_get_commits_errors(table, admin_client, make_client):
    table_id, location = table
    get = lambda **params: admin_client.get(f"{UC}/delta/commits", params)  # noqa: E731
    assert get(table_id=table_id, table_uri=location, start_version=-1).status_code == 400
    assert get(table_id=table_id, table_uri=location, start_version=3, end_version=2).status_code == 400
    assert get(table_uri=location).status_code == 400
    assert get(table_id=str(uuid.uuid4()), table_uri=location).json()["error_code"] == "TABLE_DOES_NOT_EXIST"
    assert get(table_id=table_id, table_uri="file:///elsewhere").status_code == 400
    # A table the caller may not see answers as a missing one (no existence oracle).
    assert make_client("nobody").get(f"{UC}/delta/commits", {"table_id": table_id, "table_uri": location}).status_code == 404


# -- metrics ---------------------------------------------------------------------------------------------
def test_metrics_are_stored_and_validated(delta, table, admin_client):
    table_id, location = table
    delta.append(table_id, location, 1, "p1.parquet")
    report = {"commit_version": 1, "num_files_added": 10, "num_bytes_added": 1000, "num_rows_inserted": 5,
              "file_size_histogram": {"sorted_bin_boundaries": [0, 1024, 2048], "file_counts": [100, 40, 5],
                                      "total_bytes": [10, 20, 30]}}
    body = {"table_id": table_id, "table_uri": location, "report": {"commit_report": report}}
    assert admin_client.post(f"{UC}/delta/metrics", body, format="json").status_code == 200
    stored = CommitReport.objects.get(table_id=table_id)
    assert stored.commit_version == 1 and stored.num_rows_inserted == 5
    assert stored.file_size_histogram["file_counts"] == [100, 40, 5]
    bad = {
        "unequal lengths": {**report, "file_size_histogram": {**report["file_size_histogram"], "file_counts": [1]}},
        "first boundary": {**report, "file_size_histogram": {**report["file_size_histogram"], "sorted_bin_boundaries": [1, 2, 3]}},
        "negative count": {**report, "file_size_histogram": {**report["file_size_histogram"], "file_counts": [1, -1, 1]}},
        "negative files": {**report, "num_files_added": -3},
        "no version": {k: v for k, v in report.items() if k != "commit_version"},
        "future version": {**report, "commit_version": 9},
    }
    for name, commit_report in bad.items():
        body = {"table_id": table_id, "table_uri": location, "report": {"commit_report": commit_report}}
        response = admin_client.post(f"{UC}/delta/metrics", body, format="json")
        assert response.status_code == 400, name
    assert CommitReport.objects.count() == 1
