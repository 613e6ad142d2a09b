"""The `CREATE TABLE` statement in Spark SQL that makes a table like this one: its columns (types,
NOT NULL, comments) from the catalog's columns, USING DELTA or ICEBERG, PARTITIONED BY or CLUSTER
BY, LOCATION for an external table, and the table's own properties (not those the catalog or the
Delta protocol derive, which a new table gets by itself)."""

from __future__ import annotations

import json

from catalog.choices import DataSourceFormat, TableType
from commits.formats import delta_protocol as dp
from commits.formats.delta_log import TABLE_ID_PROPERTY

# Delta's and Iceberg's primitive type names in Spark SQL's spelling.
SPARK_TYPES = {
    "boolean": "BOOLEAN", "byte": "TINYINT", "short": "SMALLINT", "integer": "INT", "int": "INT",
    "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "date": "DATE", "string": "STRING",
    "binary": "BINARY", "timestamp_ntz": "TIMESTAMP_NTZ", "variant": "VARIANT", "uuid": "STRING",
    "timestamptz": "TIMESTAMP", "timestamptz_ns": "TIMESTAMP", "timestamp_ns": "TIMESTAMP_NTZ",
}
# The UC type name of a column whose JSON type cannot be read.
UC_TYPES = {"LONG": "BIGINT", "SHORT": "SMALLINT", "BYTE": "TINYINT", "NULL": "VOID"}
DERIVED_PREFIXES = ("io.unitycatalog.", "delta.rowTracking.")


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def literal(text: str) -> str:
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


def spark_type(value, iceberg: bool) -> str:
    """A Delta (or Iceberg, `iceberg`) type from a column's JSON, in Spark SQL."""
    if isinstance(value, str):
        if value.startswith("decimal"):
            return value.upper().replace(" ", "")
        if value == "timestamp":
            return "TIMESTAMP_NTZ" if iceberg else "TIMESTAMP"
        if value.startswith("fixed"):
            return "BINARY"
        return SPARK_TYPES.get(value, value.upper())
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "struct":
        return "STRUCT<" + ", ".join(f"{quoted(f['name'])}: {spark_type(f['type'], iceberg)}"
                                     for f in value.get("fields") or []) + ">"
    if kind in ("array", "list"):
        return f"ARRAY<{spark_type(value.get('element' if iceberg else 'elementType'), iceberg)}>"
    if kind == "map":
        key, val = ("key", "value") if iceberg else ("keyType", "valueType")
        return f"MAP<{spark_type(value.get(key), iceberg)}, {spark_type(value.get(val), iceberg)}>"
    raise ValueError(f"unknown type {value!r}")


def _column_type(column, iceberg: bool) -> str:
    try:
        return spark_type(json.loads(column.type_json or "{}")["type"], iceberg)
    except (ValueError, KeyError, TypeError):
        name = (column.type_name or "STRING").upper()
        if name == "DECIMAL" and column.type_precision is not None:
            return f"DECIMAL({column.type_precision},{column.type_scale or 0})"
        return UC_TYPES.get(name, name)


def _clustering(properties: dict) -> list[str]:
    try:
        value = json.loads(properties.get(dp.CLUSTERING_COLUMNS) or "[]")
    except ValueError:
        return []
    if isinstance(value, dict):
        value = value.get("clusteringColumns") or []
    return [".".join(part) if isinstance(part, list) else str(part) for part in value]


def kept_properties(properties: dict) -> dict:
    return {k: v for k, v in sorted(properties.items())
            if k != TABLE_ID_PROPERTY and not dp.is_synthetic(k) and not k.startswith(DERIVED_PREFIXES)}


def create_table(table, columns) -> str | None:
    """The statement, or None for what is not a Delta or Iceberg table (a view, a generic table)."""
    fmt = table.data_source_format
    if table.table_type == TableType.VIEW or fmt not in (DataSourceFormat.DELTA, DataSourceFormat.ICEBERG):
        return None
    iceberg = fmt == DataSourceFormat.ICEBERG
    columns = sorted(columns, key=lambda c: c.position)
    lines = []
    for column in columns:
        line = f"  {quoted(column.name)} {_column_type(column, iceberg)}"
        if not column.nullable:
            line += " NOT NULL"
        if column.comment:
            line += f" COMMENT {literal(column.comment)}"
        lines.append(line)
    name = ".".join(quoted(part) for part in (table.schema.catalog.name, table.schema.name, table.name))
    statement = [f"CREATE TABLE {name} (", ",\n".join(lines), ")", f"USING {fmt}"]
    partitioned = [c.name for c in sorted((c for c in columns if c.partition_index is not None),
                                          key=lambda c: c.partition_index)]
    properties = table.properties or {}
    clustering = _clustering(properties)
    if partitioned:
        statement.append("PARTITIONED BY (" + ", ".join(quoted(c) for c in partitioned) + ")")
    elif clustering:
        statement.append("CLUSTER BY (" + ", ".join(quoted(c) for c in clustering) + ")")
    if table.comment:
        statement.append(f"COMMENT {literal(table.comment)}")
    if table.table_type == TableType.EXTERNAL and table.storage_location:
        statement.append(f"LOCATION {literal(table.storage_location)}")
    kept = kept_properties(properties)
    if kept:
        statement.append("TBLPROPERTIES (\n" + ",\n".join(f"  {literal(k)} = {literal(v)}" for k, v in kept.items())
                         + ")")
    return "\n".join(statement)
