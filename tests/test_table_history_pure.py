"""The pure parts of the table page: a commit's operation and figures from its actions, schema and
property diffs, the names a view's SQL reads, and types in Spark SQL's spelling."""

from __future__ import annotations

import json

from catalog.admin.ddl import spark_type
from catalog.admin.lineage import referenced_names
from commits.formats import history


def add(path, rows=None, data_change=True):
    action = {"path": path, "size": 100, "dataChange": data_change}
    if rows is not None:
        action["stats"] = json.dumps({"numRecords": rows})
    return {"add": action}


def remove(path, data_change=True):
    return {"remove": {"path": path, "size": 40, "dataChange": data_change}}


def test_the_operation_is_the_writers_word_else_derived_from_the_actions():
    assert history.operation("MERGE", [add("a")]) == ("MERGE", False)
    assert history.operation("UNKNOWN", [add("a")]) == ("WRITE (append)", True)
    assert history.operation("", [remove("a")]) == ("DELETE", True)
    assert history.operation(None, [add("a"), remove("b")]) == ("WRITE (overwrite or update)", True)
    assert history.operation("UNKNOWN", [add("a", data_change=False), remove("b", data_change=False)]) == (
        "rewrite without data change", True)
    assert history.operation("UNKNOWN", [{"metaData": {}}]) == ("change of definition", True)
    assert history.operation("UNKNOWN", None) == ("UNKNOWN", False)  # unreadable: said as sent


def test_figures_count_rows_only_when_every_file_says():
    figures = history.delta_figures([{"commitInfo": {}}, add("a", 3), add("b", 4), remove("c")])
    assert figures == {"files_added": 2, "files_removed": 1, "bytes_added": 200, "bytes_removed": 40,
                       "rows_added": 7, "rows_removed": None}
    assert history.delta_figures([add("a", 3), add("b")])["rows_added"] is None


def test_column_diff_follows_iceberg_ids_through_a_rename():
    before = history.iceberg_columns({"fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "town", "required": False, "type": "string"},
        {"id": 3, "name": "gone", "required": False, "type": "int"}]})
    after = history.iceberg_columns({"fields": [
        {"id": 1, "name": "id", "required": False, "type": "long", "doc": "key"},
        {"id": 2, "name": "city", "required": False, "type": "string"},
        {"id": 4, "name": "tags", "required": False,
         "type": {"type": "list", "element-id": 5, "element": "string", "element-required": False}}]})
    assert history.column_diff(before, after) == [
        {"change": "changed", "name": "id", "type": "long", "what": "now nullable; comment (none) → key"},
        {"change": "changed", "name": "city", "type": "string", "what": "renamed from town"},
        {"change": "added", "name": "tags", "type": "list<string>", "what": ""},
        {"change": "dropped", "name": "gone", "type": "int", "what": ""},
    ]


def test_delta_columns_and_a_first_version_adds_every_column():
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {"comment": "key"}},
        {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": "integer",
                               "valueContainsNull": True}, "nullable": True, "metadata": {}}]}
    columns = history.delta_columns({"schemaString": json.dumps(schema)})
    assert [(c["name"], c["type"], c["nullable"], c["comment"]) for c in columns] == [
        ("id", "bigint", False, "key"), ("m", "map<string,int>", True, "")]
    assert [d["change"] for d in history.column_diff(None, columns)] == ["added", "added"]


def test_property_diff():
    assert history.property_diff({"a": "1", "b": "2"}, {"b": "3", "c": "4"}) == [
        {"key": "a", "before": "1", "after": None}, {"key": "b", "before": "2", "after": "3"},
        {"key": "c", "before": None, "after": "4"}]


def test_the_names_a_view_reads():
    sql = """-- FROM commented.out.table
        SELECT a.x, 'FROM quoted.string.literal' AS s
        FROM sales.orders.items AS a
        JOIN `weird name`.b ON true
        LEFT JOIN "Q"."R"."S" USING (x)
        WHERE a.y IN (SELECT y FROM plain) /* JOIN hidden.in.comment */"""
    assert referenced_names(sql, "cat", "sch") == [
        "sales.orders.items", "cat.weird name.b", "q.r.s", "cat.sch.plain"]
    assert referenced_names("", "c", "s") == []


def test_spark_types_of_delta_and_iceberg_columns():
    assert spark_type("long", iceberg=False) == "BIGINT"
    assert spark_type("timestamp", iceberg=False) == "TIMESTAMP"
    assert spark_type("timestamp", iceberg=True) == "TIMESTAMP_NTZ"
    assert spark_type("decimal(9, 2)", iceberg=True) == "DECIMAL(9,2)"
    assert spark_type({"type": "struct", "fields": [{"name": "a", "type": "integer"}]}, iceberg=False) == \
        "STRUCT<`a`: INT>"
    assert spark_type({"type": "list", "element-id": 2, "element": "long"}, iceberg=True) == "ARRAY<BIGINT>"
    assert spark_type({"type": "map", "keyType": "string", "valueType": "double"}, iceberg=False) == \
        "MAP<STRING, DOUBLE>"
