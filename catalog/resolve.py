"""Name or id → row, for every securable: the one place where the namespace is looked up.

No existence oracle: what the caller may not see is answered exactly as what does not exist, with
the same status, error code and message (only the name in it differs, and it is the name the
caller sent). Someone who may see an object but lacks the privilege for an action gets a 403 from
the service that checks the action; that tells nothing the caller could not list anyway.

What a caller sees is what the list endpoints show them:

    catalog            USE CATALOG on it (or owning it)
    schema             the catalog, and USE SCHEMA on the schema, a schema it lies in or the
                       catalog (or owning one of them)
    table              the schema, and SELECT or MODIFY on the table, its schemas or catalog
    volume             the schema, and READ VOLUME at some level
    function, model    the schema, and EXECUTE at some level
    policy             the schema, and APPLY POLICY at some level
    external location,
    credential         any privilege on it (or owning it)

Schemas nest (Iceberg namespaces of several levels): a privilege granted on a schema holds in
every schema inside it, as one granted on a catalog holds in its schemas. Metastore admins see
everything. A lookup walks down from the catalog, so an object inside a catalog the caller may not
see answers "catalog not found", as it would if the catalog were gone.

The resolvers for a caller return the row and the caller's `Access` to it (one grants query), so
that the service checks its action without loading the grants again. The `find_*` and `get_*`
lookups take no caller: they are for the services that decide visibility themselves.
"""

from __future__ import annotations

from catalog import authz, rows
from catalog.authz import Access, Action
from catalog.choices import SecurableType
from catalog import lookup_errors
from catalog.models import (
    Catalog,
    Credential,
    ExternalLocation,
    Function,
    Metastore,
    ModelVersion,
    Policy,
    Principal,
    RegisteredModel,
    Schema,
    Table,
    Volume,
)
from catalog.names import namespace_levels, namespace_path, quote_part, schema_paths, split_nested_full_name
from ucweb.errors import (
    CatalogDoesNotExist,
    CatalogError,
    CredentialDoesNotExist,
    ExternalLocationDoesNotExist,
    FunctionDoesNotExist,
    InvalidParameter,
    MetastoreDoesNotExist,
    ModelVersionDoesNotExist,
    PolicyDoesNotExist,
    RegisteredModelDoesNotExist,
    SchemaDoesNotExist,
    TableDoesNotExist,
    VolumeDoesNotExist,
)
from ucweb.ids import parse_uuid

# -- what a caller sees ---------------------------------------------------------------------------
def reveal(caller, row, missing: CatalogError) -> tuple:
    """`row` and the caller's access to it when the caller may see it; `missing` otherwise (and
    when there is no row). For lookups whose answer names no container (ids, Iceberg)."""
    if row is None:
        raise missing
    return row, authz.require(caller, row, Action.SEE, missing=missing)


# -- lookups without a caller ---------------------------------------------------------------------
def lockable(queryset, for_update: bool):
    """`queryset`, locking the rows of its own table that it reads when `for_update` (never the
    joined containers': a write locks what it changes)."""
    return queryset.select_for_update(of=("self",)) if for_update else queryset


def find_catalog(name: str, *, for_update: bool = False) -> Catalog | None:
    return lockable(Catalog.objects.all(), for_update).filter(name=name).first() if isinstance(name, str) else None


def _find_schema(catalog_filter: dict, paths: list[str], *, for_update: bool = False) -> Schema | None:
    queryset = lockable(Schema.objects.select_related("catalog"), for_update)
    rows = {row.path: row for row in queryset.filter(**catalog_filter, path__in=paths)}
    return next((rows[path] for path in paths if path in rows), None)


def find_schema(catalog_name: str, schema_name: str, *, for_update: bool = False) -> Schema | None:
    """A schema by its Unity Catalog name (`default`, `a.b` nested, `new.db` or `` `new.db` ``)."""
    return _find_schema({"catalog__name": catalog_name}, schema_paths(schema_name), for_update=for_update)


def _shown_path(schema_name) -> str:
    """How an error names a schema that is not there: as the caller wrote it, back-quoted when
    that is what would name the one-level schema."""
    paths = schema_paths(schema_name)
    return paths[0] if paths else str(schema_name)


def find_namespace(catalog: Catalog, levels: list[str], *, for_update: bool = False) -> Schema | None:
    """A schema by its Iceberg namespace levels."""
    row = _find_schema({"catalog": catalog}, [namespace_path(levels)], for_update=for_update)
    if row is not None:
        row.catalog = catalog
    return row


def get_catalog(name: str) -> Catalog:
    catalog = find_catalog(name)
    if catalog is None:
        raise lookup_errors.catalog_not_found(name)
    return catalog


