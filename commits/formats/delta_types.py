"""Delta (Spark) types as Unity Catalog columns, and Delta types on the wire of the Delta REST
API (hyphenated names) versus in the log (camelCase). Pure functions."""

from __future__ import annotations

import json
import re

from commits.formats.delta_log import DeltaLogError
from ucweb import client_json

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
        fields = ",".join(f"{f['name']}:{type_text(f['type'])}" for f in _struct_fields(delta_type))
        return f"struct<{fields}>"
    if kind == "array":
        return f"array<{type_text(_part(delta_type, 'elementType'))}>"
    if kind == "map":
        return f"map<{type_text(_part(delta_type, 'keyType'))},{type_text(_part(delta_type, 'valueType'))}>"
    raise DeltaLogError(f"unknown Delta type {delta_type!r}")


def _struct_fields(struct: dict) -> list[dict]:
    """The fields of a struct type, each an object with a name and a type."""
    fields = struct.get("fields", [])
    if not isinstance(fields, list):
        raise DeltaLogError(f"the fields of a struct type must be an array, not {fields!r}")
    for position, field in enumerate(fields):
        _require_field(field, f"struct field {position}")
    return fields


def _require_field(field, what: str) -> None:
    if not isinstance(field, dict) or not isinstance(field.get("name"), str) or "type" not in field:
        raise DeltaLogError(f"{what} needs a name and a type")


def _part(delta_type: dict, key: str):
    if delta_type.get(key) is None:
        raise DeltaLogError(f"a Delta {delta_type['type']} type needs {key}")
    return delta_type[key]


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
    _require_field(field, f"schema field {position}")
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
        schema = client_json.loads(schema_string)
    except client_json.TooDeep as exc:
        raise DeltaLogError(f"metaData.schemaString: {exc}") from None
    except (TypeError, json.JSONDecodeError):
        raise DeltaLogError("metaData.schemaString is not JSON") from None
    if not isinstance(schema, dict) or schema.get("type") != "struct":
        raise DeltaLogError("metaData.schemaString must be a struct type")
    return [field_to_column(f, i, partition_columns or []) for i, f in enumerate(_struct_fields(schema))]


# -- the Delta REST API's spelling of the same types -------------------------------------------
_TO_LOG = {"element-type": "elementType", "contains-null": "containsNull", "key-type": "keyType",
           "value-type": "valueType", "value-contains-null": "valueContainsNull"}
_TO_WIRE = {log: wire for wire, log in _TO_LOG.items()}


def _convert_type(value, names: dict):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "fields" and isinstance(item, list):
                out[key] = [_convert_field(f, names) for f in item]
            else:
                out[names.get(key, key)] = _convert_type(item, names) if key in names else item
        return out
    return value


def _convert_field(field, names: dict):
    if not isinstance(field, dict) or "type" not in field:
        return field  # left as it is for type_text to refuse
    return {**field, "type": _convert_type(field["type"], names)}


def wire_to_log(delta_type):
    """A type as the Delta REST API writes it (`element-type`) as the log writes it (`elementType`)."""
    return _convert_type(delta_type, _TO_LOG)


def log_to_wire(delta_type):
    return _convert_type(delta_type, _TO_WIRE)


_UC_TO_DELTA = {"BOOLEAN": "boolean", "BYTE": "byte", "SHORT": "short", "INT": "integer", "LONG": "long",
                "FLOAT": "float", "DOUBLE": "double", "DATE": "date", "TIMESTAMP": "timestamp",
                "TIMESTAMP_NTZ": "timestamp_ntz", "STRING": "string", "BINARY": "binary", "VARIANT": "variant"}


def column_to_field(column) -> dict:
    """A catalog column (a Column row or anything with its attributes) as a Delta field, wire
    spelling: the Delta field kept in type_json when there is one, else one derived from the UC type."""
    field = None
    if column.type_json:
        try:
            field = client_json.loads(column.type_json)
        except ValueError:  # not JSON, or nested too deeply: derived from the UC type instead
            field = None
    if not isinstance(field, dict) or "type" not in field:
        if column.type_name == "DECIMAL":
            kind = f"decimal({column.type_precision or 10},{column.type_scale or 0})"
        else:
            kind = _UC_TO_DELTA.get(column.type_name or "", (column.type_text or "string").lower())
        field = {"type": kind, "metadata": {}}
    metadata = dict(field.get("metadata") or {})
    if column.comment and "comment" not in metadata:
        metadata["comment"] = column.comment
    return {"name": column.name, "type": log_to_wire(field["type"]), "nullable": column.nullable,
            "metadata": metadata}
