from django.db import transaction

from catalog import authz, locations, resolve
from catalog.authz import Action
from catalog.choices import SecurableType
from catalog.models import Principal, Schema, Table
from catalog.services import audit, grants, recipes
from catalog.services.common import validate_comment, validate_properties, validate_storage_url
from catalog.services.names import validate_name
from ucweb.errors import SchemaAlreadyExists, SchemaNotEmpty


def visible_schemas(*, caller: Principal, catalog_name: str):
    catalog, access = resolve.catalog(caller, catalog_name)
    queryset = Schema.objects.filter(catalog=catalog).select_related("catalog")
    return authz.visible(queryset, caller, access=access)


def get_schema(*, caller: Principal, full_name: str) -> Schema:
    schema, _ = resolve.schema_by_full_name(caller, full_name)
    return schema


@transaction.atomic
def create_schema(
    *, caller: Principal, name, catalog_name, comment=None, properties=None, storage_root=None, iceberg: bool = False,
) -> Schema:
    """`iceberg`: the name comes from the Iceberg REST API, which allows dots and spaces."""
    validate_name(name, iceberg=iceberg)
    validate_name(catalog_name, field="catalog_name")
    comment = validate_comment(comment)
    properties = validate_properties(properties)
    storage_root = validate_storage_url(storage_root, field="storage_root")
    catalog, access = resolve.catalog(caller, catalog_name)
    authz.require(caller, catalog, Action.CREATE_SCHEMA, access=access)
    if Schema.objects.filter(catalog=catalog, name=name).exists():
        raise SchemaAlreadyExists(f"Schema '{catalog_name}.{name}' already exists.")
    schema = Schema(
        catalog=catalog, name=name, comment=comment, properties=properties,
        owner=caller.name, created_by=caller.name, storage_root=storage_root,
    )
    if storage_root:
        schema.storage_root, schema.storage_location = locations.place_root(
            caller=caller, value=storage_root, kind="schema", securable_id=schema.id)
    schema.save()
    audit.record(
        principal=caller.name, action="createSchema", securable_type="schema",
        securable_name=schema.full_name, securable_id=schema.id,
    )
    return schema


UPDATABLE = recipes.Updatable(
    securable_type=SecurableType.SCHEMA, audit_action="updateSchema", what="Schema",
    siblings=lambda schema: Schema.objects.filter(catalog=schema.catalog), already_exists=SchemaAlreadyExists,
)


@transaction.atomic
def update_schema(*, caller: Principal, full_name: str, fields: dict) -> Schema:
    schema, access = resolve.schema_by_full_name(caller, full_name)
    return recipes.update(schema, fields, UPDATABLE, caller=caller, access=access,
                          details={k: v for k, v in fields.items() if k != "properties"})


def drop_schema_contents(schema: Schema) -> None:
    """Everything inside a schema goes with it: tables (managed files purged) and their grants."""
    from catalog.services.tables import drop_table_row

    for table in Table.objects.filter(schema=schema).select_related("schema__catalog"):
        drop_table_row(table)
    grants.forget_securables([schema.id])
    schema.delete()


def _has_contents(schema: Schema) -> bool:
    return any(related.exists() for related in (
        schema.tables, schema.volumes, schema.functions, schema.registered_models, schema.policies))


@transaction.atomic
def delete_schema(*, caller: Principal, full_name: str, force: bool) -> None:
    schema, access = resolve.schema_by_full_name(caller, full_name)
    authz.require(caller, schema, Action.DELETE, access=access)
    if not force and _has_contents(schema):
        raise SchemaNotEmpty(
            f"Schema '{schema.full_name}' is not empty; delete its tables, volumes, functions, models and policies first "
            "or pass force=true."
        )
    schema_id, name = schema.id, schema.full_name
    drop_schema_contents(schema)
    audit.record(
        principal=caller.name, action="deleteSchema", securable_type="schema",
        securable_name=name, securable_id=schema_id, details={"force": force},
    )
