from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from catalog import locations, resolve
from catalog.choices import ColumnTypeName, DataSourceFormat, Privilege, TableType
from catalog.models import Column, Grant, Principal, Table
from catalog.services import audit, grants
from catalog.services.common import validate_comment, validate_properties, validate_storage_url
from catalog.services.names import validate_name
from ucweb.errors import InvalidParameter, TableAlreadyExists

VIEW_TYPES = {TableType.VIEW, TableType.MATERIALIZED_VIEW, TableType.METRIC_VIEW, TableType.STREAMING_TABLE}
COLUMN_INT_FIELDS = ("type_precision", "type_scale", "position", "partition_index")
COLUMN_STR_FIELDS = ("type_text", "type_json", "type_interval_type", "comment")
MAX_COLUMN_NAME = 255  # the width of Column.name
MAX_INTERVAL_TYPE = 64  # the width of Column.type_interval_type
# A MANAGED table exists once its format's log was checked, which the catalog does not read: the
# app that does registers its creator here (commits.apps), so catalog never imports it.
_managed_table_creator = None


def register_managed_table_creator(create) -> None:
    global _managed_table_creator
    _managed_table_creator = create


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


def visible_tables(*, caller: Principal, catalog_name: str, schema_name: str):
    schema, access = resolve.schema(caller, catalog_name, schema_name)
    queryset = Table.objects.filter(schema=schema).select_related("schema__catalog").prefetch_related("columns")
    if access.has(Privilege.SELECT) or access.has(Privilege.MODIFY):
        return queryset
    granted = Grant.objects.filter(
        principal=caller.name, privilege__in=[Privilege.SELECT, Privilege.MODIFY]
    ).values("securable_id")
    return queryset.filter(Q(owner=caller.name) | Q(id__in=granted))


def get_table(*, caller: Principal, full_name: str) -> Table:
    table, access = resolve.table(caller, full_name)
    access.require(
        access.has(Privilege.SELECT) or access.has(Privilege.MODIFY),
        f"Missing SELECT on table {table.full_name}.",
    )
    return table


def require_create_table(caller: Principal, catalog_name: str, schema_name: str):
    schema, access = resolve.schema(caller, catalog_name, schema_name)
    access.require(access.has(Privilege.CREATE_TABLE), f"Missing CREATE TABLE on schema {schema.full_name}.")
    return schema


@transaction.atomic
def create_table(
    *,
    caller: Principal,
    name,
    catalog_name,
    schema_name,
    table_type,
    data_source_format=None,
    columns=None,
    storage_location=None,
    comment=None,
    properties=None,
    view_definition=None,
    view_dependencies=None,
) -> Table:
    validate_name(name)
    validate_name(catalog_name, field="catalog_name")
    validate_name(schema_name, field="schema_name")
    if table_type not in TableType.values:
        raise InvalidParameter(f"table_type must be one of {', '.join(TableType.values)}.")
    if data_source_format is not None and data_source_format not in DataSourceFormat.values:
        raise InvalidParameter(f"data_source_format must be one of {', '.join(DataSourceFormat.values)}.")
    columns = validate_columns(columns)
    comment = validate_comment(comment)
    properties = validate_properties(properties)
    requested_location = storage_location
    storage_location = validate_storage_url(storage_location, field="storage_location")
    if view_definition is not None and not isinstance(view_definition, str):
        raise InvalidParameter("view_definition must be a string.")
    if view_dependencies is not None and not isinstance(view_dependencies, dict):
        raise InvalidParameter("view_dependencies must be an object.")
    if table_type == TableType.MANAGED:
        return _managed_table_creator(
            caller=caller, name=name, catalog_name=catalog_name, schema_name=schema_name,
            data_source_format=data_source_format, storage_location=requested_location,
            columns=columns, comment=comment, properties=properties,
        )
    if table_type == TableType.EXTERNAL:
        if not storage_location:
            raise InvalidParameter("storage_location is required for an EXTERNAL table.")
        if not data_source_format:
            raise InvalidParameter("data_source_format is required for an EXTERNAL table.")
    elif table_type in VIEW_TYPES and not view_definition:
        raise InvalidParameter(f"view_definition is required for a {table_type}.")

    schema = require_create_table(caller, catalog_name, schema_name)
    if Table.objects.filter(schema=schema, name=name).exists():
        raise TableAlreadyExists(f"Table '{catalog_name}.{schema_name}.{name}' already exists.")
    if storage_location is not None:
        # EXTERNAL tables, and views that name storage: never another securable's files.
        storage_location = locations.place_securable(
            caller=caller, schema=schema, value=storage_location, privilege=Privilege.CREATE_EXTERNAL_TABLE,
            field="storage_location", schemes=locations.RECORDED_SCHEMES,
        ).url
    table = Table.objects.create(
        schema=schema,
        name=name,
        table_type=table_type,
        data_source_format=data_source_format,
        storage_location=storage_location,
        comment=comment,
        properties=properties,
        view_definition=view_definition,
        view_dependencies=view_dependencies,
        owner=caller.name,
        created_by=caller.name,
        updated_at=timezone.now(),
        updated_by=caller.name,
    )
    replace_columns(table, columns)
    audit.record(
        principal=caller.name, action="createTable", securable_type="table",
        securable_name=table.full_name, securable_id=table.id,
        details={"table_type": table_type, "data_source_format": data_source_format},
    )
    return table


