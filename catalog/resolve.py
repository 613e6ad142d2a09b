"""Name or id → row, for a caller: the one place where the namespace is resolved for someone.

No existence oracle: what the caller may not see is answered exactly as what does not exist, with
the same status, error code and message (only the name in it differs, and it is the name the
caller sent). Someone who may see an object but lacks the privilege for an action gets a 403 from
the service that checks the action; that tells nothing the caller could not list anyway.

What a caller sees is what the list endpoints show them:

    catalog            USE CATALOG on it (or owning it)
    schema             the catalog, and USE SCHEMA on the schema or the catalog (or owning either)
    table              the schema, and SELECT or MODIFY on the table, schema or catalog (or owning one)
    volume             the schema, and READ VOLUME at some level
    function, model    the schema, and EXECUTE at some level
    external location,
    credential         any privilege on it (or owning it)

Metastore admins see everything. A lookup walks down from the catalog, so an object inside a
catalog the caller may not see answers "catalog not found", as it would if the catalog were gone.

Every resolver returns the row and the caller's `Access` to it (one grants query), so that the
service checks its action without loading the grants again.
"""

from __future__ import annotations

from catalog import asset_selectors, selectors
# Who may see what is decided by catalog.authz; its callers also know hidden/hidden_level from here.
from catalog.authz import Access, hidden, hidden_level
from catalog.choices import SecurableType
from catalog.models import Catalog, Function, Metastore, Policy, RegisteredModel, Schema, Table, Volume
from catalog.services.names import split_full_name
from ucweb.errors import CatalogError, InvalidParameter, MetastoreDoesNotExist, PolicyDoesNotExist

def reveal(caller, row, securable_type: str, missing: CatalogError):
    """`row` and the caller's access to it when the caller may see it; `missing` otherwise (and
    when there is no row). For lookups whose answer names no container (ids, Iceberg)."""
    if row is None:
        raise missing
    access = Access.load(caller, row)
    if hidden_level(access, securable_type) is not None:
        raise hidden(missing)
    return row, access


# -- the namespace, by name -----------------------------------------------------------------------
def catalog(caller, name: str, *, for_update: bool = False) -> tuple[Catalog, Access]:
    row = selectors.find_catalog(name, for_update=for_update)
    return reveal(caller, row, SecurableType.CATALOG, selectors.catalog_not_found(name))


def schema(caller, catalog_name: str, schema_name: str, *, for_update: bool = False) -> tuple[Schema, Access]:
    row = selectors.find_schema(catalog_name, schema_name, for_update=for_update)
    if row is None:
        catalog(caller, catalog_name)
        raise selectors.schema_not_found(catalog_name, schema_name)
    access = Access.load(caller, row)
    level = hidden_level(access, SecurableType.SCHEMA)
    if level is None:
        return row, access
    if level == 1:
        raise hidden(selectors.catalog_not_found(catalog_name))
    raise hidden(selectors.schema_not_found(catalog_name, schema_name))


def schema_by_full_name(caller, full_name: str, **kwargs) -> tuple[Schema, Access]:
    catalog_name, schema_name = split_full_name(full_name, 2, what="schema")
    return schema(caller, catalog_name, schema_name, **kwargs)


# What lies in a schema: (model, error when missing, the word in the message).
IN_SCHEMA = {
    SecurableType.TABLE: (Table, selectors.table_not_found),
    SecurableType.VOLUME: (Volume, asset_selectors.volume_not_found),
    SecurableType.FUNCTION: (Function, asset_selectors.function_not_found),
    SecurableType.REGISTERED_MODEL: (RegisteredModel, asset_selectors.registered_model_not_found),
    SecurableType.POLICY: (Policy, lambda catalog_name, schema_name, name: PolicyDoesNotExist(
        f"Policy {catalog_name}.{schema_name}.{name} does not exist.")),
}


