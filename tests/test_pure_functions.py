"""The pure functions under the APIs, without a database: full-name splitting, page tokens,
access evaluation, the checks of a catalog-managed table's first commit, Iceberg view metadata
updates, the error table, the reading of a body against its model (the wording of a refusal), and
what the recipes of catalog.services call each securable type. (Models built here are never saved.
Location canonicalisation is in tests/test_locations.py, the Delta format modules in
tests/test_delta_formats.py.)"""

import json

import pytest

from catalog.authz import Access, hidden_level
from catalog.choices import Privilege, SecurableType
from catalog.models import Catalog, Principal, Schema, Table
from catalog.pagination import decode_page_token, encode_page_token
from catalog.services import audit, recipes
from catalog.names import join_full_name, split_full_name, validate_name
from commits import delta_wire
from commits.delta_v1.update_wire import DeltaUpdateTableRequest
from commits.formats import delta_log
from commits.formats.iceberg_view import apply_view_updates, check_view_requirements, create_view_metadata
from ucweb import errors
from ucweb.bodies import read
from ucweb.errors import CommitFailed, InvalidParameter


# -- full names --------------------------------------------------------------------------------------
@pytest.mark.parametrize("full_name, parts, expected", [
    ("unity.default.t", 3, ["unity", "default", "t"]),
    ("unity.default", 2, ["unity", "default"]),
    ("unity", 1, ["unity"]),
    ("unity.`new.db`.`ta.ble`", 3, ["unity", "new.db", "ta.ble"]),
    ("unity.`TEST NS`.t", 3, ["unity", "TEST NS", "t"]),
    ("unity.`a``b c`.t", 3, ["unity", "a`b c", "t"]),
    # A back-quoted part without a dot or space is a name that holds back-quotes, when the plain
    # split already gives the parts.
    ("unity.`a`.t", 3, ["unity", "`a`", "t"]),
    # Percent-encoded, once or twice, as clients send them.
    ("unity%2Edefault%2Et", 3, ["unity", "default", "t"]),
    ("unity%252Edefault%252Et", 3, ["unity", "default", "t"]),
    # A name that holds a '%' stays as it is once it has the parts.
    ("unity.default.a%2Eb", 3, ["unity", "default", "a%2Eb"]),
])
def test_split_full_name(full_name, parts, expected):
    assert split_full_name(full_name, parts, what="table") == expected


@pytest.mark.parametrize("full_name, parts", [
    ("unity.default", 3), ("unity.default.t.x", 3), ("unity..t", 3), (".default.t", 3), ("unity.default.", 3),
    ("", 1), ("unity.`new.db.t", 3), ("unity%00%2Edefault%2Et", 3),
])
def test_split_full_name_refuses_other_shapes(full_name, parts):
    with pytest.raises(InvalidParameter):
        split_full_name(full_name, parts, what="table")


@pytest.mark.parametrize("parts", [
    ("unity", "default", "t"), ("unity", "new.db", "t"), ("unity", "TEST NS", "ta.ble"), ("c", "a`b c", "t"),
])
def test_join_then_split_gives_the_parts_back(parts):
    joined = join_full_name(*parts)
    assert split_full_name(joined, len(parts), what="table") == list(parts)


def test_join_quotes_only_what_needs_it():
    assert join_full_name("unity", "default", "t") == "unity.default.t"
    assert join_full_name("unity", "new.db", "t") == "unity.`new.db`.t"


@pytest.mark.parametrize("name, iceberg, ok", [
    ("trips", False, True), ("a.b", False, False), ("a b", False, False), ("a/b", False, False),
    ("x" * 255, False, True), ("x" * 256, False, False), ("", False, False), (5, False, False),
    ("a.b", True, True), ("TEST NS", True, True), ("a/b", True, False), ("a`b", True, False),
    ("   ", True, False), ("a\tb", True, False),
])
def test_validate_name(name, iceberg, ok):
    if ok:
        assert validate_name(name, iceberg=iceberg) == name
    else:
        with pytest.raises(InvalidParameter):
            validate_name(name, iceberg=iceberg)


# -- page tokens -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["a", "trips", "ünïcödé", "with space", "x" * 300, "a=b", "a/b+c"])
def test_page_tokens_round_trip_and_are_url_safe(name):
    token = encode_page_token(name)
    assert set(token) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert decode_page_token(token) == name


def test_no_token_is_the_first_page():
    assert decode_page_token(None) is None
    assert decode_page_token("") is None


