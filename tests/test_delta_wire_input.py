"""What the Delta commit APIs read from the wire: integers (digit strings only as query
parameters), the two names of the published version, and Delta types nested in a schema. Bad
input is a 400 that names the member, never a 500 or a silent reading."""

import uuid

import pytest
import yaml

from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)
V1_TABLE = f"{UC}/delta/v1/catalogs/unity/schemas/default/tables/events"
# The body is read before the table is looked up: these answer 400 for any table.
NO_TABLE = {"table_id": str(uuid.uuid4()), "table_uri": "file:///nowhere/t"}
COMMIT = {"version": 1, "timestamp": 1704067200001, "file_name": f"{1:020d}.{uuid.uuid4()}.json", "file_size": 100,
          "file_modification_timestamp": 1704067200001}


def refusal(response) -> str:
    assert response.status_code == 400, response.content
    body = response.json()
    return body["error"]["message"] if "error" in body else body["message"]


@pytest.mark.parametrize("text", ["--1", "--5", "²", "١٢", "+1", " 1", "1.0", "0x1"])
def test_a_version_in_the_query_string_is_ascii_digits(admin_client, text):
    response = admin_client.get(f"{UC}/delta/commits", {**NO_TABLE, "start_version": text})
    assert refusal(response) == "start_version must be an integer."


def test_digit_strings_still_count_in_the_query_string(admin_client):
    assert refusal(admin_client.get(f"{UC}/delta/commits", {**NO_TABLE, "start_version": "-1"})) == (
        "start_version must be at least 0 (is -1).")
    response = admin_client.get(f"{UC}/delta/commits", {**NO_TABLE, "start_version": "5", "end_version": "7"})
    assert response.status_code == 404, response.content  # read as numbers; the table does not exist


@pytest.mark.parametrize("member", ["version", "timestamp", "file_size", "file_modification_timestamp"])
def test_a_json_body_takes_numbers_not_digit_strings(admin_client, member):
    body = {**NO_TABLE, "commit_info": {**COMMIT, member: str(COMMIT[member])}}
    assert refusal(admin_client.post(f"{UC}/delta/commit", body, format="json")) == (
        f"commit_info.{member} must be an integer.")
    body = {**NO_TABLE, "latest_published_version": "3"}
    assert refusal(admin_client.post(f"{UC}/delta/commit", body, format="json")) == (
        "latest_published_version must be an integer.")


def test_delta_v1_add_commit_takes_numbers_not_digit_strings(admin_client):
    commit = {"version": "1", "timestamp": 1704067200001, "file-name": COMMIT["file_name"], "file-size": 100,
              "file-modification-timestamp": 1704067200001}
    body = {"requirements": [{"type": "assert-table-uuid", "uuid": str(uuid.uuid4())}],
            "updates": [{"action": "add-commit", "commit": commit}]}
    assert refusal(admin_client.post(V1_TABLE, body, format="json")) == "add-commit.commit.version must be an integer."


def test_the_two_names_of_the_published_version_must_agree(admin_client):
    body = {**NO_TABLE, "latest_published_version": 3, "latest_backfilled_version": 4}
    assert refusal(admin_client.post(f"{UC}/delta/commit", body, format="json")) == (
        "latest_published_version 3 and latest_backfilled_version 4 differ; they name the same version.")
    # A null latest_published_version means none, whatever the other name says (as it always did).
    body = {**NO_TABLE, "latest_published_version": None, "latest_backfilled_version": 4}
    assert refusal(admin_client.post(f"{UC}/delta/commit", body, format="json")) == (
        "At least one of commit_info and latest_published_version is required.")
    for names in ({"latest_published_version": 4, "latest_backfilled_version": 4}, {"latest_backfilled_version": 4}):
        response = admin_client.post(f"{UC}/delta/commit", {**NO_TABLE, **names}, format="json")
        assert response.status_code == 404, (names, response.content)  # read; the table does not exist


BAD_TYPES = {
    "struct fields that are not an array": ({"type": "struct", "fields": "x"}, "must be an array"),
    "a struct field that is not an object": ({"type": "struct", "fields": ["x"]}, "needs a name and a type"),
    "a struct field without a type": ({"type": "struct", "fields": [{"name": "b"}]}, "needs a name and a type"),
    "a struct field without a name": ({"type": "struct", "fields": [{"type": "long"}]}, "needs a name and a type"),
    "an array without its element type": ({"type": "array", "containsNull": True}, "needs elementType"),
    "a map without its value type": ({"type": "map", "keyType": "string"}, "needs valueType"),
    "a map without its key type": ({"type": "map", "valueType": "string"}, "needs keyType"),
    "a nested struct with bad fields": ({"type": "array", "elementType": {"type": "struct", "fields": 5}},
                                        "must be an array"),
}


@pytest.mark.parametrize("case", BAD_TYPES)
def test_a_bad_nested_delta_type_is_a_bad_request(admin_client, case):
    bad, says = BAD_TYPES[case]
    field = {"name": "a", "type": bad, "nullable": True, "metadata": {}}
    body = {**NO_TABLE, "commit_info": COMMIT, "metadata": {"schema": [field]}}
    message = refusal(admin_client.post(f"{UC}/delta/commit", body, format="json"))
    assert message.startswith("metadata.schema: ") and says in message, message


def test_delta_v1_refuses_the_same_types(delta, admin_client):
    table = delta.create_table("unity", "default", "events")
    commit = {"version": 1, "timestamp": 1704067200001, "file-name": COMMIT["file_name"], "file-size": 100,
              "file-modification-timestamp": 1704067200001}
    for case, (bad, says) in BAD_TYPES.items():
        columns = {"type": "struct", "fields": [{"name": "a", "type": bad, "nullable": True, "metadata": {}}]}
        body = {"requirements": [{"type": "assert-table-uuid", "uuid": table.table_id}],
                "updates": [{"action": "add-commit", "commit": commit},
                            {"action": "set-columns", "columns": columns}]}
        message = refusal(admin_client.post(V1_TABLE, body, format="json"))
        assert message.startswith("set-columns.columns.fields[0]: ") and says in message, (case, message)


def test_an_empty_partition_column_is_named_as_empty(admin_client):
    body = {**NO_TABLE, "commit_info": COMMIT, "metadata": {"partition_columns": ["a", ""]}}
    assert refusal(admin_client.post(f"{UC}/delta/commit", body, format="json")) == (
        "metadata.partition_columns[1] must not be empty.")


def test_the_document_says_what_the_parser_takes(client):
    document = yaml.safe_load(client.get("/api/schema/").content)
    parameters = {p["name"]: p["schema"] for p in document["paths"][f"{UC}/delta/commits"]["get"]["parameters"]}
    assert parameters["start_version"] == {"type": "integer", "format": "int64", "minimum": 0}
    assert parameters["table_id"] == {"type": "string", "format": "uuid"}
    components = document["components"]["schemas"]
    metadata = components["DeltaMetadataRequest"]["properties"]
    assert metadata["description"]["nullable"] is True  # null clears the description
    assert "minLength" not in metadata["properties"]["additionalProperties"]  # "" is a value
    assert components["DeltaCommitInfo"]["properties"]["version"]["format"] == "int64"
