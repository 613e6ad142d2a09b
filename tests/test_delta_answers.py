"""The Delta APIs write their answers with pydantic's JSON serializer (ucweb.renderers): the same
JSON as DRF's renderer, an indent when the client asks for one, and 406 for a client that accepts
no JSON, as DRF's negotiation answers."""

import json

import pytest
from rest_framework.renderers import JSONRenderer

from tests.delta_client import write_staged
from tests.helpers import UC
from tests.test_query_counts import managed, reader  # noqa: F401 - the fixtures

pytestmark = pytest.mark.django_db(transaction=True)
LOAD = f"{UC}/delta/v1/catalogs/unity/schemas/default/tables/events"


def test_an_answer_is_drfs_json(reader, managed):
    answer = reader.get(LOAD)
    assert answer.status_code == 200 and answer["Content-Type"] == "application/json"
    body = json.loads(answer.content)
    assert body["latest-table-version"] == 2 and body["metadata"]["columns"]["fields"]
    assert answer.content == JSONRenderer().render(body)
    commits = reader.get(f"{UC}/delta/commits", {"table_id": managed.table_id, "table_uri": managed.storage_location,
                                                 "start_version": 2})
    assert [commit["version"] for commit in json.loads(commits.content)["commits"]] == [2]
    assert commits.content == JSONRenderer().render(json.loads(commits.content))


def test_the_unpublished_commits_are_passed_on_as_the_database_wrote_them(reader, managed):
    """An answer's `commits` (every commit not published yet) are the JSON text the row's read
    returned (catalog.rows.PendingCommits), with the commits a request ratified put in front."""
    answers = []
    for version in (3, 4):
        size = write_staged(managed.storage_location, f"{version}.json")
        answers.append(reader.post(LOAD, {"requirements": [{"type": "assert-table-uuid", "uuid": managed.table_id}],
                                          "updates": [{"action": "add-commit", "commit": {
                                              "version": version, "timestamp": 10 + version,
                                              "file-name": f"{version}.json", "file-size": size,
                                              "file-modification-timestamp": 1}}]}, format="json"))
    answers.append(reader.get(LOAD))
    answers.append(reader.get(LOAD, HTTP_ACCEPT="application/json; indent=2"))
    for answer in answers:
        assert answer.status_code == 200, answer.content
    expected = [{"version": 4, "timestamp": 14, "file-name": "4.json", "file-size": answers[1].json()["commits"][0][
        "file-size"], "file-modification-timestamp": 1}]
    assert [c["version"] for c in answers[0].json()["commits"]] == [3]
    assert answers[1].json()["commits"][:1] == expected
    assert [c["version"] for c in answers[1].json()["commits"]] == [4, 3]
    assert answers[2].json() == answers[3].json() == answers[1].json()


def test_an_indent_or_another_type_goes_through_drfs_negotiation(reader, managed):
    indented = reader.get(LOAD, HTTP_ACCEPT="application/json; indent=2")
    assert indented.status_code == 200 and indented.content.startswith(b'{\n  "metadata"')
    assert reader.get(LOAD, HTTP_ACCEPT="text/html").status_code == 406
    for accept in ("*/*", "application/json", "application/json, text/plain"):
        assert reader.get(LOAD, HTTP_ACCEPT=accept).status_code == 200, accept