def in_schema(caller, securable_type: str, full_name: str, *, for_update: bool = False):
    """A table, volume, function or registered model named `catalog.schema.name`."""
    model, not_found = IN_SCHEMA[securable_type]
    catalog_name, schema_name, name = split_full_name(full_name, 3, what=securable_type.replace("_", " "))
    queryset = model.objects.select_related("schema__catalog")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    row = queryset.filter(schema__catalog__name=catalog_name, schema__name=schema_name, name=name).first()
    if row is None:
        schema(caller, catalog_name, schema_name)
        raise not_found(catalog_name, schema_name, name)
    access = Access.load(caller, row)
    level = hidden_level(access, securable_type)
    if level is None:
        return row, access
    if level == 2:
        raise hidden(selectors.catalog_not_found(catalog_name))
    if level == 1:
        raise hidden(selectors.schema_not_found(catalog_name, schema_name))
    raise hidden(not_found(catalog_name, schema_name, name))


def table(caller, full_name: str, *, for_update: bool = False) -> tuple[Table, Access]:
    return in_schema(caller, SecurableType.TABLE, full_name, for_update=for_update)


def volume(caller, full_name: str, *, for_update: bool = False):
    return in_schema(caller, SecurableType.VOLUME, full_name, for_update=for_update)


def function(caller, full_name: str, *, for_update: bool = False):
    return in_schema(caller, SecurableType.FUNCTION, full_name, for_update=for_update)


def registered_model(caller, full_name: str, *, for_update: bool = False):
    return in_schema(caller, SecurableType.REGISTERED_MODEL, full_name, for_update=for_update)


# -- by id, and the metastore-level securables ------------------------------------------------------
def table_by_id(caller, table_id, *, for_update: bool = False, field: str = "table_id"):
    queryset = Table.objects.select_related("schema__catalog")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    row = queryset.filter(id=asset_selectors.parse_uuid(table_id, field=field)).first()
    return reveal(caller, row, SecurableType.TABLE, selectors.table_id_not_found(table_id))


def volume_by_id(caller, volume_id):
    row = Volume.objects.select_related("schema__catalog").filter(
        id=asset_selectors.parse_uuid(volume_id, field="volume_id")).first()
    return reveal(caller, row, SecurableType.VOLUME, asset_selectors.volume_id_not_found(volume_id))


def external_location(caller, name, *, for_update: bool = False):
    row = asset_selectors.find_external_location(name, for_update=for_update)
    return reveal(caller, row, SecurableType.EXTERNAL_LOCATION, asset_selectors.external_location_not_found(name))


def credential(caller, name, *, for_update: bool = False):
    row = asset_selectors.find_credential(name, for_update=for_update)
    return reveal(caller, row, SecurableType.CREDENTIAL, asset_selectors.credential_not_found(name))


def _metastore(caller, full_name: str):
    row = Metastore.objects.first()
    if row is None:
        raise MetastoreDoesNotExist("No metastore has been created; run `manage.py bootstrap`.")
    return row, None


def _catalog_by_full_name(caller, full_name: str):
    return catalog(caller, full_name)


RESOLVERS = {
    SecurableType.METASTORE: _metastore,
    SecurableType.CATALOG: _catalog_by_full_name,
    SecurableType.SCHEMA: schema_by_full_name,
    SecurableType.TABLE: table,
    SecurableType.VOLUME: volume,
    SecurableType.FUNCTION: function,
    SecurableType.REGISTERED_MODEL: registered_model,
    SecurableType.EXTERNAL_LOCATION: external_location,
    SecurableType.CREDENTIAL: credential,
    SecurableType.POLICY: lambda caller, full_name: in_schema(caller, SecurableType.POLICY, full_name),
}


def securable(caller, securable_type: str, full_name: str):
    """`/permissions/{securable_type}/{full_name}`: the row and the caller's access (None for the
    metastore, which everyone sees)."""
    resolver = RESOLVERS.get(securable_type)
    if resolver is None:
        known = ", ".join(sorted(RESOLVERS))
        raise InvalidParameter(f"Unknown or unsupported securable type {securable_type!r}; expected one of {known}.")
    return resolver(caller, full_name)
