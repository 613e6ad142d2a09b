"""The Delta format modules are pure (commits.formats): no database, no storage."""

from types import SimpleNamespace

import pytest

from commits.formats import delta_log, delta_protocol, delta_types


def test_log_layout():
    assert delta_log.commit_path(1) == "_delta_log/00000000000000000001.json"
    assert delta_log.FIRST_COMMIT == "_delta_log/00000000000000000000.json"
    assert delta_log.checkpoint_path(10) == "_delta_log/00000000000000000010.checkpoint.parquet"
    assert delta_log.staged_path("x.json") == "_delta_log/_staged_commits/x.json"
    name = delta_log.staged_file_name(7, "u")
    assert name == "00000000000000000007.u.json" and delta_log.log_file_version(name) == 7
    assert delta_log.log_file_version("_last_checkpoint") is None
    assert delta_log.is_staged("s3://b/t/_delta_log/_staged_commits/" + name)
    assert not delta_log.is_staged("s3://b/t/_delta_log/" + name)


def test_actions_round_trip():
    actions = [{"commitInfo": {"inCommitTimestamp": 5, "operation": "WRITE"}}, {"add": {"path": "a"}}]
    assert delta_log.parse_actions(delta_log.encode_actions(actions)) == actions
    assert delta_log.commit_timestamp(delta_log.first(actions, "commitInfo")) == 5
    with pytest.raises(delta_log.DeltaLogError):
        delta_log.parse_actions(b"[1]\n")


@pytest.mark.parametrize("dv, path", [
    ({"storageType": "u", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA"},
     "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"),
    ({"storageType": "p", "pathOrInlineDv": "s3://b/dv.bin"}, "s3://b/dv.bin"),
    ({"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"}, None),
])
def test_deletion_vector_paths(dv, path):
    assert delta_log.deletion_vector_path(dv) == path


def test_a_column_renders_as_the_delta_field_it_was_declared_as():
    field = {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True},
             "nullable": True, "metadata": {}}
    column = delta_types.field_to_column(field, 0, [])
    assert column["type_name"] == "ARRAY" and column["type_text"] == "array<string>"
    rendered = delta_types.column_to_field(SimpleNamespace(comment="c", **{
        k: column[k] for k in ("name", "type_json", "type_name", "type_text", "type_precision", "type_scale",
                               "nullable")}))
    assert rendered["type"] == {"type": "array", "element-type": "string", "contains-null": True}
    assert rendered["metadata"] == {"comment": "c"}
    assert delta_types.wire_to_log(rendered["type"]) == field["type"]


def test_the_protocol_projection_round_trips():
    properties = delta_protocol.protocol_properties(delta_protocol.REQUIRED_PROTOCOL)
    assert properties["delta.feature.catalogManaged"] == "supported"
    action = delta_protocol.protocol_of(properties)
    assert action["minReaderVersion"] == 3 and "catalogManaged" in action["readerFeatures"]
    assert "inCommitTimestamp" not in action["readerFeatures"]
    assert delta_protocol.is_synthetic("delta.feature.x") and not delta_protocol.is_synthetic("delta.appendOnly")
