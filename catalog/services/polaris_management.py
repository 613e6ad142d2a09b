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
    catalog role                  matching securable (POLARIS_PRIVILEGES), with USE CATALOG and
                                  USE SCHEMA on the way to it

Only a metastore admin (Polaris's service_admin) may call any of it. A grant's UC privileges are
its whole record: listing reads them back (PolarisGrant.of), so a grant made through the UC API
with the same privileges lists the same, and one revoke takes away what its privilege maps to.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from catalog import resolve
from catalog.choices import AuditAction, GroupKind, Privilege, SecurableType
from catalog.models import Catalog, Grant, Group, Principal, Schema, Table
from catalog.services import audit, catalogs, grants, groups, principals
from catalog.services.common import validate_properties
from ucweb.errors import (
    AlreadyExists,
    GroupDoesNotExist,
    InvalidParameter,
    PermissionDenied,
    PrincipalDoesNotExist,
    SchemaDoesNotExist,
    TableDoesNotExist,
)

DEFAULT_BASE_LOCATION = "default-base-location"
STORAGE_TYPES = {"file": "FILE", "s3": "S3", "s3a": "S3", "gs": "GCS", "abfss": "AZURE", "abfs": "AZURE"}
USE = frozenset({Privilege.USE_CATALOG, Privilege.USE_SCHEMA})

# Polaris privilege → the Unity Catalog privileges it is, per kind of securable it is granted on.
# Listed in the order a set of UC privileges is read back (the widest first). A Polaris privilege
# missing from a securable's row has no equivalent there and is refused with 400.
POLARIS_PRIVILEGES: dict[str, dict[str, frozenset]] = {
    SecurableType.CATALOG: {
        "CATALOG_MANAGE_CONTENT": frozenset({Privilege.CREATE_SCHEMA, Privilege.CREATE_TABLE, Privilege.SELECT,
                                             Privilege.MODIFY}),
        "TABLE_WRITE_DATA": frozenset({Privilege.SELECT, Privilege.MODIFY}),
        "TABLE_READ_DATA": frozenset({Privilege.SELECT}),
        "NAMESPACE_CREATE": frozenset({Privilege.CREATE_SCHEMA}),
        "TABLE_CREATE": frozenset({Privilege.CREATE_TABLE}),
    },
    SecurableType.SCHEMA: {
        "CATALOG_MANAGE_CONTENT": frozenset({Privilege.CREATE_TABLE, Privilege.SELECT, Privilege.MODIFY}),
        "TABLE_WRITE_DATA": frozenset({Privilege.SELECT, Privilege.MODIFY}),
        "TABLE_READ_DATA": frozenset({Privilege.SELECT}),
        "TABLE_CREATE": frozenset({Privilege.CREATE_TABLE}),
    },
    SecurableType.TABLE: {
        "TABLE_WRITE_DATA": frozenset({Privilege.SELECT, Privilege.MODIFY}),
        "TABLE_READ_DATA": frozenset({Privilege.SELECT}),
    },
}
GRANT_TYPES = {"catalog": SecurableType.CATALOG, "namespace": SecurableType.SCHEMA, "table": SecurableType.TABLE}


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


def _catalog_role(catalog: Catalog, name, *, for_update: bool = False) -> Group:
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
    return _catalog_role(_catalog(caller, catalog), role)


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
    groups.delete_group(caller=caller, name=_catalog_role(_catalog(caller, catalog), role).name)


def catalog_roles_of(*, caller: Principal, principal_role: str, catalog: str) -> list[Group]:
    require_service_admin(caller)
    role = _principal_role(principal_role)
    return list(Group.objects.filter(catalog=_catalog(caller, catalog), kind=GroupKind.CATALOG_ROLE,
                                     members__member_group=role).order_by("name"))


def principal_roles_holding(*, caller: Principal, catalog: str, role: str) -> list[Group]:
    require_service_admin(caller)
    group = _catalog_role(_catalog(caller, catalog), role)
    return list(Group.objects.filter(kind=GroupKind.PRINCIPAL_ROLE, memberships__group=group).order_by("name"))


@transaction.atomic
def assign_catalog_role(*, caller: Principal, principal_role: str, catalog: str, body: dict) -> None:
    require_service_admin(caller)
    holder = _principal_role(principal_role)
    role = _catalog_role(_catalog(caller, catalog), _entity(body, "catalogRole").get("name"))
    groups.update_members(caller=caller, name=role.name, add_groups=[holder.name])


@transaction.atomic
def revoke_catalog_role(*, caller: Principal, principal_role: str, catalog: str, role: str) -> None:
    require_service_admin(caller)
    holder = _principal_role(principal_role)
    group = _catalog_role(_catalog(caller, catalog), role)
    groups.update_members(caller=caller, name=group.name, remove_groups=[holder.name])


# -- grants --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PolarisGrant:
    """One Polaris privilege on one securable of a catalog role's catalog."""

    type: str            # catalog, namespace, table
    privilege: str
    securable: object    # Catalog, Schema or Table

    @property
    def securable_type(self) -> str:
        return GRANT_TYPES[self.type]

    @property
    def uc_privileges(self) -> frozenset:
        return POLARIS_PRIVILEGES[self.securable_type][self.privilege]

    @staticmethod
    def of(securable, securable_type: str, held: set) -> list["PolarisGrant"]:
        """The Polaris privileges a set of UC privileges on one securable reads back as, widest
        first; the USE privileges are the way to it, and what has no Polaris name is not shown."""
        kind = next(key for key, value in GRANT_TYPES.items() if value == securable_type)
        found, left = [], set(held) - USE
        for privilege, uc in POLARIS_PRIVILEGES.get(securable_type, {}).items():
            if uc <= left:
                found.append(PolarisGrant(kind, privilege, securable))
                left -= uc
        return found


def _parse_grant(catalog: Catalog, grant) -> PolarisGrant:
    if not isinstance(grant, dict):
        raise InvalidParameter("The request needs an object grant.")
    kind, privilege = grant.get("type"), grant.get("privilege")
    if kind not in GRANT_TYPES:
        raise InvalidParameter(f"Grant type {kind!r} is not supported; use one of {', '.join(GRANT_TYPES)}.")
    mapped = POLARIS_PRIVILEGES[GRANT_TYPES[kind]]
    if privilege not in mapped:
        raise InvalidParameter(f"Privilege {privilege!r} has no equivalent on a {kind} in ucweb; supported: "
                               f"{', '.join(mapped)} (see the README's Polaris privilege mapping).")
    if kind == "catalog":
        return PolarisGrant(kind, privilege, catalog)
    levels = grant.get("namespace")
    if not isinstance(levels, list) or not levels or not all(isinstance(level, str) and level for level in levels):
        raise InvalidParameter("namespace must be a non-empty array of names.")
    schema = resolve.find_namespace(catalog, levels)
    if schema is None:
        raise SchemaDoesNotExist(f"Namespace {'.'.join(levels)} does not exist in catalog {catalog.name}.")
    if kind == "namespace":
        return PolarisGrant(kind, privilege, schema)
    name = grant.get("tableName")
    if not isinstance(name, str) or not name:
        raise InvalidParameter("tableName must be a non-empty string.")
    table = Table.objects.filter(schema=schema, name=name).select_related("schema__catalog").first()
    if table is None:
        raise TableDoesNotExist(f"Table {'.'.join(levels)}.{name} does not exist in catalog {catalog.name}.")
    return PolarisGrant(kind, privilege, table)


def _schema_of(securable) -> Schema | None:
    if isinstance(securable, Schema):
        return securable
    return securable.schema if isinstance(securable, Table) else None


def _way_to(securable) -> list[tuple[str, object, frozenset]]:
    """The USE privileges a grant on `securable` needs on the way to it: USE CATALOG on the
    catalog, and USE SCHEMA on its schema and the schemas that schema lies in (on the catalog
    itself for a grant there, since it reaches every schema)."""
    schema = _schema_of(securable)
    if schema is None:
        return [(SecurableType.CATALOG, securable, frozenset({Privilege.USE_CATALOG, Privilege.USE_SCHEMA}))]
    catalog = schema.catalog
    return [(SecurableType.CATALOG, catalog, frozenset({Privilege.USE_CATALOG}))] + [
        (SecurableType.SCHEMA, row, frozenset({Privilege.USE_SCHEMA})) for row in [schema, *schema.ancestors()]]


def _change(caller: Principal, role: Group, securable_type: str, securable, *, add=(), remove=()) -> None:
    if add or remove:
        grants.update_assignments(securable_type=securable_type, securable=securable, caller=caller, access=None,
                                  changes=[{"principal": role.name, "add": sorted(add), "remove": sorted(remove)}])


@transaction.atomic
def add_grant(*, caller: Principal, catalog: str, role: str, body: dict) -> PolarisGrant:
    require_service_admin(caller)
    row = _catalog(caller, catalog)
    group = _catalog_role(row, role, for_update=True)
    grant = _parse_grant(row, body.get("grant"))
    for securable_type, securable, privileges in _way_to(grant.securable):
        _change(caller, group, securable_type, securable, add=privileges)
    _change(caller, group, grant.securable_type, grant.securable, add=grant.uc_privileges)
    return grant


@transaction.atomic
def revoke_grant(*, caller: Principal, catalog: str, role: str, body: dict, cascade: bool = False) -> None:
    """Takes away the UC privileges the grant maps to, then the USE privileges that no grant the
    role still holds needs. `cascade` is refused: a ucweb grant has no dependent grants to cascade to."""
    require_service_admin(caller)
    if cascade:
        raise InvalidParameter("cascade=true is not supported: a ucweb grant has no dependent grants.")
    row = _catalog(caller, catalog)
    group = _catalog_role(row, role, for_update=True)
    grant = _parse_grant(row, body.get("grant"))
    _change(caller, group, grant.securable_type, grant.securable, remove=grant.uc_privileges)
    needed: dict = {}  # what the role still holds, also through the UC API, needs on the way to it
    for held in Grant.objects.filter(principal=group.name).exclude(privilege__in=list(USE)):
        securable = _securable(held.securable_type, held.securable_id)
        for _, on_the_way, privileges in _way_to(securable) if securable is not None else ():
            needed.setdefault(on_the_way.id, set()).update(privileges)
    for held in Grant.objects.filter(principal=group.name, privilege__in=list(USE)):
        if held.privilege not in needed.get(held.securable_id, ()):
            securable = _securable(held.securable_type, held.securable_id)
            if securable is not None:
                _change(caller, group, held.securable_type, securable, remove={held.privilege})


SECURABLE_ROWS = {SecurableType.CATALOG: lambda: Catalog.objects,
                  SecurableType.SCHEMA: lambda: Schema.objects.select_related("catalog"),
                  SecurableType.TABLE: lambda: Table.objects.select_related("schema__catalog")}


def _securable(securable_type: str, securable_id):
    rows = SECURABLE_ROWS.get(securable_type)
    return rows().filter(id=securable_id).first() if rows else None


def list_grants(*, caller: Principal, catalog: str, role: str) -> list[PolarisGrant]:
    require_service_admin(caller)
    row = _catalog(caller, catalog)
    group = _catalog_role(row, role)
    held: dict = {}
    for grant in Grant.objects.filter(principal=group.name):
        held.setdefault((grant.securable_type, grant.securable_id), set()).add(grant.privilege)
    found = []
    for (securable_type, securable_id), privileges in sorted(held.items(), key=str):
        securable = _securable(securable_type, securable_id)
        if securable is not None:
            found += PolarisGrant.of(securable, securable_type, privileges)
    return found
