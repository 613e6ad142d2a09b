from django.db import transaction
from django.utils import timezone

from catalog import authz, locations, resolve, schema_contract
from catalog.choices import DataSourceFormat, Privilege, SecurableType, TableType
from catalog.models import Principal, Table
from catalog.services import dropped, recipes
from catalog.services.columns import replace_columns, validate_columns  # noqa: F401 - their former home
from catalog.services.common import validate_comment, validate_properties, validate_storage_url
from catalog.names import validate_name
from catalog.services.recipes import require_create_table
from ucweb.errors import InvalidParameter, TableAlreadyExists

VIEW_TYPES = {TableType.VIEW, TableType.MATERIALIZED_VIEW, TableType.METRIC_VIEW, TableType.STREAMING_TABLE}
# A MANAGED table exists once its format's log was checked, which the catalog does not read: the
# app that does registers its creator here (commits.apps), so catalog never imports it.
_managed_table_creator = None


def register_managed_table_creator(create) -> None:
    global _managed_table_creator
    _managed_table_creator = create


def visible_tables(*, caller: Principal, catalog_name: str, schema_name: str):
    schema, access = resolve.schema(caller, catalog_name, schema_name)
    queryset = Table.objects.filter(schema=schema).select_related("schema__catalog").prefetch_related("columns")
    return authz.visible(queryset, caller, access=access)


def get_table(*, caller: Principal, full_name: str) -> Table:
    # Its metadata is for whoever sees it (SELECT or MODIFY, authz.SEEN_WITH), not only for the
    # readers of its data (READ: SELECT): recipes.readable would refuse a writer.
    table, _ = resolve.table(caller, full_name, columns=True)
    return table


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

    kind = table_type.lower().replace("_", " ") + (" table" if table_type == TableType.EXTERNAL else "")
    schema_contract.require_settable(properties, applies=False, what=f"{kind} {catalog_name}.{schema_name}.{name}")
    schema = require_create_table(caller, catalog_name, schema_name)
    if Table.objects.filter(schema=schema, name=name).exists():
        raise TableAlreadyExists(f"Table '{catalog_name}.{schema_name}.{name}' already exists.")
    registered_location = None
    if storage_location is not None:
        # EXTERNAL tables, and views that name storage: never another securable's files.
        storage_location = locations.place_securable(
            caller=caller, schema=schema, value=storage_location, privilege=Privilege.CREATE_EXTERNAL_TABLE,
            field="storage_location", schemes=locations.RECORDED_SCHEMES,
        ).url
        registered_location = locations.as_registered(requested_location, storage_location)
    table = Table.objects.create(
        schema=schema,
        name=name,
        table_type=table_type,
        data_source_format=data_source_format,
        storage_location=storage_location,
        registered_location=registered_location if registered_location != storage_location else None,
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
    return recipes.audited(table, caller=caller, action="createTable", securable_type=SecurableType.TABLE,
                           details={"table_type": table_type, "data_source_format": data_source_format})


@transaction.atomic
def delete_table(*, caller: Principal, full_name: str) -> None:
    table, access = resolve.table(caller, full_name, for_update=True)
    with recipes.dropping(table, caller=caller, access=access, securable_type=SecurableType.TABLE):
        dropped.drop_table(table, dropped_by=caller.name)


UPDATABLE = recipes.Updatable.in_a_schema(SecurableType.TABLE, already_exists=TableAlreadyExists)


@transaction.atomic
def update_table(*, caller: Principal, full_name: str, fields: dict) -> Table:
    """Rename a table inside its schema (`new_name`) or give it to another principal (`owner`):
    what a governance team changes. Everything a protocol owns (location, type, format, versions,
    metadata) changes only through that protocol."""
    unknown = sorted(set(fields) - {"new_name", "owner", "comment"})
    if unknown:
        raise InvalidParameter(f"A table's {', '.join(unknown)} cannot be changed here.")
    table, access = resolve.table(caller, full_name, for_update=True)
    return recipes.update(table, fields, UPDATABLE, caller=caller, access=access,
                          details={**fields, "from": table.full_name})