@pytest.mark.parametrize("token", ["!!", "a b", "%%", "_w", encode_page_token("a\x00b"), "/w==="])
def test_page_tokens_it_cannot_have_made_are_refused(token):
    with pytest.raises(InvalidParameter):
        decode_page_token(token)


# -- access ------------------------------------------------------------------------------------------
@pytest.fixture
def namespace():
    catalog = Catalog(name="shop", owner="alice")
    schema = Schema(name="sales", path="sales", catalog=catalog, owner="alice")
    table = Table(name="trips", schema=schema, owner="alice")
    return catalog, schema, table


def access(namespace, principal="bob", *, admin=False, held=None):
    catalog, schema, table = namespace
    by_id = {{"catalog": catalog, "schema": schema, "table": table}[where].id: set(privileges)
             for where, privileges in (held or {}).items()}
    return Access(principal=Principal(name=principal, is_metastore_admin=admin), chain=[table, schema, catalog],
                  _held=by_id)


def test_a_grant_is_inherited_downwards_only(namespace):
    on_schema = access(namespace, held={"schema": {Privilege.SELECT}})
    assert on_schema.has(Privilege.SELECT)  # the table, through its schema
    assert on_schema.has(Privilege.SELECT, 1)  # the schema itself
    assert not on_schema.has(Privilege.SELECT, 2)  # not the catalog above
    assert on_schema.why(Privilege.SELECT) == "inherited from a grant on schema shop.sales"
    assert on_schema.why(Privilege.SELECT, 1) == "granted on schema shop.sales"


def test_owners_hold_everything_below_what_they_own(namespace):
    owner = access(namespace, "alice")
    assert owner.owns() and owner.has(Privilege.MODIFY) and owner.can_use_schema()
    schema_owner = Access(principal=Principal(name="carol"), chain=access(namespace).chain, _held={})
    schema_owner.chain[1].owner = "carol"
    assert schema_owner.owns() and schema_owner.owns(1) and not schema_owner.owns(2)
    assert schema_owner.has(Privilege.SELECT) and not schema_owner.can_use_catalog()


def test_admins_hold_everything(namespace):
    admin = access(namespace, "root", admin=True)
    assert admin.owns(2) and admin.has(Privilege.CREATE_SCHEMA, 2) and admin.why(Privilege.SELECT) == "metastore admin"
    assert hidden_level(admin, SecurableType.TABLE) is None


def test_nothing_held_is_nothing(namespace):
    nobody = access(namespace)
    assert not nobody.has(Privilege.SELECT) and not nobody.owns() and not nobody.has_any_privilege()
    assert nobody.why(Privilege.SELECT) is None


@pytest.mark.parametrize("held, level", [
    ({}, 2),  # the catalog is the outermost thing not seen
    ({"catalog": {Privilege.USE_CATALOG}}, 1),
    ({"catalog": {Privilege.USE_CATALOG}, "schema": {Privilege.USE_SCHEMA}}, 0),
    ({"catalog": {Privilege.USE_CATALOG}, "schema": {Privilege.USE_SCHEMA}, "table": {Privilege.SELECT}}, None),
    ({"catalog": {Privilege.USE_CATALOG, Privilege.USE_SCHEMA, Privilege.MODIFY}}, None),
    ({"schema": {Privilege.USE_SCHEMA}, "table": {Privilege.SELECT}}, 2),
    ({"catalog": {Privilege.USE_CATALOG}, "schema": {Privilege.USE_SCHEMA}, "table": {Privilege.APPLY_POLICY}}, 0),
])
def test_what_a_caller_sees_of_a_table(namespace, held, level):
    assert hidden_level(access(namespace, held=held), SecurableType.TABLE) == level


# -- catalog-managed Delta tables: the checks of version 0 ---------------------------------------------
TABLE_ID = "11111111-2222-3333-4444-555555555555"


def version_zero(**changes) -> list[dict]:
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7,
                "readerFeatures": ["catalogManaged", "vacuumProtocolCheck"],
                "writerFeatures": ["catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"]}
    configuration = {"io.unitycatalog.tableId": TABLE_ID, "delta.enableInCommitTimestamps": "true"}
    protocol.update(changes.get("protocol", {}))
    configuration.update(changes.get("configuration", {}))
    return [{"commitInfo": {"timestamp": 1}}, {"protocol": protocol},
            {"metaData": {"id": "m", "configuration": configuration}}]


