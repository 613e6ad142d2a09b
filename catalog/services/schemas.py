from django.db import transaction

from catalog import authz, resolve, schema_contract
from catalog.choices import Privilege, SecurableType
from catalog.models import Principal, Schema, Table
from catalog.services import grants, recipes
from catalog.services.common import validate_comment, validate_properties, validate_storage_url
from catalog.names import quote_part, validate_name
from ucweb.errors import SchemaAlreadyExists, SchemaNotEmpty


def visible_schemas(*, caller: Principal, catalog_name: str):
    catalog, access = resolve.catalog(caller, catalog_name)
    queryset = Schema.objects.filter(catalog=catalog).select_related("catalog")
    return authz.visible(queryset, caller, access=access)


def join_path(parent: Schema | None, name: str) -> str:
    return f"{parent.path}.{quote_part(name)}" if parent is not None else quote_part(name)


def get_schema(*, caller: Principal, full_name: str) -> Schema:
    schema, _ = resolve.schema_by_full_name(caller, full_name)  # seeing a schema is reading it (recipes.readable)
    return schema


@transaction.atomic
def create_schema(
    *, caller: Principal, name, catalog_name, comment=None, properties=None, storage_root=None, iceberg: bool = False,
    parent: Schema | None = None,
) -> Schema:
    """`iceberg`: the name comes from the Iceberg REST API, which allows dots and spaces.
    `parent`: the schema the new one lies in (a nested namespace), resolved for the caller."""
    validate_name(name, iceberg=iceberg)
    validate_name(catalog_name, field="catalog_name")
    comment = validate_comment(comment)
    properties = validate_properties(properties)
    schema_contract.require_settable(properties, applies=False, what=f"schema {name}")
    storage_root = validate_storage_url(storage_root, field="storage_root")
    catalog, access = resolve.catalog(caller, catalog_name)
    if parent is not None:
        access = authz.require(caller, parent, authz.Action.USE)
    access.require(access.has(Privilege.CREATE_SCHEMA), f"Missing CREATE SCHEMA on catalog {catalog_name}.")
    schema = Schema(
        catalog=catalog, parent=parent, name=name, comment=comment, properties=properties,
        owner=caller.name, created_by=caller.name, storage_root=storage_root,
    )
    if Schema.objects.filter(catalog=catalog, path=join_path(parent, name)).exists():
        raise SchemaAlreadyExists(f"Schema '{catalog_name}.{join_path(parent, name)}' already exists.")
    return recipes.save_new_with_storage_root(schema, caller=caller, kind="schema", action="createSchema")


UPDATABLE = recipes.Updatable(
    securable_type=SecurableType.SCHEMA,
    siblings=lambda schema: Schema.objects.filter(catalog=schema.catalog, parent=schema.parent),
    already_exists=SchemaAlreadyExists,
)


@transaction.atomic
def update_schema(*, caller: Principal, full_name: str, fields: dict) -> Schema:
    schema, access = resolve.schema_by_full_name(caller, full_name)
    return recipes.update(schema, fields, UPDATABLE, caller=caller, access=access,
                          details={k: v for k, v in fields.items() if k != "properties"})


def drop_schema_contents(schema: Schema) -> None:
    """Everything inside a schema goes with it: the schemas inside it, tables (managed files
    purged) and their grants."""
    from catalog.services.dropped import drop_table_row

    for child in schema.children.all():
        drop_schema_contents(child)
    # The tables dropped in it and kept for the retention go for good with it (the volumes with
    # the cascade, which sees every row).
    for table in Table.with_dropped.filter(schema=schema).select_related("schema__catalog"):
        drop_table_row(table)
    grants.forget_securables([schema.id])
    schema.delete()


def _has_contents(schema: Schema) -> bool:
    return any(related.exists() for related in (
        schema.children, schema.tables, schema.volumes, schema.functions, schema.registered_models,
        schema.policies))


@transaction.atomic
def delete_schema(*, caller: Principal, full_name: str, force: bool) -> None:
    schema, access = resolve.schema_by_full_name(caller, full_name, for_update=True)
    not_empty = SchemaNotEmpty(
        f"Schema '{schema.full_name}' is not empty; delete its schemas, tables, volumes, functions, models "
        "and policies first or pass force=true."
    )
    with recipes.dropping_container(schema, caller=caller, access=access, securable_type=SecurableType.SCHEMA,
                                    force=force, holds_anything=lambda: _has_contents(schema), not_empty=not_empty):
        drop_schema_contents(schema)