def get_schema(catalog_name: str, schema_name: str) -> Schema:
    schema = find_schema(catalog_name, schema_name)
    if schema is None:
        get_catalog(catalog_name)
        raise lookup_errors.schema_not_found(catalog_name, _shown_path(schema_name))
    return schema


def get_table(catalog_name: str, schema_name: str, table_name: str, *, for_update: bool = False) -> Table:
    schema = get_schema(catalog_name, schema_name)
    table = lockable(Table.objects.select_related("schema__catalog"), for_update).filter(
        schema=schema, name=table_name).first()
    if table is None:
        raise lookup_errors.table_not_found(catalog_name, schema.path, table_name)
    return table


def get_table_by_full_name(full_name: str, *, for_update: bool = False) -> Table:
    catalog_name, path, name = _split_in_schema(full_name, "table")
    return get_table(catalog_name, path, name, for_update=for_update)


def find_credential(name, *, for_update: bool = False) -> Credential | None:
    return lockable(Credential.objects.all(), for_update).filter(name=name).first() if isinstance(name, str) else None


def find_external_location(name, *, for_update: bool = False) -> ExternalLocation | None:
    queryset = lockable(ExternalLocation.objects.select_related("credential"), for_update)
    return queryset.filter(name=name).first() if isinstance(name, str) else None


def parse_version(value) -> int:
    """A model version number from a path or a body: a positive integer."""
    if isinstance(value, bool):
        raise InvalidParameter("version must be a positive integer.")
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if not isinstance(value, int) or not 1 <= value < 2**63:
        raise InvalidParameter(f"version must be a positive integer, not {value!r}.")
    return value


def get_model_version(model: RegisteredModel, version, *, for_update: bool = False) -> ModelVersion:
    number = parse_version(version)
    queryset = lockable(ModelVersion.objects.select_related("model__schema__catalog"), for_update)
    row = queryset.filter(model=model, version=number).first()
    if row is None:
        raise ModelVersionDoesNotExist(f"Model version {model.full_name}/{number} does not exist.")
    return row


# -- the namespace, by name, for a caller -----------------------------------------------------------
def catalog(caller, name: str, *, for_update: bool = False) -> tuple[Catalog, Access]:
    if for_update or not isinstance(name, str) or not isinstance(caller, Principal):
        row = find_catalog(name, for_update=for_update)
        return reveal(caller, row, lookup_errors.catalog_not_found(name))
    # The row with the caller's grants on it: one statement, compiled once per process
    row = rows.catalog(caller, name)
    missing = lookup_errors.catalog_not_found(name)
    if row is None:
        raise missing
    return row, authz.require(caller, row, Action.SEE, access=authz.access_to_read(caller, row), missing=missing)


def _schema(caller, catalog_name: str, row: Schema | None, path: str) -> tuple[Schema, Access]:
    if row is None:
        catalog(caller, catalog_name)
        raise lookup_errors.schema_not_found(catalog_name, path)
    return row, authz.require(caller, row, Action.SEE)  # hidden: the "not found" of the hidden link


def schema(caller, catalog_name: str, schema_name: str, *, for_update: bool = False) -> tuple[Schema, Access]:
    """A schema by its catalog's name and its Unity Catalog name (see `find_schema`)."""
    row = find_schema(catalog_name, schema_name, for_update=for_update)
    return _schema(caller, catalog_name, row, row.path if row else _shown_path(schema_name))


def schema_by_full_name(caller, full_name: str, **kwargs) -> tuple[Schema, Access]:
    """`unity.default`, `unity.a.b` (nested), unity.`new.db`."""
    pieces = split_nested_full_name(full_name, 2, what="schema")
    path = namespace_path(pieces[1:])
    row = _find_schema({"catalog__name": pieces[0]}, [path], **kwargs)
    return _schema(caller, pieces[0], row, path)


def namespace(caller, catalog: Catalog, namespace, *, missing=SchemaDoesNotExist,
              for_update: bool = False) -> tuple[Schema, Access]:
    """An Iceberg namespace (its levels, or the path segment that joins them) of a catalog the
    caller sees: the schema and the caller's access, or `missing` ("Namespace a.b does not
    exist.") when it is not there for them."""
    levels = namespace_levels(namespace)
    if not levels or not all(isinstance(level, str) and level for level in levels):
        raise missing(f"Namespace {'.'.join(map(str, levels))} does not exist.")
    row = find_namespace(catalog, levels, for_update=for_update)
    return reveal(caller, row, missing(f"Namespace {'.'.join(levels)} does not exist."))


# What lies in a schema: (model, error when missing).
IN_SCHEMA = {
    SecurableType.TABLE: (Table, lookup_errors.table_not_found),
    SecurableType.VOLUME: (Volume, lookup_errors.volume_not_found),
    SecurableType.FUNCTION: (Function, lookup_errors.function_not_found),
    SecurableType.REGISTERED_MODEL: (RegisteredModel, lookup_errors.registered_model_not_found),
    SecurableType.POLICY: (Policy, lookup_errors.policy_not_found),
}


