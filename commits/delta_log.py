"""Reading the Delta log, as pure functions: the actions of a commit file, the checks a
catalog-managed table's first commit must pass, and Delta schemas as Unity Catalog columns."""

from __future__ import annotations

import json
import re

CATALOG_MANAGED_FEATURES = ("catalogManaged", "catalogOwned-preview")
REQUIRED_FEATURES = ("inCommitTimestamp", "vacuumProtocolCheck")
TABLE_ID_PROPERTY = "io.unitycatalog.tableId"
MIN_READER_VERSION = 3
MIN_WRITER_VERSION = 7


class DeltaLogError(ValueError):
    """The log does not say what a catalog-managed table needs; the message says which part."""


def parse_actions(data: bytes) -> list[dict]:
    """A commit file is newline-delimited JSON, one action per line."""
    actions = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DeltaLogError("the commit file is not UTF-8 text") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            action = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DeltaLogError(f"line {number} of the commit file is not JSON: {exc.msg}") from None
        if not isinstance(action, dict):
            raise DeltaLogError(f"line {number} of the commit file is not a JSON object")
        actions.append(action)
    return actions


def first(actions: list[dict], kind: str) -> dict | None:
    for action in actions:
        if kind in action:
            value = action[kind]
            return value if isinstance(value, dict) else None
    return None


def validate_catalog_managed(actions: list[dict], *, table_id: str) -> tuple[dict, dict]:
    """Checks the protocol and metadata of version 0 against the managed-table spec and returns
    them. Raises DeltaLogError naming every requirement that is not met."""
    protocol = first(actions, "protocol")
    metadata = first(actions, "metaData")
    if protocol is None:
        raise DeltaLogError("version 0 has no protocol action")
    if metadata is None:
        raise DeltaLogError("version 0 has no metaData action")
    problems = []
    reader = protocol.get("minReaderVersion")
    writer = protocol.get("minWriterVersion")
    if not isinstance(reader, int) or reader < MIN_READER_VERSION:
        problems.append(f"minReaderVersion must be at least {MIN_READER_VERSION} (is {reader})")
    if not isinstance(writer, int) or writer < MIN_WRITER_VERSION:
        problems.append(f"minWriterVersion must be at least {MIN_WRITER_VERSION} (is {writer})")
    writer_features = set(protocol.get("writerFeatures") or [])
    reader_features = set(protocol.get("readerFeatures") or [])
    if not writer_features.intersection(CATALOG_MANAGED_FEATURES):
        problems.append("the table feature catalogManaged is missing")
    elif not reader_features.intersection(CATALOG_MANAGED_FEATURES):
        problems.append("catalogManaged must be a reader feature too")
    for feature in REQUIRED_FEATURES:
        if feature not in writer_features:
            problems.append(f"the table feature {feature} is missing")
    if "vacuumProtocolCheck" in writer_features and "vacuumProtocolCheck" not in reader_features:
        problems.append("vacuumProtocolCheck must be a reader feature too")
    configuration = metadata.get("configuration") or {}
    if not isinstance(configuration, dict):
        problems.append("metaData.configuration must be an object")
        configuration = {}
    declared_id = configuration.get(TABLE_ID_PROPERTY)
    if declared_id != table_id:
        problems.append(f"{TABLE_ID_PROPERTY} must be {table_id} (is {declared_id})")
    if str(configuration.get("delta.enableInCommitTimestamps", "")).lower() != "true":
        problems.append("delta.enableInCommitTimestamps must be true")
    if problems:
        raise DeltaLogError("; ".join(problems))
    return protocol, metadata


# -- Delta (Spark) types as Unity Catalog columns ---------------------------------------------------
_PRIMITIVES = {
    "boolean": ("BOOLEAN", "boolean"),
    "byte": ("BYTE", "tinyint"),
    "short": ("SHORT", "smallint"),
    "integer": ("INT", "int"),
    "long": ("LONG", "bigint"),
    "float": ("FLOAT", "float"),
    "double": ("DOUBLE", "double"),
    "date": ("DATE", "date"),
    "timestamp": ("TIMESTAMP", "timestamp"),
    "timestamp_ntz": ("TIMESTAMP_NTZ", "timestamp_ntz"),
    "string": ("STRING", "string"),
    "binary": ("BINARY", "binary"),
    "variant": ("VARIANT", "variant"),
    "void": ("NULL", "void"),
}
# Names that SQL engines use for the same types (the seed's examples say "int", "bigint").
_ALIASES = {"int": "integer", "bigint": "long", "smallint": "short", "tinyint": "byte", "bool": "boolean"}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


def type_text(delta_type) -> str:
    if isinstance(delta_type, str):
        name = _ALIASES.get(delta_type, delta_type)
        if name in _PRIMITIVES:
            return _PRIMITIVES[name][1]
        if _DECIMAL.match(name) or name == "decimal":
            return name.replace(" ", "")
        raise DeltaLogError(f"unknown Delta type {delta_type!r}")
    if not isinstance(delta_type, dict):
        raise DeltaLogError(f"unknown Delta type {delta_type!r}")
    kind = delta_type.get("type")
    if kind == "struct":
        fields = ",".join(f"{f['name']}:{type_text(f['type'])}" for f in delta_type.get("fields", []))
        return f"struct<{fields}>"
    if kind == "array":
        return f"array<{type_text(delta_type.get('elementType'))}>"
    if kind == "map":
        return f"map<{type_text(delta_type.get('keyType'))},{type_text(delta_type.get('valueType'))}>"
    raise DeltaLogError(f"unknown Delta type {delta_type!r}")


def type_name(delta_type) -> tuple[str, int | None, int | None]:
    if isinstance(delta_type, dict):
        kind = delta_type.get("type")
        if kind in ("struct", "array", "map"):
            return kind.upper(), None, None
        raise DeltaLogError(f"unknown Delta type {delta_type!r}")
    name = _ALIASES.get(delta_type, delta_type) if isinstance(delta_type, str) else None
    if name in _PRIMITIVES:
        return _PRIMITIVES[name][0], None, None
    match = _DECIMAL.match(name or "")
    if match:
        return "DECIMAL", int(match.group(1)), int(match.group(2))
    if name == "decimal":
        return "DECIMAL", 10, 0
    raise DeltaLogError(f"unknown Delta type {delta_type!r}")


def field_to_column(field: dict, position: int, partition_columns: list[str]) -> dict:
    if not isinstance(field, dict) or not isinstance(field.get("name"), str) or "type" not in field:
        raise DeltaLogError(f"schema field {position} needs a name and a type")
    name, precision, scale = type_name(field["type"])
    nullable = field.get("nullable", True)
    return {
        "name": field["name"],
        "type_name": name,
        "type_text": type_text(field["type"]),
        "type_json": json.dumps(
            {"name": field["name"], "type": field["type"], "nullable": bool(nullable),
             "metadata": field.get("metadata", {})},
            separators=(",", ":"),
        ),
        "type_precision": precision,
        "type_scale": scale,
        "position": position,
        "nullable": bool(nullable),
        "partition_index": partition_columns.index(field["name"]) if field["name"] in partition_columns else None,
    }


def columns_from_schema_string(schema_string: str, partition_columns: list[str] | None = None) -> list[dict]:
    try:
        schema = json.loads(schema_string)
    except (TypeError, json.JSONDecodeError):
        raise DeltaLogError("metaData.schemaString is not JSON") from None
    if not isinstance(schema, dict) or schema.get("type") != "struct":
        raise DeltaLogError("metaData.schemaString must be a struct type")
    return [field_to_column(f, i, partition_columns or []) for i, f in enumerate(schema.get("fields", []))]
