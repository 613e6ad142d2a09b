"""Inputs that once reached a server error, a misleading answer or a name the rules forbid, each
driven through every protocol that takes it:
- JSON nested deeper than the server reads (ucweb.client_json): a staged Delta commit, a request
  body, an Iceberg metadata file named by register or a notification, a Delta schemaString;
- a staged commit's file name longer than a file system allows (it answered 503, "retry");
- names holding C1 control characters or the Unicode line and paragraph separators;
- answers to HEAD that carried a body.
Each refusal is a 400 in the envelope of the API it came through, and nothing changes: rows,
versions, files."""

from __future__ import annotations

import asyncio
import hashlib
import json
import socket
import uuid
from urllib.parse import quote, urlsplit

import pytest
from django.db import connection

from catalog.models import (
    AuditEvent, Catalog, Column, Function, Policy, RegisteredModel, Schema, StagingTable, Table, Volume,
)
from catalog.names import validate_name
from catalog.storage import join, storage_for
from commits.models import DeltaCommit, IcebergMetadata, IcebergMetricsReport
from tests.delta_client import metadata_action, protocol_action, write_staged
from tests.delta_commit_support import commit_body, post_commit
from tests.delta_commit_support import state as commit_state
from tests.delta_v1_support import TABLES, V1, error_of as delta_error_of
from tests.delta_v1_support import state as v1_state
from tests.delta_v1_support import v1  # noqa: F401 - the fixture
from tests.helpers import UC, audited_successes, external_table_body, rows
from ucweb.client_json import MAX_DEPTH
from ucweb.errors import InvalidParameter

ICEBERG = "/api/catalog/v1/unity"
POLARIS = "/api/catalog/polaris/v1/unity"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
VIEW_VERSION = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1735689600000, "summary": {},
                "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}],
                "default-namespace": ["default"]}
TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"
# How deeply each document nests in all: deep enough for Python's decoder to run out of stack (what
# once answered 500), and one level past the limit (what the decoder reads, and pyiceberg or the
# JSON encoder might not).
DEPTHS = pytest.mark.parametrize("depth", [2000, MAX_DEPTH + 1], ids=["2000 deep", "one past the limit"])


def nested(depth: int) -> str:
    """A JSON array `depth` levels deep."""
    return "[" * depth + "]" * depth


def deep_struct(levels: int) -> dict:
    """An Iceberg struct type holding a struct, `levels` deep (three levels of JSON each)."""
    kind = "long"
    for level in range(levels):
        kind = {"type": "struct", "fields": [{"id": 100 + level, "name": f"f{level}", "required": False, "type": kind}]}
    return kind


def tree(location: str) -> dict:
    """Every file under `location` with its bytes' digest: what "no file changed" means."""
    storage = storage_for(location)
    return {item.url: hashlib.sha256(storage.read(item.url)).hexdigest() for item in storage.list(location)}


def database() -> dict:
    """Every row a refused request could have added or changed, and the successes audited."""
    return {**rows(Catalog, Schema, Table, Column, Volume, Function, RegisteredModel, Policy, StagingTable,
                   DeltaCommit, IcebergMetadata, IcebergMetricsReport),
            "audited successes": AuditEvent.objects.filter(outcome="SUCCESS").count()}


def post_raw(client, path: str, text: str):
    """A body sent as the text it is (the test client's own encoder would run out of stack)."""
    return client.post(path, data=text, content_type="application/json")


def uc_error(response) -> str:
    assert response.status_code == 400, response.content
    body = response.json()
    assert set(body) == {"error_code", "message", "details"}, body
    assert body["error_code"] == "INVALID_PARAMETER_VALUE"
    return body["message"]


def iceberg_error(response) -> str:
    assert response.status_code == 400, response.content
    body = response.json()
    assert set(body) == {"error"} and body["error"]["type"] == "BadRequestException", body
    assert body["error"]["code"] == 400
    return body["error"]["message"]


def delta_error(response, kind: str = "InvalidParameterValueException") -> str:
    assert response.status_code == 400, response.content
    assert delta_error_of(response) == kind, response.content
    return response.json()["error"]["message"]


def staged_name(version: int = 1) -> str:
    return f"{version:020d}.{uuid.uuid4()}.json"


def put(location: str, relative: str, data: bytes) -> str:
    url = join(location, relative)
    storage_for(url).put(url, data)
    return url


