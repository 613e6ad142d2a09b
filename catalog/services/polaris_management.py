"""Apache Polaris's management model (catalogs, principals, principal roles, catalog roles and
their grants) on ucweb's own governance: nothing here is stored apart from the Unity Catalog rows
every other protocol reads.

    Polaris                       ucweb
    catalog (INTERNAL)            a catalog; properties.default-base-location is its storage root
    principal                     a service principal (client id and secret)
    principal role                a group of kind PRINCIPAL_ROLE; its members are principals
    catalog role r of catalog c   a group of kind CATALOG_ROLE named "c.r" (catalog names hold no
                                  dot, so the first dot splits it); its members are principal roles
    a privilege granted to a      a set of Unity Catalog privileges granted to that group on the
    catalog role                  matching securable, with USE CATALOG and USE SCHEMA on the way
                                  to it (catalog.services.polaris_grants)

Only a metastore admin (Polaris's service_admin) may call any of it.
"""

from __future__ import annotations

from django.db import transaction

from catalog.choices import GroupKind
from catalog.models import Catalog, Group, Principal
from catalog.services import catalogs, groups, principals
from catalog.services.common import validate_properties
from ucweb.errors import AlreadyExists, GroupDoesNotExist, InvalidParameter, PermissionDenied, PrincipalDoesNotExist

DEFAULT_BASE_LOCATION = "default-base-location"
STORAGE_TYPES = {"file": "FILE", "s3": "S3", "s3a": "S3", "gs": "GCS", "abfss": "AZURE", "abfs": "AZURE"}


def require_service_admin(caller: Principal) -> None:
    if not caller.is_metastore_admin:
        raise PermissionDenied("Only a metastore admin (Polaris's service_admin) may use the management API.")


def _entity(body, key: str) -> dict:
    """The object a Polaris request wraps under `key` ({"principal": {...}})."""
    entity = body.get(key)
    if not isinstance(entity, dict):
        raise InvalidParameter(f"The request needs an object {key}.")
    return entity


def _string_properties(value) -> dict:
    return validate_properties(value)


# -- catalogs ------------------------------------------------------------------------------------
def list_catalogs(*, caller: Principal) -> list[Catalog]:
    require_service_admin(caller)
    return list(Catalog.objects.order_by("name"))


def get_catalog(*, caller: Principal, name: str) -> Catalog:
    require_service_admin(caller)
    return catalogs.get_catalog(caller=caller, name=name)


def storage_type_of(location: str | None) -> str:
    scheme = (location or "").split("://", 1)[0].lower()
    return STORAGE_TYPES.get(scheme, "FILE")


def _check_storage(storage, location: str) -> None:
    """A ucweb catalog has one location: allowedLocations may name only it."""
    if storage is None:
        return
    if not isinstance(storage, dict):
        raise InvalidParameter("storageConfigInfo must be an object.")
    declared = storage.get("storageType")
    if declared is not None and declared != storage_type_of(location):
        raise InvalidParameter(f"storageType {declared} does not match {DEFAULT_BASE_LOCATION} {location}.")
    allowed = storage.get("allowedLocations") or []
    if not isinstance(allowed, list) or any(
            not isinstance(item, str) or item.rstrip("/") != location.rstrip("/") for item in allowed):
        raise InvalidParameter(f"A catalog has one location: allowedLocations may name only its "
                               f"{DEFAULT_BASE_LOCATION} ({location}).")


@transaction.atomic
def create_catalog(*, caller: Principal, body: dict) -> Catalog:
    require_service_admin(caller)
    entity = _entity(body, "catalog")
    if entity.get("type", "INTERNAL") != "INTERNAL":
        raise InvalidParameter("Only INTERNAL catalogs can be created; ucweb federates no external catalog.")
    properties = _string_properties(entity.get("properties"))
    location = properties.pop(DEFAULT_BASE_LOCATION, None)
    if not isinstance(location, str) or not location:
        raise InvalidParameter(f"properties.{DEFAULT_BASE_LOCATION} is required.")
    _check_storage(entity.get("storageConfigInfo"), location)
    return catalogs.create_catalog(caller=caller, name=entity.get("name"), properties=properties,
                                   storage_root=location)


