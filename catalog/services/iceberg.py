"""The Iceberg REST catalog over the one namespace: a warehouse (prefix) is a catalog, a namespace
is a schema, and an Iceberg table or view is a row of the one Table model. This module holds the
names, the namespaces and reading; everything that writes table metadata is in `commits`
(commits/iceberg.py, commits/engine.py)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from catalog import authz, locations, resolve, rows, schema_contract
from catalog import lookup_errors
from catalog.authz import Access, Action
from catalog.choices import DataSourceFormat, SecurableType, TableType
from catalog.models import Catalog, Principal, Schema, Table
from catalog.services import audit, dropped, schemas
from catalog.services.common import validate_properties
from catalog.names import namespace_levels, namespace_path
from ucweb.errors import (
    InvalidParameter,
    TableDoesNotExist,
    UnprocessableEntity,
    ViewDoesNotExist,
)

# -- names ---------------------------------------------------------------------------------------
# A warehouse, namespace, table or view that the caller may not see answers exactly as one that
# does not exist (catalog.resolve decides what a caller sees).
def warehouse(prefix: str, caller: Principal) -> Catalog:
    catalog, _ = resolve.reveal(caller, Catalog.objects.filter(name=prefix).first(), lookup_errors.warehouse_not_found(prefix))
    return catalog


# -- namespaces ------------------------------------------------------------------------------------
def list_namespaces(*, caller: Principal, prefix: str, parent: str | None):
    catalog = warehouse(prefix, caller)
    parent_schema = resolve.namespace(caller, catalog, parent)[0] if parent else None
    return schemas.visible_schemas(caller=caller, catalog_name=catalog.name).filter(parent=parent_schema)


def create_namespace(*, caller: Principal, prefix: str, namespace, properties) -> Schema:
    if not isinstance(namespace, list) or not all(isinstance(level, str) for level in namespace):
        raise InvalidParameter("namespace must be an array of strings.")
    if not namespace:
        raise InvalidParameter("namespace must have at least one level.")
    properties = validate_properties(properties)
    location = properties.get("location")
    catalog = warehouse(prefix, caller)
    # A nested namespace is a schema inside its parent, which must exist (Polaris does the same).
    parent = resolve.namespace(caller, catalog, namespace[:-1])[0] if len(namespace) > 1 else None
    schema = schemas.create_schema(
        caller=caller, name=namespace[-1], catalog_name=catalog.name, parent=parent,
        comment=properties.get("comment"), properties=properties, storage_root=location, iceberg=True,
    )
    return schema


def load_namespace(*, caller: Principal, prefix: str, namespace: str) -> Schema:
    return resolve.namespace(caller, warehouse(prefix, caller), namespace)[0]


def drop_namespace(*, caller: Principal, prefix: str, namespace: str) -> None:
    schema, _ = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    schemas.delete_schema(caller=caller, full_name=schema.full_name, force=False)


@transaction.atomic
def update_namespace_properties(*, caller: Principal, prefix: str, namespace: str, removals, updates) -> dict:
    schema, access = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    access.require(access.owns(), f"Only the owner of namespace {schema.name} may change its properties.")
    removals = removals or []
    if not isinstance(removals, list) or not all(isinstance(key, str) for key in removals):
        raise InvalidParameter("removals must be an array of property names.")
    updates = validate_properties(updates, field="updates")
    overlap = sorted(set(removals) & set(updates))
    if overlap:
        raise UnprocessableEntity(f"Properties cannot be both updated and removed: {', '.join(overlap)}.")
    properties = dict(schema.properties)
    removed = [key for key in removals if key in properties]
    missing = [key for key in removals if key not in properties]
    for key in removed:
        del properties[key]
    properties.update(updates)
    schema_contract.require_settable(properties, applies=False, what=f"namespace {schema.name}")
    schema.properties = properties
    if "comment" in updates or "comment" in removed:
        schema.comment = updates.get("comment")
    schema.updated_at = timezone.now()
    schema.updated_by = caller.name
    schema.save()
    audit.record(
        principal=caller.name, action="updateNamespaceProperties", securable_type="schema",
        securable_name=schema.full_name, securable_id=schema.id,
        details={"updated": sorted(updates), "removed": removed},
    )
    # `missing` is optional in the spec, but pyiceberg requires the field: always an array.
    return {"updated": sorted(updates), "removed": removed, "missing": missing}


# -- reading tables and views ------------------------------------------------------------------------
def kind_filter(view: bool) -> Q:
    if view:
        return Q(table_type=TableType.VIEW, data_source_format=DataSourceFormat.ICEBERG)
    return Q(data_source_format=DataSourceFormat.ICEBERG) & ~Q(table_type=TableType.VIEW)


def list_tables(*, caller: Principal, prefix: str, namespace: str, view: bool = False):
    schema, access = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    return authz.visible(Table.objects.filter(kind_filter(view), schema=schema), caller, access=access)


def is_kind(table: Table, view: bool) -> bool:
    """`kind_filter` of one row."""
    if table.data_source_format != DataSourceFormat.ICEBERG:
        return False
    return (table.table_type == TableType.VIEW) == view


def find(caller: Principal, prefix: str, namespace, name: str, *, view: bool,
          for_update: bool = False) -> tuple[Table, Access]:
    """The table or view and the caller's access to it, once the caller may see it (SELECT or
    MODIFY: `authz.SEEN_WITH`). A hit costs one query (catalog.rows: the table with its schema,
    warehouse, metadata and the caller's grants on the chain); locked, two (the row, then its
    metadata) and the grants."""
    missing = ViewDoesNotExist if view else TableDoesNotExist
    levels = namespace_levels(namespace)
    # Spark resolves `db.t.snapshots` by loading table `snapshots` in namespace `db.t` first: a
    # namespace that does not exist must answer "no such table", not "no such namespace".
    if not all(levels):
        warehouse(prefix, caller)  # a warehouse the caller may not see does not exist either
        raise missing(f"Namespace {'.'.join(levels)} does not exist.")
    if for_update:
        # Locked, the table's metadata is read by a statement of its own (the lazy `table.iceberg`),
        # so it is the version the lock protects (see commits.engine.lock).
        table = Table.objects.select_related("schema__catalog").select_for_update(of=("self",)).filter(
            kind_filter(view), schema__catalog__name=prefix, schema__path=namespace_path(levels), name=name).first()
    else:
        found = rows.tables(caller, rows.by_name(1), [prefix, namespace_path(levels), name], iceberg=True)
        table = found[0] if found and is_kind(found[0], view) else None
    what = "View" if view else "Table"
    not_found = missing(f"{what} {'.'.join(levels)}.{name} does not exist.")
    if table is None or not hasattr(table, "iceberg"):
        warehouse(prefix, caller)  # a warehouse the caller may not see does not exist either
        raise not_found

    access = None if for_update else authz.access_to_read(caller, table)
    return table, authz.require(caller, table, Action.SEE, access=access,
                                missing=missing_in_warehouse(prefix, not_found))


@transaction.atomic
def undrop_table(*, caller: Principal, prefix: str, namespace, name: str) -> Table:
    """By name, the Iceberg table of the namespace dropped last under `name` (as Databricks' UNDROP
    TABLE does), restored for its owner or an admin (catalog.services.dropped)."""
    schema, _ = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    not_found = TableDoesNotExist(f"Table {'.'.join(namespace_levels(namespace))}.{name} does not exist.")
    row = (Table.with_dropped.select_for_update(of=("self",)).select_related("schema__catalog")
           .filter(kind_filter(view=False), schema=schema, name=name, dropped_at__isnull=False)
           .order_by("-dropped_at").first())
    if row is None:
        raise not_found
    if not authz.Access.load(caller, row).owns():
        raise authz.hidden(not_found).about(row)
    return dropped.restore_row(caller, SecurableType.TABLE, row)


def missing_in_warehouse(prefix: str, not_found):
    """`authz.require`'s `missing` for a table or view named in warehouse `prefix`: a catalog the
    caller may not see is a warehouse that does not exist; any other hidden link is `not_found`."""
    return lambda row: lookup_errors.warehouse_not_found(prefix) if isinstance(row, Catalog) else not_found


def require_write(caller: Principal, table: Table, access: Access | None = None) -> Access:
    """MODIFY on an Iceberg table or view (its commits, notifications and view replacements)."""
    return authz.require(caller, table, Action.WRITE, access=access, missing=None,
                  refused=f"Missing MODIFY on {table.full_name}.")


def storage_config(location: str | None) -> dict:
    """FileIO settings a client needs for the table's storage (never long-lived secrets)."""
    if not location or not location.startswith(("s3://", "s3a://")):
        return {}
    config = {"s3.path-style-access": "true"}
    endpoint = getattr(settings, "UCWEB_S3_ENDPOINT_URL", None)
    region = getattr(settings, "UCWEB_S3_REGION", None)
    if endpoint:
        config["s3.endpoint"] = endpoint
    if region:
        config["s3.region"] = config["client.region"] = region
    return config


