"""The common Iceberg updates applied to the metadata's JSON form (commits.formats.iceberg
.next_metadata) give exactly what pyiceberg's models give: the same metadata for every update
it handles, and the same error, word for word, for every update that fails. Pure: no database,
no storage."""

from __future__ import annotations

import json
import uuid

import pytest

from commits.formats import iceberg as formats
from commits.formats import iceberg_json
from ucweb.errors import CommitFailed, InvalidParameter

NOW = 1_700_000_999_000
LOCATION = "file:///warehouse/db/t"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": False},
    {"id": 2, "name": "city", "type": "string", "required": False}]}


@pytest.fixture(autouse=True)
def frozen_clock(monkeypatch):
    """Both paths read the clock for last-updated-ms: the same instant for both."""
    import pyiceberg.table.update as pyiceberg_update

    monkeypatch.setattr(pyiceberg_update, "datetime_to_millis", lambda _: NOW)
    monkeypatch.setattr(iceberg_json, "now_ms", lambda: NOW)


def _new_table() -> tuple[str, str]:
    metadata = formats.create_metadata(schema=SCHEMA, partition_spec=None, write_order=None, location=LOCATION,
                                       properties={"owner": "ann"}, table_uuid=uuid.uuid4())
    return formats.serialize(metadata), f"{LOCATION}/metadata/00000-{uuid.uuid4()}.metadata.json"


def _by_model(text, requirements, updates, location):
    current = formats.parse_metadata(text)
    formats.check_requirements(requirements, current)
    return json.loads(formats.serialize(formats.apply_updates(current, updates, metadata_location=location)))


def _outcome(call):
    try:
        return "ok", call()
    except (CommitFailed, InvalidParameter) as exc:
        return type(exc).__name__, str(exc)


class Table:
    """A table moved commit by commit through next_metadata, each commit checked against the
    model path from the same metadata."""

    def __init__(self):
        self.text, self.location = _new_table()
        self.version = 0

    @property
    def data(self) -> dict:
        return json.loads(self.text)

    def commit(self, updates, requirements=(), *, json_form=True):
        requirements = formats.parse_requirements(list(requirements))
        updates = formats.parse_updates(updates)
        expected = _outcome(lambda: _by_model(self.text, requirements, updates, self.location))
        steps = []
        actual = _outcome(lambda: steps.append(formats.next_metadata(
            self.text, requirements, updates, metadata_location=self.location)) or json.loads(steps[-1].metadata.text))
        assert actual == expected
        if actual[0] != "ok":
            return actual
        step = steps[-1]
        assert (step.metadata._data is not None) is json_form
        assert not step.columns_changed or not json_form
        self.text = step.metadata.text
        self.version += 1
        self.location = f"{LOCATION}/metadata/{self.version:05d}-{uuid.uuid4()}.metadata.json"
        return actual


def _snapshot(table: Table, snapshot_id: int, *, parent="current", sequence=None, timestamp=1_700_000_000_000):
    data = table.data
    if parent == "current":
        parent = data.get("current-snapshot-id")
    snapshot = {"snapshot-id": snapshot_id, "sequence-number": sequence or data["last-sequence-number"] + 1,
                "timestamp-ms": timestamp + snapshot_id, "manifest-list": f"{LOCATION}/metadata/snap-{snapshot_id}.avro",
                "summary": {"operation": "append", "added-records": "10"}, "schema-id": 0}
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    return {"action": "add-snapshot", "snapshot": snapshot}


def _append(table: Table, snapshot_id: int, **kwargs):
    parent = table.data.get("current-snapshot-id")
    return table.commit(
        [_snapshot(table, snapshot_id, **kwargs),
         {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}],
        [{"type": "assert-table-uuid", "uuid": table.data["table-uuid"]},
         {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}])


def _statistics(snapshot_id: int) -> dict:
    return {"snapshot-id": snapshot_id, "statistics-path": f"{LOCATION}/metadata/stats-{snapshot_id}.puffin",
            "file-size-in-bytes": 100, "file-footer-size-in-bytes": 10, "blob-metadata": [
                {"type": "apache-datasketches-theta-v1", "snapshot-id": snapshot_id, "sequence-number": 1,
                 "fields": [1], "properties": {"ndv": "3"}}]}


def test_properties():
    table = Table()
    table.commit([{"action": "set-properties", "updates": {"a": "1", "b": "2"}}],
                 [{"type": "assert-table-uuid", "uuid": table.data["table-uuid"]}])
    table.commit([{"action": "remove-properties", "removals": ["a"]},
                  {"action": "set-properties", "updates": {"c": "3"}}])
    table.commit([{"action": "set-properties", "updates": {}}])  # no change: no metadata-log entry
    assert table.commit([{"action": "remove-properties", "removals": ["missing"]}])[0] == "InvalidParameter"
    assert table.data["properties"] == {"owner": "ann", "b": "2", "c": "3"}
    assert len(table.data["metadata-log"]) == 2