@transaction.atomic
def update_catalog(*, caller: Principal, name: str, body: dict) -> Catalog:
    """Properties may change; the location may not (it would move every managed table)."""
    require_service_admin(caller)
    catalog = catalogs.get_catalog(caller=caller, name=name)
    properties = _string_properties(body.get("properties"))
    location = properties.pop(DEFAULT_BASE_LOCATION, catalog.storage_root)
    if (location or "").rstrip("/") != (catalog.storage_root or "").rstrip("/"):
        raise InvalidParameter(f"A catalog's {DEFAULT_BASE_LOCATION} cannot change.")
    _check_storage(body.get("storageConfigInfo"), catalog.storage_root or "")
    if body.get("properties") is None:
        return catalog
    return catalogs.update_catalog(caller=caller, name=name, fields={"properties": properties})


@transaction.atomic
def delete_catalog(*, caller: Principal, name: str) -> None:
    """An empty catalog goes with its catalog roles (and their grants)."""
    require_service_admin(caller)
    catalog = catalogs.get_catalog(caller=caller, name=name)
    for role in Group.objects.filter(catalog=catalog, kind=GroupKind.CATALOG_ROLE):
        groups.delete_group(caller=caller, name=role.name)
    catalogs.delete_catalog(caller=caller, name=name, force=False)


# -- principals ----------------------------------------------------------------------------------
def _principal(name) -> Principal:
    principal = Principal.objects.filter(name=name).first() if isinstance(name, str) else None
    if principal is None:
        raise PrincipalDoesNotExist(f"Principal {name} does not exist.")
    return principal


def list_principals(*, caller: Principal) -> list[Principal]:
    require_service_admin(caller)
    return list(Principal.objects.filter(active=True).order_by("name"))


def get_principal(*, caller: Principal, name: str) -> Principal:
    require_service_admin(caller)
    return _principal(name)


@transaction.atomic
def create_principal(*, caller: Principal, body: dict) -> tuple[Principal, str, str]:
    """A new service principal and its client credentials (the secret is shown only now)."""
    require_service_admin(caller)
    entity = _entity(body, "principal")
    name = principals.validate_principal_name(entity.get("name"))
    _string_properties(entity.get("properties"))
    if Principal.objects.filter(name=name).exists() or Group.objects.filter(name=name).exists():
        raise AlreadyExists(f"Principal {name} already exists.")
    return principals.create_service_principal(name=name, actor=caller.name)


@transaction.atomic
def rotate_credentials(*, caller: Principal, name: str) -> tuple[Principal, str, str]:
    require_service_admin(caller)
    principal = _principal(name)
    if not principal.client_id:
        raise InvalidParameter(f"Principal {name} has no client credentials to rotate.")
    return principals.create_service_principal(name=name, rotate=True, actor=caller.name)


@transaction.atomic
def delete_principal(*, caller: Principal, name: str) -> None:
    """The principal, its tokens, its roles and its direct grants go; a metastore admin stays
    while it is the last one, and nobody deletes themselves."""
    require_service_admin(caller)
    principal = _principal(name)
    if principal.id == caller.id:
        raise InvalidParameter("A principal cannot delete itself.")
    if principal.is_metastore_admin and not Principal.objects.filter(is_metastore_admin=True).exclude(
            id=principal.id).exists():
        raise InvalidParameter(f"{name} is the last metastore admin.")
    principals.delete_principal(caller=caller, principal=principal, details={"via": "polaris"})


# -- principal roles -----------------------------------------------------------------------------
def _principal_role(name) -> Group:
    role = Group.objects.filter(name=name, kind=GroupKind.PRINCIPAL_ROLE).first() if isinstance(name, str) else None
    if role is None:
        raise GroupDoesNotExist(f"Principal role {name} does not exist.")
    return role


def list_principal_roles(*, caller: Principal) -> list[Group]:
    require_service_admin(caller)
    return list(Group.objects.filter(kind=GroupKind.PRINCIPAL_ROLE).order_by("name"))


def get_principal_role(*, caller: Principal, name: str) -> Group:
    require_service_admin(caller)
    return _principal_role(name)


@transaction.atomic
def create_principal_role(*, caller: Principal, body: dict) -> Group:
    require_service_admin(caller)
    entity = _entity(body, "principalRole")
    if entity.get("federated"):
        raise InvalidParameter("Federated principal roles are not supported.")
    role = groups.create_group(caller=caller, name=entity.get("name"), kind=GroupKind.PRINCIPAL_ROLE)
    return _with_properties(role, entity)


def _with_properties(role: Group, entity: dict) -> Group:
    role.properties = _string_properties(entity.get("properties"))
    role.save(update_fields=["properties"])
    return role


@transaction.atomic
def delete_principal_role(*, caller: Principal, name: str) -> None:
    require_service_admin(caller)
    groups.delete_group(caller=caller, name=_principal_role(name).name)


