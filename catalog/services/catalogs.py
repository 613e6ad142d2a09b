from django.db import transaction
from django.utils import timezone

from catalog import authz, locations, resolve
from catalog.authz import Action
from catalog.choices import Privilege
from catalog.models import Catalog, Grant, Principal, Schema
from catalog.services import audit, grants
from catalog.services.common import validate_comment, validate_properties, validate_storage_url
from catalog.services.names import validate_name
from ucweb.errors import (
    CatalogAlreadyExists,
    CatalogNotEmpty,
    InvalidParameter,
    PermissionDenied,
    PrincipalDoesNotExist,
)


def visible_catalogs(*, caller: Principal):
    return authz.visible(Catalog.objects.all(), caller)


def get_catalog(*, caller: Principal, name: str) -> Catalog:
    catalog, _ = resolve.catalog(caller, name)
    return catalog


@transaction.atomic
def create_catalog(*, caller: Principal, name, comment=None, properties=None, storage_root=None) -> Catalog:
    validate_name(name)
    comment = validate_comment(comment)
    properties = validate_properties(properties)
    storage_root = validate_storage_url(storage_root, field="storage_root")
    if not grants.has_metastore_privilege(caller, Privilege.CREATE_CATALOG):
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
    if storage_root:
        catalog.storage_root, catalog.storage_location = locations.place_root(
            caller=caller, value=storage_root, kind="catalog", securable_id=catalog.id)
    catalog.save()
    audit.record(
        principal=caller.name, action="createCatalog", securable_type="catalog",
        securable_name=name, securable_id=catalog.id,
    )
    return catalog


def _change_owner(securable, new_owner, *, caller: Principal, access: "grants.Access") -> None:
    if not isinstance(new_owner, str) or not new_owner:
        raise InvalidParameter("owner must be a principal name.")
    if not access.owns():
        raise PermissionDenied("Only the owner or a metastore admin may change the owner.")
    if not Principal.objects.filter(name=new_owner).exists():
        raise PrincipalDoesNotExist(f"Principal {new_owner} does not exist.")
    securable.owner = new_owner


def apply_common_update(securable, *, caller, access, comment, properties, owner, fields: dict) -> None:
    """Comment, properties and owner are updated the same way on every securable."""
    if "comment" in fields:
        securable.comment = validate_comment(comment)
    if "properties" in fields:
        securable.properties = validate_properties(properties)
    if "owner" in fields and owner is not None and owner != securable.owner:
        _change_owner(securable, owner, caller=caller, access=access)
    securable.updated_at = timezone.now()
    securable.updated_by = caller.name


@transaction.atomic
def update_catalog(*, caller: Principal, name: str, fields: dict) -> Catalog:
    catalog, access = resolve.catalog(caller, name)
    authz.require(caller, catalog, Action.UPDATE, access=access)
    new_name = fields.get("new_name")
    if new_name is not None and new_name != catalog.name:
        validate_name(new_name, field="new_name")
        if Catalog.objects.filter(name=new_name).exists():
            raise CatalogAlreadyExists(f"Catalog '{new_name}' already exists.")
        catalog.name = new_name
    apply_common_update(
        catalog, caller=caller, access=access, comment=fields.get("comment"),
        properties=fields.get("properties"), owner=fields.get("owner"), fields=fields,
    )
    catalog.save()
    Grant.objects.filter(securable_id=catalog.id).update(securable_name=catalog.name)
    audit.record(
        principal=caller.name, action="updateCatalog", securable_type="catalog",
        securable_name=catalog.name, securable_id=catalog.id,
        details={k: v for k, v in fields.items() if k != "properties"},
    )
    return catalog


@transaction.atomic
def delete_catalog(*, caller: Principal, name: str, force: bool) -> None:
    catalog, access = resolve.catalog(caller, name)
    authz.require(caller, catalog, Action.DELETE, access=access)
    schemas = Schema.objects.filter(catalog=catalog)
    if not force and schemas.exists():
        raise CatalogNotEmpty(f"Catalog '{name}' is not empty; delete its schemas first or pass force=true.")
    from catalog.services.schemas import drop_schema_contents

    for schema in schemas.select_related("catalog"):
        drop_schema_contents(schema)
    grants.forget_securables([catalog.id])
    catalog.delete()
    audit.record(
        principal=caller.name, action="deleteCatalog", securable_type="catalog",
        securable_name=name, securable_id=catalog.id, details={"force": force},
    )