def test_appends_refs_and_snapshot_log():
    table = Table()
    _append(table, 101)
    _append(table, 102)
    table.commit([{"action": "set-snapshot-ref", "ref-name": "v1", "type": "tag", "snapshot-id": 101,
                   "max-ref-age-ms": 1000}])
    table.commit([{"action": "set-snapshot-ref", "ref-name": "dev", "type": "branch", "snapshot-id": 101,
                   "min-snapshots-to-keep": 2, "max-snapshot-age-ms": 5000}])
    # The same ref again changes nothing but last-updated-ms stays and no log entry is added.
    table.commit([{"action": "set-snapshot-ref", "ref-name": "v1", "type": "tag", "snapshot-id": 101,
                   "max-ref-age-ms": 1000}])
    table.commit([{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 101}])
    table.commit([_snapshot(table, 103, parent=101),
                  {"action": "set-snapshot-ref", "ref-name": "dev", "type": "branch", "snapshot-id": 103}])
    data = table.data
    assert data["current-snapshot-id"] == 101 and data["refs"]["dev"]["snapshot-id"] == 103
    assert [entry["snapshot-id"] for entry in data["snapshot-log"]] == [101, 102, 101]


def test_failed_checks_answer_as_pyiceberg():
    table = Table()
    _append(table, 201)
    uuid_now = table.data["table-uuid"]
    assert table.commit([{"action": "set-properties", "updates": {"x": "1"}}],
                        [{"type": "assert-table-uuid", "uuid": str(uuid.uuid4())}])[0] == "CommitFailed"
    assert table.commit([{"action": "set-properties", "updates": {"x": "1"}}],
                        [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 999}])[0] == "CommitFailed"
    assert table.commit([{"action": "set-properties", "updates": {"x": "1"}}],
                        [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}])[0] == "CommitFailed"
    assert table.commit([{"action": "set-properties", "updates": {"x": "1"}}],
                        [{"type": "assert-ref-snapshot-id", "ref": "nope", "snapshot-id": 5}])[0] == "CommitFailed"
    assert table.commit([{"action": "set-properties", "updates": {"x": "1"}}],
                        [{"type": "assert-current-schema-id", "current-schema-id": 7}])[0] == "CommitFailed"
    assert table.commit([{"action": "set-properties", "updates": {"x": "1"}}],
                        [{"type": "assert-create"}])[0] == "CommitFailed"
    table.commit([{"action": "set-properties", "updates": {"x": "1"}}], [
        {"type": "assert-table-uuid", "uuid": uuid_now.upper()},
        {"type": "assert-current-schema-id", "current-schema-id": 0},
        {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2},
        {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 999},
        {"type": "assert-default-spec-id", "default-spec-id": 0},
        {"type": "assert-default-sort-order-id", "default-sort-order-id": 0},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 201},
        {"type": "assert-ref-snapshot-id", "ref": "other", "snapshot-id": None}])
    # Snapshot id taken, sequence number going back, unknown snapshot for a ref.
    assert table.commit([_snapshot(table, 201)])[0] == "InvalidParameter"
    assert table.commit([_snapshot(table, 202, sequence=1)])[0] == "InvalidParameter"
    assert table.commit([{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                          "snapshot-id": 404}])[0] == "InvalidParameter"
    assert table.commit([{"action": "remove-snapshots", "snapshot-ids": [404]}])[0] == "InvalidParameter"
    assert table.commit([{"action": "remove-statistics", "snapshot-id": 201}])[0] == "InvalidParameter"


def test_removing_snapshots_refs_and_statistics():
    table = Table()
    for snapshot_id in (301, 302, 303):
        _append(table, snapshot_id)
    table.commit([{"action": "set-snapshot-ref", "ref-name": "old", "type": "tag", "snapshot-id": 301},
                  {"action": "set-statistics", "statistics": _statistics(301)},
                  {"action": "set-statistics", "statistics": _statistics(303)},
                  {"action": "set-partition-statistics", "partition-statistics": {
                      "snapshot-id": 302, "statistics-path": f"{LOCATION}/p.parquet", "file-size-in-bytes": 5}}])
    table.commit([{"action": "set-statistics", "statistics": {**_statistics(303), "file-size-in-bytes": 200}}])
    table.commit([{"action": "remove-snapshots", "snapshot-ids": [301]}])
    data = table.data
    assert [s["snapshot-id"] for s in data["snapshots"]] == [302, 303]
    assert "parent-snapshot-id" not in data["snapshots"][0] and "old" not in data["refs"]
    assert [s["snapshot-id"] for s in data["statistics"]] == [303]
    table.commit([{"action": "remove-partition-statistics", "snapshot-id": 302},
                  {"action": "remove-statistics", "snapshot-id": 303}])
    table.commit([{"action": "remove-snapshot-ref", "ref-name": "nope"}])
    table.commit([{"action": "remove-snapshot-ref", "ref-name": "main"}])
    assert "current-snapshot-id" not in table.data
    table.commit([{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 302}])
    table.commit([{"action": "remove-snapshots", "snapshot-ids": [303, 302]}])
    assert table.data["snapshots"] == [] and table.data["refs"] == {}