def server_storage_config(location: str | None) -> dict:
    """FileIO settings for the server itself to read the table's files (its own S3 keys beside
    `storage_config`'s): what maintenance and the console read manifests and data with."""
    properties = storage_config(location)
    if settings.AWS_ACCESS_KEY_ID and properties:
        properties |= {"s3.access-key-id": settings.AWS_ACCESS_KEY_ID,
                       "s3.secret-access-key": settings.AWS_SECRET_ACCESS_KEY or ""}
    return properties


@dataclass
class Loaded:
    table: Table
    metadata_location: str
    metadata_json: str
    config: dict
    storage_credentials: list | None = None  # delegated access (catalog.services.iceberg_credentials)
    access: Access | None = None  # the caller's, when the table was read for them

    def etag(self, snapshots: str | None = None) -> str:
        return etag_for(self.metadata_location, snapshots)


def etag_for(metadata_location: str, snapshots: str | None = None) -> str:
    """One tag per metadata version and representation: `snapshots=refs` leaves snapshots out,
    so its body gets another tag than the full one (`all`, the default)."""
    representation = "refs" if snapshots == "refs" else "all"
    digest = hashlib.sha256(f"{metadata_location}\n{representation}".encode()).hexdigest()
    return f'"{digest[:32]}"'


def load_table(*, caller: Principal, prefix: str, namespace: str, name: str, view: bool = False) -> Loaded:
    table, access = find(caller, prefix, namespace, name, view=view)
    return Loaded(table, table.iceberg.metadata_location, table.iceberg.metadata_json,
                  storage_config(table.storage_location), access=access)


def table_exists(*, caller: Principal, prefix: str, namespace: str, name: str, view: bool = False) -> None:
    find(caller, prefix, namespace, name, view=view)


def credentials(loaded: Loaded) -> dict:
    """`GET .../credentials` of a loaded table: its storage settings, once its location is its own."""
    table = loaded.table
    locations.require_own_location(table.storage_location, own_id=table.id, what=f"table {table.full_name}")
    return {"storage-credentials": [{"prefix": table.storage_location, "config": loaded.config}]}