def drop_table_row(table: Table, *, dropped_by: str = "", purge: bool | None = None) -> None:
    """Removes a table, its columns, commits and grants. Files are purged once the transaction
    commits (see `catalog.signals`): those of a managed table always, others when asked."""
    from catalog.signals import securable_dropped

    if purge is None:
        purge = table.table_type == TableType.MANAGED
    if purge and table.storage_location:
        securable_dropped.send(sender=Table, location=table.storage_location,
                               reason=f"dropped table {table.full_name}", requested_by=dropped_by)
    grants.forget_securables([table.id])
    table.delete()


@transaction.atomic
def delete_table(*, caller: Principal, full_name: str) -> None:
    table, access = resolve.table(caller, full_name, for_update=True)
    access.require(access.owns(), f"Only the owner of table {table.full_name} or a metastore admin may delete it.")
    table_id, name = table.id, table.full_name
    drop_table_row(table, dropped_by=caller.name)
    audit.record(
        principal=caller.name, action="deleteTable", securable_type="table",
        securable_name=name, securable_id=table_id,
    )


@transaction.atomic
def update_table(*, caller: Principal, full_name: str, fields: dict) -> Table:
    """Rename a table inside its schema (`new_name`) or give it to another principal (`owner`):
    what a governance team changes. Everything a protocol owns (location, type, format, versions,
    metadata) changes only through that protocol."""
    from catalog.services.catalogs import apply_common_update

    unknown = sorted(set(fields) - {"new_name", "owner", "comment"})
    if unknown:
        raise InvalidParameter(f"A table's {', '.join(unknown)} cannot be changed here.")
    table, access = resolve.table(caller, full_name, for_update=True)
    access.require(access.owns(), f"Only the owner of table {table.full_name} or a metastore admin may update it.")
    old_name = table.full_name
    new_name = fields.get("new_name")
    if new_name is not None and new_name != table.name:
        validate_name(new_name, field="new_name")
        if Table.objects.filter(schema=table.schema, name=new_name).exists():
            raise TableAlreadyExists(f"Table '{table.schema.full_name}.{new_name}' already exists.")
        table.name = new_name
    apply_common_update(
        table, caller=caller, access=access, comment=fields.get("comment"), properties=None,
        owner=fields.get("owner"), fields={k: v for k, v in fields.items() if k in ("comment", "owner")},
    )
    table.save()
    Grant.objects.filter(securable_id=table.id).update(securable_name=table.full_name)
    audit.record(
        principal=caller.name, action="updateTable", securable_type="table",
        securable_name=table.full_name, securable_id=table.id, details={**fields, "from": old_name},
    )
    return table