def test_a_valid_version_zero_passes():
    protocol, metadata = delta_log.validate_catalog_managed(version_zero(), table_id=TABLE_ID)
    assert protocol["minWriterVersion"] == 7 and metadata["id"] == "m"


@pytest.mark.parametrize("changes, problem", [
    ({"protocol": {"minReaderVersion": 1}}, "minReaderVersion must be at least 3"),
    ({"protocol": {"minWriterVersion": 2}}, "minWriterVersion must be at least 7"),
    ({"protocol": {"writerFeatures": ["inCommitTimestamp", "vacuumProtocolCheck"]}},
     "the table feature catalogManaged is missing"),
    ({"protocol": {"readerFeatures": ["vacuumProtocolCheck"]}}, "catalogManaged must be a reader feature too"),
    ({"protocol": {"writerFeatures": ["catalogManaged", "vacuumProtocolCheck"]}},
     "the table feature inCommitTimestamp is missing"),
    ({"protocol": {"readerFeatures": ["catalogManaged"]}}, "vacuumProtocolCheck must be a reader feature too"),
    ({"configuration": {"io.unitycatalog.tableId": "other"}}, f"io.unitycatalog.tableId must be {TABLE_ID}"),
    ({"configuration": {"delta.enableInCommitTimestamps": "false"}}, "delta.enableInCommitTimestamps must be true"),
])
def test_each_missing_requirement_is_named(changes, problem):
    with pytest.raises(delta_log.DeltaLogError, match=problem):
        delta_log.validate_catalog_managed(version_zero(**changes), table_id=TABLE_ID)


def test_every_problem_is_named_at_once():
    actions = version_zero(protocol={"minReaderVersion": 1, "minWriterVersion": 1},
                           configuration={"delta.enableInCommitTimestamps": "no"})
    with pytest.raises(delta_log.DeltaLogError) as raised:
        delta_log.validate_catalog_managed(actions, table_id=TABLE_ID)
    assert str(raised.value).count(";") == 2


@pytest.mark.parametrize("actions, problem", [
    ([{"metaData": {}}], "no protocol action"),
    ([{"protocol": {}}], "no metaData action"),
])
def test_version_zero_needs_protocol_and_metadata(actions, problem):
    with pytest.raises(delta_log.DeltaLogError, match=problem):
        delta_log.validate_catalog_managed(actions, table_id=TABLE_ID)


@pytest.mark.parametrize("data, problem", [
    (b"\xff\xfe", "not UTF-8"), (b'{"a": 1}\nnot json', "line 2"), (b"[1]", "not a JSON object"),
])
def test_commit_files_that_are_not_actions(data, problem):
    with pytest.raises(delta_log.DeltaLogError, match=problem):
        delta_log.parse_actions(data)


def test_commit_files_skip_blank_lines():
    assert delta_log.parse_actions(b'{"add": {}}\n\n{"remove": {}}\n') == [{"add": {}}, {"remove": {}}]


