"""What a schema change breaks for the readers of a table, as pure functions per format: the
rule of the "additive-only" schema contract (catalog.schema_contract).

A change keeps every reader of the old schema working when it only adds optional (nullable)
columns, anywhere in the schema (at the top or inside a struct), relaxes a required column to
optional, reorders columns, or changes their comments and docs. It breaks them when it:

- drops a column (an Iceberg field id, or a Delta column, that the new schema lacks);
- renames one (the same Iceberg field id, or Delta column-mapping id, under another name);
- changes a type, promotions included: int to long and float to double, which Iceberg and Delta's
  type widening allow, still change what a reader declared (a consumer that maps the column to
  a 32-bit integer); a wider column is added as a new column instead;
- tightens nullability: a column, a list's element or a map's value that was optional becomes
  required (writers that leave it empty fail; rows already written may hold nulls);
- adds a required column (rows already written have no value for it);
- gives a new Iceberg column the field id of one the table had before (`last-column-id` or
  below): data files written with the old column would be read as the new one.

Each function answers the breaking changes in words ("drops column city", "changes the type of
id from int to long"), in the order of the old schema; empty when nothing breaks.

    >>> delta_breaking_changes([{"name": "id", "type": "integer", "nullable": True}],
    ...                        [{"name": "id", "type": "long", "nullable": True}])
    ['changes the type of id from integer to long']
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from pyiceberg.types import ListType, MapType, StructType

COLUMN_MAPPING_ID = "delta.columnMapping.id"


@dataclass(frozen=True)
class _Field:
    """A column (or a nested field) in a shape common to both formats: `key` identifies it across
    schema versions (an Iceberg field id; a Delta column-mapping id, else the name in lower case,
    as Delta compares names), `kind` is its type (see `_Type`)."""

    key: object
    name: str
    kind: _Type
    required: bool
    field_id: int | None = None  # Iceberg: for the reuse of a dropped column's id


@dataclass(frozen=True)
class _Type:
    """`name`: a primitive's spelling ("integer", "decimal(10,2)"), or struct, list or map;
    `fields` of a struct; `parts` of a list (element) or a map (key, value): (required, _Type)."""

    name: str
    fields: tuple = ()
    parts: tuple = ()


def _breaks(old: Iterable[_Field], new: Iterable[_Field], *, last_id: int | None = None,
            path: str = "") -> list[str]:
    old, new = list(old), list(new)
    new_by_key = {field.key: field for field in new}
    old_keys = {field.key for field in old}
    found = []
    for before in old:
        name = path + before.name
        after = new_by_key.get(before.key)
        if after is None:
            found.append(f"drops column {name}")
            continue
        if after.name != before.name:
            found.append(f"renames column {name} to {path + after.name}")
        if after.required and not before.required:
            found.append(f"makes column {name} required (NOT NULL)")
        found += _type_breaks(name, before.kind, after.kind, last_id)
    for after in new:
        if after.key in old_keys:
            continue
        name = path + after.name
        if after.required:
            found.append(f"adds column {name} as required (NOT NULL); a new column must be nullable")
        if last_id is not None and after.field_id is not None and after.field_id <= last_id:
            found.append(f"adds column {name} with field id {after.field_id}, which an earlier column had "
                         f"(the table's last column id is {last_id})")
    return found


def _type_breaks(name: str, before: _Type, after: _Type, last_id: int | None) -> list[str]:
    if before.name != after.name:
        return [f"changes the type of {name} from {_spelled(before)} to {_spelled(after)}"]
    if before.name == "struct":
        return _breaks(before.fields, after.fields, last_id=last_id, path=f"{name}.")
    found = []
    for part, (was_required, was), (is_required, now) in zip(_PARTS.get(before.name, ()), before.parts, after.parts):
        if is_required and not was_required:
            found.append(f"makes the {part} of {name} required (NOT NULL)")
        found += _type_breaks(f"{name}.{part}", was, now, last_id)
    return found


_PARTS = {"list": ("element",), "map": ("key", "value")}


def _spelled(kind: _Type) -> str:
    return kind.name if not kind.fields and not kind.parts else f"a {kind.name}"


# -- Delta --------------------------------------------------------------------------------------------
def delta_breaking_changes(before: Iterable[dict], after: Iterable[dict]) -> list[str]:
    """Between two Delta schemas, each the fields of its struct in the log's spelling
    (`{"name", "type", "nullable", "metadata"}`; `elementType`, `containsNull`...)."""
    return _breaks(map(_delta_field, before), map(_delta_field, after))


def _delta_field(field: dict) -> _Field:
    mapped = (field.get("metadata") or {}).get(COLUMN_MAPPING_ID)
    name = str(field.get("name"))
    return _Field(("id", mapped) if mapped is not None else name.lower(), name, _delta_type(field.get("type")),
                  required=field.get("nullable", True) is False)


def _delta_type(kind) -> _Type:
    if isinstance(kind, str):
        return _Type(kind.replace(" ", "").lower())
    if not isinstance(kind, dict):
        return _Type(json.dumps(kind, sort_keys=True))
    if kind.get("type") == "struct":
        return _Type("struct", fields=tuple(_delta_field(f) for f in kind.get("fields") or () if isinstance(f, dict)))
    if kind.get("type") == "array":
        return _Type("list", parts=((kind.get("containsNull", True) is False, _delta_type(kind.get("elementType"))),))
    if kind.get("type") == "map":
        return _Type("map", parts=((True, _delta_type(kind.get("keyType"))),
                                   (kind.get("valueContainsNull", True) is False, _delta_type(kind.get("valueType")))))
    return _Type(json.dumps(kind, sort_keys=True))


def delta_schema_fields(schema_string) -> list[dict] | None:
    """The fields of a metaData action's `schemaString`; None when it is not a struct's JSON."""
    try:
        schema = json.loads(schema_string) if isinstance(schema_string, str) else None
    except ValueError:
        return None
    fields = schema.get("fields") if isinstance(schema, dict) and schema.get("type") == "struct" else None
    return [f for f in fields if isinstance(f, dict)] if isinstance(fields, list) else None


# -- Iceberg ------------------------------------------------------------------------------------------
def iceberg_breaking_changes(before, after) -> list[str]:
    """Between the current schemas of two versions of an Iceberg table's metadata (pyiceberg's
    TableMetadata): fields are matched by id; a new field's id must be above the old metadata's
    `last-column-id`."""
    old, new = before.schema(), after.schema()
    if old == new:
        return []
    return _breaks(map(_iceberg_field, old.fields), map(_iceberg_field, new.fields), last_id=before.last_column_id)


def _iceberg_field(field) -> _Field:
    return _Field(field.field_id, field.name, _iceberg_type(field.field_type), bool(field.required),
                  field_id=field.field_id)


def _iceberg_type(kind) -> _Type:
    if isinstance(kind, StructType):
        return _Type("struct", fields=tuple(map(_iceberg_field, kind.fields)))
    if isinstance(kind, ListType):
        return _Type("list", parts=((bool(kind.element_required), _iceberg_type(kind.element_type)),))
    if isinstance(kind, MapType):
        return _Type("map", parts=((True, _iceberg_type(kind.key_type)),
                                   (bool(kind.value_required), _iceberg_type(kind.value_type))))
    return _Type(str(kind))