def deep_staged_commit(depth: int) -> bytes:
    """A staged commit whose first line nests `depth` levels deep."""
    return ('{"commitInfo":{"operation":"WRITE","inCommitTimestamp":1704067200001,"tags":'
            + nested(depth - 2) + '}}\n').encode()


@pytest.fixture
def managed(delta):
    """A managed Delta table made by the UC Delta client: (table id, location)."""
    created = delta.create_table("unity", "default", "events")
    return created.table_id, created.storage_location


@pytest.fixture
def v1_table(v1):  # noqa: F811 - v1 is the fixture imported above
    loaded = v1.create_table("unity", "default", "events")
    return {"table-uuid": loaded["metadata"]["table-uuid"], "location": loaded["metadata"]["location"]}


def v1_commit(table: dict, file_name: str, size: int) -> dict:
    entry = {"version": 1, "timestamp": 1704067200001, "file-name": file_name, "file-size": size,
             "file-modification-timestamp": 1704067200001}
    return {"requirements": [{"type": "assert-table-uuid", "uuid": table["table-uuid"]}],
            "updates": [{"action": "add-commit", "commit": entry}]}


# -- 1. JSON nested too deeply ------------------------------------------------------------------------------
@pytest.mark.django_db(transaction=True)
@DEPTHS
def test_a_staged_commit_nested_too_deeply_is_a_400_of_the_uc_commits_api(managed, admin_client, depth):
    table_id, location = managed
    name, data = staged_name(), deep_staged_commit(depth)
    put(location, f"_delta_log/_staged_commits/{name}", data)
    before = (commit_state(table_id), tree(location), audited_successes("commitDelta"))
    body = commit_body(table_id, location, 1, name, stage=False)
    body["commit_info"]["file_size"] = len(data)
    message = uc_error(post_commit(admin_client, body))
    assert "is not a Delta commit" in message and TOO_DEEP in message, message
    assert (commit_state(table_id), tree(location), audited_successes("commitDelta")) == before


@pytest.mark.django_db(transaction=True)
@DEPTHS
def test_a_staged_commit_nested_too_deeply_is_a_400_of_the_delta_api(v1_table, admin_client, depth):
    location = v1_table["location"]
    name, data = staged_name(), deep_staged_commit(depth)
    put(location, f"_delta_log/_staged_commits/{name}", data)
    before = (v1_state(v1_table["table-uuid"]), tree(location),
              audited_successes("updateDeltaTable"))
    message = delta_error(admin_client.post(f"{TABLES}/events", v1_commit(v1_table, name, len(data)), format="json"))
    assert "is not a Delta commit" in message and TOO_DEEP in message, message
    assert (v1_state(v1_table["table-uuid"]), tree(location),
            audited_successes("updateDeltaTable")) == before


@pytest.mark.django_db(transaction=True)
def test_a_staged_commit_as_deep_as_the_limit_is_ratified(managed, admin_client):
    table_id, location = managed
    name, data = staged_name(), deep_staged_commit(MAX_DEPTH)
    put(location, f"_delta_log/_staged_commits/{name}", data)
    body = commit_body(table_id, location, 1, name, stage=False)
    body["commit_info"]["file_size"] = len(data)
    assert post_commit(admin_client, body).status_code == 200
    assert commit_state(table_id)[0] == 1