def _split_in_schema(full_name: str, what: str) -> tuple[str, str, str]:
    pieces = split_nested_full_name(full_name, 3, what=what)
    return pieces[0], namespace_path(pieces[1:-1]), pieces[-1]


def in_schema(caller, securable_type: str, full_name: str, *, for_update: bool = False):
    """A table, volume, function, registered model or policy named `catalog.schema.name` (the
    schema may be nested: `catalog.a.b.name`)."""
    model, not_found = IN_SCHEMA[securable_type]
    catalog_name, path, name = _split_in_schema(full_name, securable_type.replace("_", " "))
    queryset = lockable(model.objects.select_related("schema__catalog"), for_update)
    row = queryset.filter(schema__catalog__name=catalog_name, schema__path=path, name=name).first()
    if row is None:
        _schema(caller, catalog_name, _find_schema({"catalog__name": catalog_name}, [path]), path)
        raise not_found(catalog_name, path, name)
    return row, authz.require(caller, row, Action.SEE)  # hidden: the "not found" of the hidden link


def table(caller, full_name: str, *, for_update: bool = False, columns: bool = False) -> tuple[Table, Access]:
    """With `columns`, the table's columns come with it where the database allows (`rows.tables`)."""
    if for_update or not isinstance(caller, Principal):
        return in_schema(caller, SecurableType.TABLE, full_name, for_update=for_update)
    # The row with its schema, catalog and the caller's grants on the three: one statement,
    # compiled once per process (what in_schema does, without the ORM)
    catalog_name, path, name = _split_in_schema(full_name, "table")
    found = rows.tables(caller, rows.by_name(1), [catalog_name, path, name], columns=columns)
    if not found:
        _schema(caller, catalog_name, _find_schema({"catalog__name": catalog_name}, [path]), path)
        raise lookup_errors.table_not_found(catalog_name, path, name)
    row = found[0]
    return row, authz.require(caller, row, Action.SEE, access=authz.access_to_read(caller, row))


def volume(caller, full_name: str, *, for_update: bool = False):
    return in_schema(caller, SecurableType.VOLUME, full_name, for_update=for_update)


def function(caller, full_name: str, *, for_update: bool = False):
    return in_schema(caller, SecurableType.FUNCTION, full_name, for_update=for_update)


def registered_model(caller, full_name: str, *, for_update: bool = False):
    return in_schema(caller, SecurableType.REGISTERED_MODEL, full_name, for_update=for_update)


def policy(caller, full_name: str, *, for_update: bool = False):
    return in_schema(caller, SecurableType.POLICY, full_name, for_update=for_update)


# -- by id, and the metastore-level securables ------------------------------------------------------
def table_by_id(caller, table_id, *, for_update: bool = False, field: str = "table_id"):
    queryset = lockable(Table.objects.select_related("schema__catalog"), for_update)
    row = queryset.filter(id=parse_uuid(table_id, field=field)).first()
    return reveal(caller, row, lookup_errors.table_id_not_found(table_id))


def volume_by_id(caller, volume_id):
    row = Volume.objects.select_related("schema__catalog").filter(id=parse_uuid(volume_id, field="volume_id")).first()
    return reveal(caller, row, lookup_errors.volume_id_not_found(volume_id))


def external_location(caller, name, *, for_update: bool = False):
    row = find_external_location(name, for_update=for_update)
    return reveal(caller, row, lookup_errors.external_location_not_found(name))


def credential(caller, name, *, for_update: bool = False):
    row = find_credential(name, for_update=for_update)
    return reveal(caller, row, lookup_errors.credential_not_found(name))


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
    SecurableType.POLICY: policy,
}


def _resolver(securable_type: str):
    resolver = RESOLVERS.get(securable_type)
    if resolver is None:
        known = ", ".join(sorted(RESOLVERS))
        raise InvalidParameter(f"Unknown or unsupported securable type {securable_type!r}; expected one of {known}.")
    return resolver


def securable(caller, securable_type: str, full_name: str):
    """`/permissions/{securable_type}/{full_name}`: the row and the caller's access (None for the
    metastore, which everyone sees)."""
    return _resolver(securable_type)(caller, full_name)


class _Everyone:
    """A caller who sees everything: lookups without a caller (tests, commands) reuse the
    resolvers above."""

    is_metastore_admin = True
    name = ""


EVERYONE = _Everyone()


def securable_row(securable_type: str, full_name: str, **kwargs):
    """The row of any securable by type and full name, whoever asks."""
    return _resolver(securable_type)(EVERYONE, full_name, **kwargs)[0]
