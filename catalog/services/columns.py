"""Columns of a table, as every protocol that defines them (UC, Delta commit metadata, Iceberg
schemas) hands them to the catalog: validated once, replaced whole."""

from catalog.choices import ColumnTypeName
from catalog.models import Column, Table
from ucweb import client_json
from ucweb.errors import InvalidParameter

COLUMN_INT_FIELDS = ("type_precision", "type_scale", "position", "partition_index")
COLUMN_STR_FIELDS = ("type_text", "type_json", "type_interval_type", "comment")
MAX_COLUMN_NAME = 255  # the width of Column.name
MAX_INTERVAL_TYPE = 64  # the width of Column.type_interval_type


def validate_columns(columns) -> list[dict]:
    """ColumnInfo objects in, clean dicts out. Positions default to the array order."""
    if columns is None:
        return []
    if not isinstance(columns, list):
        raise InvalidParameter("columns must be an array of ColumnInfo objects.")
    clean = []
    for index, column in enumerate(columns):
        if not isinstance(column, dict):
            raise InvalidParameter(f"columns[{index}] must be an object.")
        name = column.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidParameter(f"columns[{index}].name is required.")
        if len(name) > MAX_COLUMN_NAME:
            raise InvalidParameter(f"columns[{index}].name must be at most {MAX_COLUMN_NAME} characters.")
        type_name = column.get("type_name")
        if type_name is not None and type_name not in ColumnTypeName.values:
            raise InvalidParameter(f"columns[{index}].type_name {type_name!r} is not a known type.")
        item = {"name": name, "type_name": type_name}
        for field in COLUMN_INT_FIELDS:
            value = column.get(field)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise InvalidParameter(f"columns[{index}].{field} must be an integer.")
            if value is not None and not -(2**31) <= value < 2**31:
                raise InvalidParameter(f"columns[{index}].{field} is out of range.")
            item[field] = value
        for field in COLUMN_STR_FIELDS:
            value = column.get(field)
            if value is not None and not isinstance(value, str):
                raise InvalidParameter(f"columns[{index}].{field} must be a string.")
            if field == "type_interval_type" and value is not None and len(value) > MAX_INTERVAL_TYPE:
                raise InvalidParameter(f"columns[{index}].{field} must be at most {MAX_INTERVAL_TYPE} characters.")
            if field == "type_json" and value is not None:
                try:
                    client_json.check_text(value)  # the Delta API reads it as the column's type
                except client_json.TooDeep as exc:
                    raise InvalidParameter(f"columns[{index}].type_json: {exc}.") from None
            item[field] = value
        nullable = column.get("nullable", True)
        if not isinstance(nullable, bool):
            raise InvalidParameter(f"columns[{index}].nullable must be a boolean.")
        item["nullable"] = nullable
        if item["position"] is None:
            item["position"] = index
        if item["type_text"] is None and type_name is not None:
            item["type_text"] = type_name.lower()
        clean.append(item)
    names = [c["name"].lower() for c in clean]
    if len(set(names)) != len(names):
        raise InvalidParameter("Column names must be unique.")
    positions = [c["position"] for c in clean]
    if len(set(positions)) != len(positions):
        raise InvalidParameter("Column positions must be unique.")
    return clean


def replace_columns(table: Table, columns: list[dict]) -> None:
    Column.objects.filter(table=table).delete()
    Column.objects.bulk_create([Column(table=table, **column) for column in columns])