def test_metadata_log_keeps_the_configured_number_of_versions():
    table = Table()
    table.commit([{"action": "set-properties", "updates": {"write.metadata.previous-versions-max": "3"}}])
    for index in range(5):
        table.commit([{"action": "set-properties", "updates": {"n": str(index)}}])
    assert len(table.data["metadata-log"]) == 3
    assert table.commit([{"action": "set-properties", "updates": {"write.metadata.previous-versions-max": "x"}}],
                        )[0] == "InvalidParameter"


def test_other_updates_go_through_the_models():
    table = Table()
    schema = {**SCHEMA, "schema-id": 1, "fields": [*SCHEMA["fields"],
                                                   {"id": 3, "name": "extra", "type": "int", "required": False}]}
    table.commit([{"action": "add-schema", "schema": schema},
                  {"action": "set-current-schema", "schema-id": -1},
                  {"action": "set-properties", "updates": {"a": "1"}}], json_form=False)
    table.commit([{"action": "set-properties", "updates": {"a": "2"}}])
    assert table.data["current-schema-id"] == 1


def test_metadata_that_is_not_in_the_written_form_goes_through_the_models():
    table = Table()
    _append(table, 401)
    data = table.data
    del data["refs"]  # a writer that leaves the main ref out: the model adds it
    table.text = json.dumps(data)
    table.commit([{"action": "set-properties", "updates": {"a": "1"}}], json_form=False)
    assert table.data["refs"]["main"]["snapshot-id"] == 401
    data = table.data
    data["current-snapshot-id"], data["refs"] = -1, {}
    table.text = json.dumps(data)
    table.commit([{"action": "set-properties", "updates": {"a": "2"}}], json_form=False)


def test_numbers_written_as_text_go_through_the_models():
    """A registered file is stored as it was read; pyiceberg reads "5" as 5, the JSON path would
    compare and copy the text (a TypeError on the next snapshot, or a duplicate id let through)."""
    spelled_as_text = {
        "last-sequence-number": lambda data: data.update({"last-sequence-number": str(data["last-sequence-number"])}),
        "last-updated-ms": lambda data: data.update({"last-updated-ms": str(data["last-updated-ms"])}),
        "snapshot-id": lambda data: data["snapshots"][0].update({"snapshot-id": "501"}),
        "sequence-number": lambda data: data["snapshots"][0].update({"sequence-number": "1"}),
        "timestamp-ms": lambda data: data["snapshots"][0].update({"timestamp-ms": "1700000000501"}),
        "ref snapshot-id": lambda data: data["refs"]["main"].update({"snapshot-id": "501"}),
        "statistics snapshot-id": lambda data: data["statistics"][0].update({"snapshot-id": "501"}),
        "a boolean": lambda data: data.update({"last-sequence-number": True}),
    }
    for what, spell in spelled_as_text.items():
        table = Table()
        _append(table, 501)
        table.commit([{"action": "set-statistics", "snapshot-id": 501, "statistics": _statistics(501)}])
        data = table.data
        spell(data)
        table.text = json.dumps(data)
        assert table.commit([_snapshot(table, 501, parent=None, sequence=7)], json_form=False)[0] != "ok", what
        assert table.commit([{"action": "set-properties", "updates": {"a": "1"}}], json_form=False)[0] == "ok", what
        table.commit([_snapshot(table, 502, sequence=2)])
        assert [s["snapshot-id"] for s in table.data["snapshots"]] == [501, 502], what


def test_text_is_written_as_ascii():
    """A value with a lone surrogate (valid JSON, not encodable as UTF-8) stays writable."""
    text, location = _new_table()
    step = formats.next_metadata(text, [], formats.parse_updates(
        [{"action": "set-properties", "updates": {"comment": "café \ud800"}}]), metadata_location=location)
    assert step.metadata.text.isascii()
    assert json.loads(step.metadata.text)["properties"]["comment"] == "café \ud800"