def principal_roles_of(*, caller: Principal, principal: str) -> list[Group]:
    require_service_admin(caller)
    member = _principal(principal)
    return list(Group.objects.filter(kind=GroupKind.PRINCIPAL_ROLE, members__principal=member).order_by("name"))


def principals_in_role(*, caller: Principal, role: str) -> list[Principal]:
    require_service_admin(caller)
    group = _principal_role(role)
    return list(Principal.objects.filter(memberships__group=group).order_by("name"))


@transaction.atomic
def assign_principal_role(*, caller: Principal, principal: str, body: dict) -> None:
    require_service_admin(caller)
    _principal(principal)
    role = _principal_role(_entity(body, "principalRole").get("name"))
    groups.update_members(caller=caller, name=role.name, add_principals=[principal])


@transaction.atomic
def revoke_principal_role(*, caller: Principal, principal: str, role: str) -> None:
    require_service_admin(caller)
    _principal(principal)
    groups.update_members(caller=caller, name=_principal_role(role).name, remove_principals=[principal])


# -- catalog roles -------------------------------------------------------------------------------
def catalog_role_group_name(catalog: Catalog, role: str) -> str:
    return f"{catalog.name}.{role}"


def catalog_role_name(group: Group) -> str:
    """The Polaris name of a catalog role: its group's name after the first dot."""
    return group.name.split(".", 1)[1]


def _catalog(caller: Principal, name: str) -> Catalog:
    return catalogs.get_catalog(caller=caller, name=name)


def catalog_role(catalog: Catalog, name, *, for_update: bool = False) -> Group:
    rows = Group.objects.select_for_update() if for_update else Group.objects
    role = rows.filter(catalog=catalog, kind=GroupKind.CATALOG_ROLE,
                       name=catalog_role_group_name(catalog, name)).first() if isinstance(name, str) else None
    if role is None:
        raise GroupDoesNotExist(f"Catalog role {name} does not exist in catalog {catalog.name}.")
    return role


def list_catalog_roles(*, caller: Principal, catalog: str) -> list[Group]:
    require_service_admin(caller)
    return list(Group.objects.filter(catalog=_catalog(caller, catalog), kind=GroupKind.CATALOG_ROLE).order_by("name"))


def get_catalog_role(*, caller: Principal, catalog: str, role: str) -> Group:
    require_service_admin(caller)
    return catalog_role(_catalog(caller, catalog), role)


@transaction.atomic
def create_catalog_role(*, caller: Principal, catalog: str, body: dict) -> Group:
    require_service_admin(caller)
    row = _catalog(caller, catalog)
    entity = _entity(body, "catalogRole")
    name = principals.validate_principal_name(entity.get("name"), what="catalog role")
    role = groups.create_group(caller=caller, name=catalog_role_group_name(row, name), kind=GroupKind.CATALOG_ROLE,
                               catalog=row)
    return _with_properties(role, entity)


@transaction.atomic
def delete_catalog_role(*, caller: Principal, catalog: str, role: str) -> None:
    """The role's grants and its assignments to principal roles go with it (as in Polaris)."""
    require_service_admin(caller)
    groups.delete_group(caller=caller, name=catalog_role(_catalog(caller, catalog), role).name)


def catalog_roles_of(*, caller: Principal, principal_role: str, catalog: str) -> list[Group]:
    require_service_admin(caller)
    role = _principal_role(principal_role)
    return list(Group.objects.filter(catalog=_catalog(caller, catalog), kind=GroupKind.CATALOG_ROLE,
                                     members__member_group=role).order_by("name"))


def principal_roles_holding(*, caller: Principal, catalog: str, role: str) -> list[Group]:
    require_service_admin(caller)
    group = catalog_role(_catalog(caller, catalog), role)
    return list(Group.objects.filter(kind=GroupKind.PRINCIPAL_ROLE, memberships__group=group).order_by("name"))


@transaction.atomic
def assign_catalog_role(*, caller: Principal, principal_role: str, catalog: str, body: dict) -> None:
    require_service_admin(caller)
    holder = _principal_role(principal_role)
    role = catalog_role(_catalog(caller, catalog), _entity(body, "catalogRole").get("name"))
    groups.update_members(caller=caller, name=role.name, add_groups=[holder.name])


@transaction.atomic
def revoke_catalog_role(*, caller: Principal, principal_role: str, catalog: str, role: str) -> None:
    require_service_admin(caller)
    holder = _principal_role(principal_role)
    group = catalog_role(_catalog(caller, catalog), role)
    groups.update_members(caller=caller, name=group.name, remove_groups=[holder.name])