# -- Iceberg view metadata -----------------------------------------------------------------------------
SCHEMA = {"type": "struct", "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def view_version(sql: str) -> dict:
    return {"timestamp-ms": 1, "summary": {"engine-name": "test"}, "default-namespace": ["default"],
            "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}]}


@pytest.fixture
def view():
    return create_view_metadata(schema=SCHEMA, view_version=view_version("select 1"),
                                location="s3://b/views/v", properties={"a": "1"})


def as_dict(metadata) -> dict:
    return json.loads(metadata.model_dump_json(by_alias=True))


def test_a_new_view_has_one_version_and_schema(view):
    data = as_dict(view)
    assert data["current-version-id"] == 1 and [v["version-id"] for v in data["versions"]] == [1]
    assert [s["schema-id"] for s in data["schemas"]] == [0]
    assert data["properties"] == {"a": "1"}


def test_adding_a_version_with_a_new_schema_and_making_it_current(view):
    updated = apply_view_updates(view, [
        {"action": "add-schema", "schema": {**SCHEMA, "schema-id": 7}},
        {"action": "add-view-version", "view-version": {**view_version("select 2"), "schema-id": -1}},
        {"action": "set-current-view-version", "view-version-id": -1},
        {"action": "set-properties", "updates": {"b": "2"}},
        {"action": "remove-properties", "removals": ["a"]},
    ])
    data = as_dict(updated)
    assert [s["schema-id"] for s in data["schemas"]] == [0, 1]  # ids are the catalog's to assign
    assert data["current-version-id"] == 2
    assert next(v for v in data["versions"] if v["version-id"] == 2)["schema-id"] == 1
    assert [entry["version-id"] for entry in data["version-log"]] == [1, 2]
    assert data["properties"] == {"b": "2"}
    assert as_dict(view)["current-version-id"] == 1  # the base is not changed


@pytest.mark.parametrize("updates", [
    "not a list",
    [{"action": "no-such-thing"}],
    [{"action": "assign-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
    [{"action": "upgrade-format-version", "format-version": 2}],
    [{"action": "set-location"}],
    [{"action": "set-properties", "updates": ["a"]}],
    [{"action": "set-properties", "updates": {"a": 1}}],
    [{"action": "add-view-version", "view-version": {**view_version("select 2"), "schema-id": -1}}],
    [{"action": "set-current-view-version", "view-version-id": -1}],
    [{"action": "set-current-view-version", "view-version-id": 9}],
    [{"action": "add-schema", "schema": "not an object"}],
])
def test_view_updates_that_cannot_apply_are_bad_input(view, updates):
    with pytest.raises(InvalidParameter):
        apply_view_updates(view, updates)


def test_view_requirements(view):
    check_view_requirements(None, view)
    check_view_requirements([{"type": "assert-view-uuid", "uuid": str(view.view_uuid)}], view)
    with pytest.raises(CommitFailed):
        check_view_requirements([{"type": "assert-view-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}], view)
    with pytest.raises(InvalidParameter):
        check_view_requirements([{"type": "assert-table-uuid", "uuid": "x"}], view)
    with pytest.raises(InvalidParameter):
        check_view_requirements({"type": "assert-view-uuid"}, view)


# -- the error table ---------------------------------------------------------------------------------
def test_every_error_has_one_row_with_a_status_per_protocol():
    rows = errors.status_table()
    assert len({row["error"] for row in rows}) == len(rows)
    for row in rows:
        assert 400 <= row["uc"] < 600 and 400 <= row["delta"] < 600 and 400 <= row["iceberg"] < 600, row
        assert row["error_code"] and row["iceberg_type"].endswith("Exception"), row


def test_envelopes_of_one_error():
    error = errors.TableDoesNotExist("Table a.b.c does not exist.")
    assert errors.uc_body(error) == {"error_code": "TABLE_DOES_NOT_EXIST", "message": "Table a.b.c does not exist.",
                                     "details": []}
    assert errors.iceberg_body(error) == {"error": {"message": "Table a.b.c does not exist.",
                                                    "type": "NoSuchTableException", "code": 404}}


def test_framework_errors_map_onto_catalog_errors():
    from rest_framework import exceptions

    assert errors.translate(exceptions.NotAuthenticated()).status == 401
    assert errors.translate(exceptions.MethodNotAllowed("PUT")).error_code == "METHOD_NOT_ALLOWED"
    flattened = errors.translate(exceptions.ValidationError({"a": {"b": ["bad"]}, "non_field_errors": ["worse"]}))
    assert flattened.message == "a.b: bad; worse"
    assert errors.translate(ValueError("x")) is None


# -- bodies: a refusal names the first wrong member by its path, as the APIs always have -------------
TABLE = {"table_id": "0b9e1c2a-1111-2222-3333-444455556666", "table_uri": "s3://b/t"}
COMMIT = {"version": 3, "timestamp": 1, "file_name": "00000000000000000003.x.json", "file_size": 1,
          "file_modification_timestamp": 1}


@pytest.mark.parametrize("change, message", [
    ({"version": 0}, "commit_info.version must be at least 1 (is 0)."),
    ({"version": "3"}, "commit_info.version must be an integer."),
    ({"version": True}, "commit_info.version must be an integer."),
    ({"version": 1.0}, "commit_info.version must be an integer."),
    ({"version": 2**63}, "commit_info.version is out of range."),
    ({"version": -(2**64)}, "commit_info.version is out of range."),
    ({"version": None}, "commit_info.version is required."),
    ({"file_name": ""}, "commit_info.file_name must not be empty."),
    ({"file_name": 7}, "commit_info.file_name must be a string."),
    ({"file_name": "a/b"}, "commit_info.file_name must be a single file name, not a path."),
    ({"file_size": 0, "version": 0}, "commit_info.version must be at least 1 (is 0)."),  # the first in order
])
def test_a_commit_body_is_refused_at_its_first_wrong_member(change, message):
    with pytest.raises(InvalidParameter) as refused:
        read(delta_wire.DeltaCommitRequest, {**TABLE, "commit_info": {**COMMIT, **change}})
    assert refused.value.message == message


@pytest.mark.parametrize("body, message", [
    ([], "The request body must be an object."),
    ({**TABLE, "table_id": "nope"}, "table_id 'nope' is not a valid id."),
    ({**TABLE, "table_id": 5, "table_uri": 5}, "table_id is required."),
    ({**TABLE, "commit_info": []}, "commit_info must be an object."),
    ({**TABLE, "metadata": {"partition_columns": ["a", ""]}}, "metadata.partition_columns[1] must not be empty."),
    ({**TABLE, "metadata": {"schema": 3}}, "metadata.schema must be an array of columns or {columns: [...]}."),
    ({**TABLE, "metadata": {"properties": {"a": 1}}}, "metadata.properties must map strings to strings; 'a' does not."),
])
def test_a_body_is_refused_in_the_words_of_its_api(body, message):
    with pytest.raises(InvalidParameter) as refused:
        read(delta_wire.DeltaCommitRequest, body)
    assert refused.value.message == message


def test_query_parameters_are_read_from_digits_and_nothing_else():
    assert read(delta_wire.DeltaGetCommitsParameters, {**TABLE, "start_version": "3"}).start_version == 3
    for text, message in ((" 3", "start_version must be an integer."), ("3.0", "start_version must be an integer."),
                          ("-1", "start_version must be at least 0 (is -1).")):
        with pytest.raises(InvalidParameter) as refused:
            read(delta_wire.DeltaGetCommitsParameters, {**TABLE, "start_version": text})
        assert refused.value.message == message


def test_the_delta_rest_api_reads_a_commit_in_its_own_spelling():
    commit = {name.replace("_", "-"): value for name, value in COMMIT.items()}
    assert read(delta_wire.DeltaCommit, commit, "add-commit.commit").file_name == COMMIT["file_name"]
    with pytest.raises(InvalidParameter) as refused:
        read(delta_wire.DeltaCommit, {**commit, "file-name": ".."}, "add-commit.commit")
    assert refused.value.message == "add-commit.commit.file-name must be a single file name, not a path."


# The Delta REST API's updateTable: its model words each refusal, in each kind, as the API always has.
UUID_REQUIREMENT = {"type": "assert-table-uuid", "uuid": TABLE["table_id"]}


@pytest.mark.parametrize("body, kind, message", [
    ({"requirements": [UUID_REQUIREMENT], "updates": {}}, "BadRequest", "requirements and updates must be arrays."),
    ({"requirements": [{"type": ["assert-etag"]}], "updates": [{"action": "add-commit"}]}, "BadRequest",
     "requirements[0].type must be assert-table-uuid or assert-etag."),
    ({"requirements": [UUID_REQUIREMENT], "updates": [{"action": "{path}"}]}, "BadRequest",
     "updates[0].action '{path}' is not an action of this API."),
    ({"requirements": [{**UUID_REQUIREMENT, "uuid": 5}], "updates": [{"action": "set-table-comment"}]},
     "InvalidParameter", "requirements[0].uuid is required."),
    ({"requirements": [UUID_REQUIREMENT], "updates": [{"action": "set-columns", "columns": None}]},
     "InvalidParameter", "set-columns.columns is required."),
    ({"requirements": [UUID_REQUIREMENT], "updates": [{"action": "update-metadata-snapshot-version",
                                                       "last-commit-version": -1}]},
     "InvalidParameter", "last-commit-version must be at least 0 (is -1)."),
    # The first wrong domain in the body's order is named, known or not.
    ({"requirements": [UUID_REQUIREMENT], "updates": [{"action": "set-domain-metadata", "updates": {
        "delta.clustering": {"clusteringColumns": 1}, "other": {}}}]},
     "InvalidParameter", "set-domain-metadata.updates.delta.clustering.clusteringColumns must be an array of paths."),
    ({"requirements": [UUID_REQUIREMENT], "updates": [{"action": "set-domain-metadata", "updates": {
        "other": {}, "delta.clustering": {"clusteringColumns": 1}}}]},
     "InvalidParameter", "set-domain-metadata.updates: unknown domain 'other' (known: delta.clustering, "
                         "delta.rowTracking)."),
])
def test_an_update_of_the_delta_rest_api_is_refused_in_its_words(body, kind, message):
    with pytest.raises(InvalidParameter) as refused:
        read(DeltaUpdateTableRequest, body)
    assert (type(refused.value).__name__, refused.value.message) == (kind, message)


# -- the recipes' names for a securable type -----------------------------------------------------------
@pytest.mark.parametrize("securable_type, what, updated, deleted", [
    (SecurableType.CATALOG, "Catalog", "updateCatalog", "deleteCatalog"),
    (SecurableType.REGISTERED_MODEL, "Registered model", "updateRegisteredModel", "deleteRegisteredModel"),
    (SecurableType.EXTERNAL_LOCATION, "External location", "updateExternalLocation", "deleteExternalLocation"),
])
def test_a_securable_type_names_its_conflicts_updates_and_deletions(securable_type, what, updated, deleted):
    kind = recipes.Updatable(securable_type=securable_type)
    assert kind.what == what and kind.audit_action == updated
    assert audit.change_of(securable_type, "delete") == deleted


# -- what a commit changes of a table's definition (commits.formats.definition) -----------------------
def _delta_definition(*fields, partitions=(), **properties):
    from commits.formats.definition import DeltaDefinition

    columns = [{"name": name, "type_name": kind.upper(), "type_text": kind, "nullable": nullable, "position": index,
                "type_json": json.dumps({"name": name, "type": kind, "nullable": nullable, "metadata": {}}),
                "partition_index": partitions.index(name) if name in partitions else None}
               for index, (name, kind, nullable) in enumerate(fields)]
    return DeltaDefinition.of(columns, properties)


def test_delta_definition_changes():
    from commits.formats.definition import delta_changes, staged_delta_changes

    base = _delta_definition(("id", "long", False), ("city", "string", True),
                             **{"delta.feature.catalogManaged": "supported", "delta.minWriterVersion": "7"})
    same = _delta_definition(("id", "long", False), ("city", "string", True), **{
        "delta.feature.catalogManaged": "supported", "delta.minWriterVersion": "7",
        "delta.logRetentionDuration": "interval 7 days", "delta.lastUpdateVersion": "3"})
    assert delta_changes(base, same) == []
    assert delta_changes(base, _delta_definition(("id", "long", True), ("city", "string", True),
                                                 **base.properties)) == ["schema"]
    assert delta_changes(base, _delta_definition(("id", "long", False), ("city", "string", True),
                                                 partitions=("city",), **base.properties)) == ["partition columns"]
    assert delta_changes(base, _delta_definition(("id", "long", False), ("city", "string", True), **{
        **base.properties, "delta.feature.typeWidening": "supported", "delta.enableChangeDataFeed": "true"})) == [
        "protocol", "property delta.enableChangeDataFeed"]
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}},
                                           {"name": "city", "type": "string", "nullable": True, "metadata": {}}]}
    repeated = {"schemaString": json.dumps(schema), "partitionColumns": [],
                "configuration": {"io.unitycatalog.tableId": "t", "delta.checkpointInterval": "5"}}
    assert staged_delta_changes(base, repeated, None) == []
    widened = {**repeated, "schemaString": json.dumps({**schema, "fields": [*schema["fields"], {
        "name": "zip", "type": "string", "nullable": True, "metadata": {}}]})}
    assert staged_delta_changes(base, widened, None) == ["schema"]
    assert staged_delta_changes(base, None, {"minReaderVersion": 3, "minWriterVersion": 7,
                                             "writerFeatures": ["catalogManaged"]}) == []
    assert staged_delta_changes(base, None, {"minReaderVersion": 3, "minWriterVersion": 7,
                                             "writerFeatures": ["catalogManaged", "columnMapping"]}) == ["protocol"]


def test_iceberg_definition_changes():
    from commits.formats.definition import iceberg_changes

    data = [{"action": "add-snapshot", "snapshot": {}}, {"action": "set-snapshot-ref", "ref-name": "main"},
            {"action": "set-properties", "updates": {"write.target-file-size-bytes": "1024", "comment": "x"}}]
    assert iceberg_changes(data, {"owner": "o"}) == []
    assert iceberg_changes([{"action": "add-schema"}, {"action": "set-current-schema"}], {}) == ["schema"]
    assert iceberg_changes([{"action": "upgrade-format-version"}, {"action": "add-sort-order"}], {}) == [
        "format version", "sort order"]
    assert iceberg_changes([{"action": "remove-properties", "removals": ["owner", "write.x"]}],
                           {"owner": "o", "write.x": "1"}) == ["property owner"]
    assert iceberg_changes([{"action": "set-properties", "updates": {"owner": "o"}}], {"owner": "o"}) == []