@pytest.mark.django_db(transaction=True)
@DEPTHS
def test_a_delta_schema_string_nested_too_deeply_is_a_400(delta, admin_client, depth):
    """Version 0's metaData.schemaString is JSON in a string: UC createTable reads its columns."""
    staging = delta.stage("unity", "default", "deep")
    schema_string = ('{"type":"struct","fields":[{"name":"a","nullable":true,"metadata":{},"type":'
                     + nested(depth - 3) + "}]}")
    zero = metadata_action(staging.id)
    zero["metaData"]["schemaString"] = schema_string
    delta.write_version_zero(staging.staging_location, staging.id, actions=[
        {"commitInfo": {"inCommitTimestamp": 1704067200000, "operation": "CREATE TABLE"}}, protocol_action(), zero])
    before = (database(), tree(staging.staging_location))
    message = uc_error(admin_client.post(f"{UC}/tables", {
        "name": "deep", "catalog_name": "unity", "schema_name": "default", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": staging.staging_location, "columns": []}, format="json"))
    assert TOO_DEEP in message, message
    assert (database(), tree(staging.staging_location)) == before


def delta_table_body(tmp_path, type_json: str) -> dict:
    body = external_table_body("ext", (tmp_path / "ext").as_uri(), catalog="unity", schema="default",
                               data_source_format="DELTA")
    body["columns"][0]["type_json"] = type_json
    return body


@pytest.mark.django_db
@DEPTHS
def test_a_column_type_json_nested_too_deeply_is_a_400(admin_client, bootstrap, tmp_path, depth):
    """The Delta API reads a column's type_json as its Delta type."""
    before = database()
    message = uc_error(admin_client.post(f"{UC}/tables", delta_table_body(tmp_path, nested(depth)), format="json"))
    assert "columns[0].type_json" in message and TOO_DEEP in message, message
    assert database() == before


@pytest.mark.django_db
def test_a_stored_type_json_nested_too_deeply_is_read_as_the_columns_uc_type(admin_client, bootstrap, tmp_path):
    """A column stored before the limit: the Delta API derives its type from the UC type."""
    created = admin_client.post(f"{UC}/tables", delta_table_body(tmp_path, '{"type": "long"}'), format="json")
    assert created.status_code == 200, created.content
    Column.objects.filter(table__name="ext", name="id").update(type_json=nested(2000))
    loaded = admin_client.get(f"{TABLES}/ext")
    assert loaded.status_code == 200, loaded.content
    assert loaded.json()["metadata"]["columns"]["fields"][0] == {"name": "id", "type": "long", "nullable": False,
                                                                 "metadata": {}}


@pytest.fixture
def iceberg_table(admin_client, storage_root):
    """Iceberg table default.base (and view default.vbase), made in the test's transaction."""
    created = admin_client.post(f"{ICEBERG}/namespaces/default/tables", {"name": "base", "schema": SCHEMA},
                                format="json")
    assert created.status_code == 200, created.content
    view = admin_client.post(f"{ICEBERG}/namespaces/default/views",
                             {"name": "vbase", "schema": SCHEMA, "view-version": VIEW_VERSION}, format="json")
    assert view.status_code == 200, view.content
    return created.json()


def deep_bodies(depth: int) -> dict:
    """(path, body text nesting `depth` levels deep, error check) for each protocol."""
    inner = nested(depth - 2)
    properties = '{"name": "deep", "properties": {"k": ' + inner + "}}"
    return {
        "uc createCatalog": (f"{UC}/catalogs", properties, uc_error),
        "iceberg createNamespace": (f"{ICEBERG}/namespaces",
                                    '{"namespace": ["deep"], "properties": {"k": ' + inner + "}}", iceberg_error),
        "iceberg reportMetrics": (f"{ICEBERG}/namespaces/default/tables/base/metrics",
                                  '{"report-type": "scan-report", "metrics": {"k": ' + inner + "}}", iceberg_error),
        "delta updateTable": (f"{TABLES}/base", '{"requirements": [], "updates": ' + nested(depth - 1) + "}",
                              lambda response: delta_error(response, "BadRequestException")),
        "polaris createGenericTable": (f"{POLARIS}/namespaces/default/generic-tables", properties, iceberg_error),
    }


@pytest.mark.django_db
@DEPTHS
@pytest.mark.parametrize("api", sorted(deep_bodies(1)))
def test_a_request_body_nested_too_deeply_is_a_400_in_each_envelope(iceberg_table, admin_client, api, depth):
    path, text, refused = deep_bodies(depth)[api]
    before = (database(), tree(iceberg_table["metadata"]["location"]))
    assert TOO_DEEP in refused(post_raw(admin_client, path, text))
    assert (database(), tree(iceberg_table["metadata"]["location"])) == before


@pytest.mark.django_db
def test_a_request_body_as_deep_as_the_limit_is_read(iceberg_table, admin_client):
    body = '{"report-type": "scan-report", "snapshot-id": 1, "metrics": ' + nested(MAX_DEPTH - 1) + "}"
    response = post_raw(admin_client, f"{ICEBERG}/namespaces/default/tables/base/metrics", body)
    assert response.status_code == 204, response.content
    # A schema of 32 nested structs is exactly as deep as a createTable body may be.
    schema = {"type": "struct", "fields": [{"id": 1, "name": "a", "required": False, "type": deep_struct(32)}]}
    created = admin_client.post(f"{ICEBERG}/namespaces/default/tables", {"name": "deep", "schema": schema},
                                format="json")
    assert created.status_code == 200, created.content


# Bodies that the decoder reads but whose processing ran out of stack afterwards: pyiceberg's schema
# models (60 nested structs) and the JSON encoder that stores a metrics report.
DEEP_SCHEMA = {"type": "struct", "schema-id": 1,
               "fields": [{"id": 1, "name": "a", "required": False, "type": deep_struct(60)}]}
ONCE_OUT_OF_STACK = {
    "createTable": ("/namespaces/default/tables", {"name": "deep", "schema": DEEP_SCHEMA}),
    "createView": ("/namespaces/default/views", {"name": "deep", "schema": DEEP_SCHEMA, "view-version": VIEW_VERSION}),
    "add-schema": ("/namespaces/default/tables/base", {"requirements": [], "updates": [
        {"action": "add-schema", "schema": DEEP_SCHEMA}]}),
    "transaction": ("/transactions/commit", {"table-changes": [{
        "identifier": {"namespace": ["default"], "name": "base"}, "requirements": [],
        "updates": [{"action": "add-schema", "schema": DEEP_SCHEMA}]}]}),
    "reportMetrics": ("/namespaces/default/tables/base/metrics", {
        "report-type": "scan-report", "snapshot-id": 1, "metrics": json.loads(nested(900))}),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(ONCE_OUT_OF_STACK))
def test_a_body_that_once_ran_out_of_stack_after_decoding_is_a_400(iceberg_table, admin_client, case):
    path, body = ONCE_OUT_OF_STACK[case]
    before = (database(), tree(iceberg_table["metadata"]["location"]))
    assert TOO_DEEP in iceberg_error(post_raw(admin_client, ICEBERG + path, json.dumps(body)))
    assert (database(), tree(iceberg_table["metadata"]["location"])) == before


def metadata_file(depth: int, tmp_path, *, view: bool = False) -> tuple[str, str]:
    """A copy of the metadata of table base (or view vbase) for a new one outside managed storage,
    nesting `depth` levels deep: its URL and uuid."""
    data = json.loads(IcebergMetadata.objects.get(table__name="vbase" if view else "base").metadata_json)
    folder, new_uuid = (tmp_path / "external" / uuid.uuid4().hex).as_uri(), str(uuid.uuid4())
    data["location"] = folder
    data["view-uuid" if view else "table-uuid"] = new_uuid
    text = json.dumps(data)[:-1] + ', "x-deep": ' + nested(depth - 1) + "}"
    return put(folder, "metadata/00001-deep.metadata.json", text.encode()), new_uuid


@pytest.mark.django_db
@DEPTHS
def test_an_iceberg_metadata_file_nested_too_deeply_is_a_400(iceberg_table, admin_client, tmp_path, depth):
    """register, register-view and a CREATE notification name a file the catalog reads for them."""
    (table_file, table_uuid), (view_file, _) = metadata_file(depth, tmp_path), metadata_file(depth, tmp_path, view=True)
    before = database()
    register = admin_client.post(f"{ICEBERG}/namespaces/default/register",
                                 {"name": "registered", "metadata-location": table_file}, format="json")
    assert TOO_DEEP in iceberg_error(register)
    register_view = admin_client.post(f"{ICEBERG}/namespaces/default/register-view",
                                      {"name": "registered", "metadata-location": view_file}, format="json")
    assert TOO_DEEP in iceberg_error(register_view)
    notification = admin_client.post(f"{ICEBERG}/namespaces/default/tables/notified/notifications", {
        "notification-type": "CREATE", "payload": {"table-name": "notified", "timestamp": 100,
                                                   "table-uuid": table_uuid,
                                                   "metadata-location": table_file}}, format="json")
    assert TOO_DEEP in iceberg_error(notification)
    assert database() == before


@pytest.mark.django_db
def test_policy_content_nested_too_deeply_is_a_400(admin_client):
    content = '{"version": "2025-02-03", "enable": true, "config": {"k": ' + nested(2000) + "}}"
    before = database()
    response = admin_client.post(f"{POLARIS}/namespaces/default/policies", {
        "name": "deep", "type": "system.data-compaction", "content": content}, format="json")
    assert TOO_DEEP in iceberg_error(response)
    assert database() == before


# -- 2. a staged file name longer than a file system allows ------------------------------------------------
LONG_NAMES = pytest.mark.parametrize("file_name", [
    "0" * 10_000,
    f"{1:020d}.{'é' * 115}.json",  # 141 characters, 256 bytes: file systems count bytes
], ids=["10,000 characters", "past the limit in bytes"])


@pytest.fixture
def no_storage_call(monkeypatch):
    """Fails the test if a staged commit is read: the name is refused before storage is asked."""
    import commits.staged

    def refuse(url):
        raise AssertionError(f"storage was asked for {url[:80]}")
    monkeypatch.setattr(commits.staged, "storage_within", refuse)


@pytest.mark.django_db(transaction=True)
@LONG_NAMES
def test_a_staged_file_name_too_long_is_a_400_of_the_uc_commits_api(managed, admin_client, file_name, no_storage_call):
    table_id, location = managed
    before = (commit_state(table_id), tree(location), audited_successes("commitDelta"))
    message = uc_error(post_commit(admin_client, commit_body(table_id, location, 1, file_name, stage=False)))
    assert "commit_info.file_name must be at most 255 bytes" in message, message
    assert (commit_state(table_id), tree(location), audited_successes("commitDelta")) == before


@pytest.mark.django_db(transaction=True)
@LONG_NAMES
def test_a_staged_file_name_too_long_is_a_400_of_the_delta_api(v1_table, admin_client, file_name, no_storage_call):
    location = v1_table["location"]
    before = (v1_state(v1_table["table-uuid"]), tree(location),
              audited_successes("updateDeltaTable"))
    message = delta_error(admin_client.post(f"{TABLES}/events", v1_commit(v1_table, file_name, 1024), format="json"))
    assert "add-commit.commit.file-name must be at most 255 bytes" in message, message
    assert (v1_state(v1_table["table-uuid"]), tree(location),
            audited_successes("updateDeltaTable")) == before


@pytest.mark.django_db(transaction=True)
def test_a_staged_file_name_of_255_bytes_is_ratified(managed, admin_client):
    table_id, location = managed
    file_name = f"{1:020d}." + "a" * (255 - 26) + ".json"
    assert len(file_name.encode()) == 255
    size = write_staged(location, file_name)
    body = commit_body(table_id, location, 1, file_name, stage=False)
    body["commit_info"]["file_size"] = size
    assert post_commit(admin_client, body).status_code == 200
    assert commit_state(table_id) == (1, 0, 1)


# -- 3. names with C1 control characters and line separators ------------------------------------------------
FORBIDDEN = ["\x80", "\x85", "\x9f", "\u2028", "\u2029"]


@pytest.mark.parametrize("iceberg", [False, True], ids=["uc", "iceberg"])
def test_every_c1_control_and_line_separator_is_refused_in_a_name(iceberg):
    for code in [*range(0x80, 0xA0), 0x2028, 0x2029]:
        with pytest.raises(InvalidParameter):
            validate_name(f"a{chr(code)}b", iceberg=iceberg)
    for allowed in ("café", "名前", "a\u00a9b"):
        assert validate_name(allowed, iceberg=iceberg) == allowed
    assert validate_name("new.db x", iceberg=True) == "new.db x"


def name_cases(location: str) -> dict:
    """(send(client, name), error check) for every call that creates or renames a securable."""
    def uc(path, body, method="post"):
        return lambda client, name: getattr(client, method)(f"{UC}{path}", body(name), format="json"), uc_error

    def iceberg(path, body, prefix=ICEBERG):
        return lambda client, name: client.post(f"{prefix}{path}", body(name), format="json"), iceberg_error

    def delta(path, body):
        return lambda client, name: client.post(f"{V1}/{path}", body(name), format="json"), delta_error

    where = {"catalog_name": "unity", "schema_name": "default"}
    identifier = {"namespace": ["default"]}
    return {
        "uc createCatalog": uc("/catalogs", lambda n: {"name": n}),
        "uc createSchema": uc("/schemas", lambda n: {"name": n, "catalog_name": "unity"}),
        "uc createTable": uc("/tables", lambda n: external_table_body(
            n, f"{location}/{uuid.uuid4().hex}", catalog="unity", schema="default")),
        "uc createStagingTable": uc("/staging-tables", lambda n: {"name": n, **where}),
        "uc createVolume": uc("/volumes", lambda n: {"name": n, "volume_type": "MANAGED", **where}),
        "uc createFunction": uc("/functions", lambda n: {"function_info": {
            "name": n, **where, "input_params": {"parameters": []}, "data_type": "INT", "full_data_type": "int",
            "routine_body": "SQL", "routine_definition": "1", "parameter_style": "S", "is_deterministic": True,
            "sql_data_access": "NO_SQL", "is_null_call": False, "security_type": "DEFINER", "specific_name": "f"}}),
        "uc createRegisteredModel": uc("/models", lambda n: {"name": n, **where}),
        "uc renameSchema": uc("/schemas/unity.default", lambda n: {"new_name": n}, method="patch"),
        "uc renameCatalog": uc("/catalogs/unity", lambda n: {"new_name": n}, method="patch"),
        "iceberg createNamespace": iceberg("/namespaces", lambda n: {"namespace": [n]}),
        "iceberg createNestedNamespace": iceberg("/namespaces", lambda n: {"namespace": ["default", n]}),
        "iceberg createTable": iceberg("/namespaces/default/tables", lambda n: {"name": n, "schema": SCHEMA}),
        "iceberg createView": iceberg("/namespaces/default/views", lambda n: {
            "name": n, "schema": SCHEMA, "view-version": VIEW_VERSION}),
        "iceberg renameTable": iceberg("/tables/rename", lambda n: {
            "source": {**identifier, "name": "base"}, "destination": {**identifier, "name": n}}),
        "iceberg renameView": iceberg("/views/rename", lambda n: {
            "source": {**identifier, "name": "vbase"}, "destination": {**identifier, "name": n}}),
        "iceberg registerTable": iceberg("/namespaces/default/register", lambda n: {
            "name": n, "metadata-location": f"{location}/metadata/v1.metadata.json"}),
        "iceberg notification CREATE": (lambda client, name: client.post(
            f"{ICEBERG}/namespaces/default/tables/{quote(name)}/notifications", {
                "notification-type": "CREATE", "payload": {
                    "table-name": name, "timestamp": 1, "table-uuid": str(uuid.uuid4()),
                    "metadata-location": f"{location}/metadata/v1.metadata.json"}}, format="json"), iceberg_error),
        "polaris createGenericTable": iceberg("/namespaces/default/generic-tables",
                                              lambda n: {"name": n, "format": "delta"}, prefix=POLARIS),
        "polaris createPolicy": iceberg("/namespaces/default/policies", lambda n: {
            "name": n, "type": "system.data-compaction",
            "content": json.dumps({"version": "2025-02-03", "enable": True})}, prefix=POLARIS),
        "delta createStagingTable": delta("catalogs/unity/schemas/default/staging-tables", lambda n: {"name": n}),
        "delta createTable": delta("catalogs/unity/schemas/default/tables", lambda n: {
            "name": n, "table-type": "MANAGED", "location": f"{location}/x"}),
        "delta renameTable": delta("catalogs/unity/schemas/default/tables/base/rename", lambda n: {"new-name": n}),
    }


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(name_cases("file:///x")))
def test_a_name_with_a_c1_control_or_a_line_separator_is_refused_by_every_api(iceberg_table, admin_client, case):
    send, refused = name_cases(iceberg_table["metadata"]["location"])[case]
    before = (database(), tree(iceberg_table["metadata"]["location"]))
    for character in FORBIDDEN:
        name = f"bad{character}name"
        message = refused(send(admin_client, name))
        assert "invalid" in message.lower(), (repr(character), message)
    assert (database(), tree(iceberg_table["metadata"]["location"])) == before


# -- 4. answers to HEAD carry no body ---------------------------------------------------------------------
def head_paths(token: str) -> dict:
    """HEAD requests, each of a kind of answer: a view's own head(), one of a view that answers
    HEAD as GET (with a body), errors in each envelope, a route that does not exist."""
    return {
        "iceberg tableExists": f"{ICEBERG}/namespaces/default/tables/base",
        "iceberg tableExists, missing": f"{ICEBERG}/namespaces/default/tables/missing",
        "iceberg namespaceExists": f"{ICEBERG}/namespaces/default",
        "iceberg namespaceExists, missing": f"{ICEBERG}/namespaces/missing",
        "iceberg viewExists, missing": f"{ICEBERG}/namespaces/default/views/missing",
        "delta tableExists, missing": f"{TABLES}/missing",
        "uc listCatalogs (a GET)": f"{UC}/catalogs",
        "uc getTable, missing": f"{UC}/tables/unity.default.missing",
        "no such route": f"{UC}/nothing-here",
    }


def asgi_request(application, method: str, path: str, headers=()) -> tuple[int, list, bytes, int]:
    """One request through the ASGI application; its status, headers, body and body messages."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver"), *headers], "client": ("127.0.0.1", 1),
             "server": ("testserver", 80)}
    sent, received = [], []

    async def receive():
        if not received:
            received.append(True)
            return {"type": "http.request", "body": b""}
        await asyncio.Event().wait()

    async def send(message):
        sent.append(message)

    asyncio.run(application(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    bodies = [m for m in sent if m["type"] == "http.response.body"]
    assert bodies and not bodies[-1].get("more_body", False), "the answer is ended"
    return start["status"], start["headers"], b"".join(m.get("body", b"") for m in bodies), len(bodies)


@pytest.mark.django_db(transaction=True)
def test_the_asgi_handler_answers_head_without_a_body_and_with_the_same_status_and_headers(
        iceberg_table, make_token, monkeypatch):
    import ucweb.asgi

    token = make_token("admin", admin=True)
    auth = [(b"authorization", f"Bearer {token}".encode())]
    with_body = {}
    with monkeypatch.context() as patch:  # the handler as it was: what the view made, body included
        patch.setattr(ucweb.asgi, "headers_only", lambda send: send)
        application = ucweb.asgi.SynchronousChainASGIHandler()
        for kind, path in head_paths(token).items():
            with_body[kind] = asgi_request(application, "HEAD", path, auth)
    assert any(body for _, _, body, _ in with_body.values()), "some HEAD answers carried a body"
    application = ucweb.asgi.SynchronousChainASGIHandler()
    for kind, path in head_paths(token).items():
        status, headers, body, _ = asgi_request(application, "HEAD", path, auth)
        assert (status, headers) == with_body[kind][:2], kind
        assert body == b"", kind
    # Refused before the view runs: a declared body over the limit.
    status, _, body, _ = asgi_request(application, "HEAD", f"{UC}/catalogs",
                                      [*auth, (b"content-length", str(10**12).encode())])
    assert (status, body) == (413, b"")
    # Other methods keep their bodies.
    status, _, body, _ = asgi_request(application, "GET", f"{ICEBERG}/namespaces/default/tables/missing", auth)
    assert status == 404 and json.loads(body)["error"]["type"] == "NoSuchTableException"


def raw_head(host: str, port: int, path: str, token: str) -> tuple[str, bytes]:
    """A HEAD on a connection the server closes after it: its head, and every byte after it."""
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(f"HEAD {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                     f"Connection: close\r\n\r\n".encode())
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    return head.decode("latin-1"), rest


@pytest.mark.django_db(transaction=True)
def test_head_answers_of_the_live_server_carry_no_body_bytes(live_server, iceberg_table, make_token):
    token = make_token("admin", admin=True)
    address = urlsplit(live_server.url)
    host, port = address.hostname, address.port
    for kind, path in head_paths(token).items():
        head, rest = raw_head(host, port, path, token)
        assert head.startswith("HTTP/1.1 "), (kind, head)
        assert rest == b"", (kind, rest[:200])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_deployed_server_sends_head_answers_without_a_body(tmp_path, make_token):
    """The server as `make run` starts it (granian's WSGI interface): a HEAD answer
    carries no body bytes, and no warning about them is logged."""
    from tests.server_process import running_server

    if connection.vendor != "postgresql":
        pytest.skip("the server process shares the test database, which needs PostgreSQL")
    with running_server(tmp_path, UCWEB_WORKERS="1") as server:
        token = make_token("admin", admin=True)
        for kind, path in head_paths(token).items():
            if "base" in path:
                continue  # the server has its own storage: no table base there
            head, rest = raw_head("127.0.0.1", server.port, path, token)
            assert head.startswith("HTTP/1.1 "), (kind, head)
            assert rest == b"", (kind, rest[:200])
        log = server.log()
    assert "no-body response" not in log, log[-3000:]
