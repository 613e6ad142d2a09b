import hashlib

from django.conf import settings
from django.db import transaction

from catalog import authz, resolve, schema_contract
from catalog.choices import Privilege, SecurableType
from catalog.models import Catalog, Principal, Schema
from catalog.services import grants, recipes
from catalog.services.common import validate_comment, validate_properties, validate_storage_url
from catalog.names import validate_name
from ucweb.errors import CatalogAlreadyExists, CatalogNotEmpty, PermissionDenied


# Databricks' workspace setting `default_namespace_ws` has one instance, named "default"; its value is
# the workspace's default catalog, and the schema `default` of a catalog is always assumed.
DEFAULT_NAMESPACE_SETTING_NAME = "default"


def default_namespace_setting() -> dict:
    """The workspace's default namespace setting, as Databricks answers it: the configured default
    catalog (UCWEB_DEFAULT_WAREHOUSE, the catalog Iceberg's /v1/config names when no warehouse is
    asked for). Like /v1/config it is configuration, not state: the same for every caller, whether
    that catalog exists or not and whether the caller may see it or not, so it tells nobody what
    exists."""
    catalog = settings.UCWEB_DEFAULT_WAREHOUSE
    return {
        "etag": hashlib.sha256(f"default_namespace_ws/{catalog}".encode()).hexdigest()[:16],
        "setting_name": DEFAULT_NAMESPACE_SETTING_NAME,
        "namespace": {"value": catalog},
    }


def visible_catalogs(*, caller: Principal):
    return authz.visible(Catalog.objects.all(), caller)


def get_catalog(*, caller: Principal, name: str) -> Catalog:
    catalog, _ = resolve.catalog(caller, name)  # seeing a catalog is reading it (recipes.readable)
    return catalog


@transaction.atomic
def create_catalog(*, caller: Principal, name, comment=None, properties=None, storage_root=None) -> Catalog:
    validate_name(name)
    comment = validate_comment(comment)
    properties = validate_properties(properties)
    schema_contract.require_settable(properties, applies=False, what=f"catalog {name}")
    storage_root = validate_storage_url(storage_root, field="storage_root")
    if not authz.has_metastore_privilege(caller, Privilege.CREATE_CATALOG):
        raise PermissionDenied("Missing CREATE CATALOG on the metastore.")
    if Catalog.objects.filter(name=name).exists():
        raise CatalogAlreadyExists(f"Catalog '{name}' already exists.")
    catalog = Catalog(
        name=name,
        comment=comment,
        properties=properties,
        owner=caller.name,
        created_by=caller.name,
        storage_root=storage_root,
    )
    return recipes.save_new_with_storage_root(catalog, caller=caller, kind="catalog", action="createCatalog")


UPDATABLE = recipes.Updatable(
    securable_type=SecurableType.CATALOG,
    siblings=recipes.in_the_metastore, already_exists=CatalogAlreadyExists,
)


@transaction.atomic
def update_catalog(*, caller: Principal, name: str, fields: dict) -> Catalog:
    catalog, access = resolve.catalog(caller, name)
    return recipes.update(catalog, fields, UPDATABLE, caller=caller, access=access,
                          details={k: v for k, v in fields.items() if k != "properties"})


@transaction.atomic
def delete_catalog(*, caller: Principal, name: str, force: bool) -> None:
    from catalog.services.schemas import drop_schema_contents

    catalog, access = resolve.catalog(caller, name, for_update=True)
    schemas = Schema.objects.filter(catalog=catalog)
    not_empty = CatalogNotEmpty(f"Catalog '{name}' is not empty; delete its schemas first or pass force=true.")
    with recipes.dropping_container(catalog, caller=caller, access=access, securable_type=SecurableType.CATALOG,
                                    force=force, holds_anything=schemas.exists, not_empty=not_empty):
        for schema in schemas.select_related("catalog"):
            drop_schema_contents(schema)
        grants.forget_securables([catalog.id])
        catalog.delete()
