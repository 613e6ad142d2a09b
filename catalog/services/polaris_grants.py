"""Polaris grants of a catalog role (Apache Polaris's management API) as Unity Catalog grants to
the role's group: a Polaris privilege on a catalog, namespace or table is the set of UC privileges
POLARIS_PRIVILEGES maps it to, with USE CATALOG and USE SCHEMA on the way to it. A grant's UC
privileges are its whole record: listing reads them back (PolarisGrant.of), so a grant made
through the UC API with the same privileges lists the same, and one revoke takes away what its
privilege maps to. The roles themselves are catalog.services.polaris_management's."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from catalog import resolve
from catalog.choices import Privilege, SecurableType
from catalog.models import Catalog, Grant, Group, Principal, Schema, Table
from catalog.services import catalogs, grants
from catalog.services.polaris_management import catalog_role, require_service_admin
from ucweb.errors import InvalidParameter, SchemaDoesNotExist, TableDoesNotExist

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
    row = catalogs.get_catalog(caller=caller, name=catalog)
    group = catalog_role(row, role, for_update=True)
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
    row = catalogs.get_catalog(caller=caller, name=catalog)
    group = catalog_role(row, role, for_update=True)
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
    row = catalogs.get_catalog(caller=caller, name=catalog)
    group = catalog_role(row, role)
    held: dict = {}
    for grant in Grant.objects.filter(principal=group.name):
        held.setdefault((grant.securable_type, grant.securable_id), set()).add(grant.privilege)
    found = []
    for (securable_type, securable_id), privileges in sorted(held.items(), key=str):
        securable = _securable(securable_type, securable_id)
        if securable is not None:
            found += PolarisGrant.of(securable, securable_type, privileges)
    return found
