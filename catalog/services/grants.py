"""The grant checker: one place that decides whether a principal may do something.

The rules follow Unity Catalog:
- a metastore admin may do everything;
- the owner of a securable, or of any container above it, holds every privilege on it;
- a privilege granted on a container is inherited by everything inside it;
- reaching anything inside a catalog needs USE CATALOG on it, and inside a schema USE SCHEMA too.

`Access` loads a principal's grants on one chain of securables (table → schema → catalog) with a
single query and answers every question about that chain from memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from catalog.choices import PRIVILEGES_BY_SECURABLE, Privilege, SecurableType
from catalog.models import Grant, Metastore, Principal
from catalog.services import audit
from ucweb.errors import InvalidParameter, PermissionDenied, PrincipalDoesNotExist


def chain_of(securable) -> list:
    """The securable followed by its containers, innermost first (a nested schema's parents
    included: what is granted on a schema holds in the schemas inside it)."""
    chain = [securable]
    schema = getattr(securable, "schema", None)
    if schema is not None:
        chain.append(schema)
        securable = schema
    if hasattr(securable, "ancestors"):
        chain.extend(securable.ancestors())
    catalog = getattr(securable, "catalog", None)
    if catalog is not None:
        chain.append(catalog)
    return chain


@dataclass
class Access:
    principal: Principal
    chain: list
    _held: dict = field(default_factory=dict)

    @classmethod
    def load(cls, principal: Principal, securable) -> Access:
        chain = chain_of(securable)
        held: dict = {}
        if not principal.is_metastore_admin:
            rows = Grant.objects.filter(
                principal=principal.name, securable_id__in=[s.id for s in chain]
            ).values_list("securable_id", "privilege")
            for securable_id, privilege in rows:
                held.setdefault(securable_id, set()).add(privilege)
        return cls(principal=principal, chain=chain, _held=held)

    @property
    def is_admin(self) -> bool:
        return self.principal.is_metastore_admin

    def owns(self, level: int = 0) -> bool:
        """Owner of the securable at `level` of the chain or of anything above it."""
        return self.is_admin or any(getattr(s, "owner", None) == self.principal.name for s in self.chain[level:])

    def has(self, privilege: str, level: int = 0) -> bool:
        return self.why(privilege, level) is not None

    def why(self, privilege: str, level: int = 0) -> str | None:
        """Why the principal holds `privilege` on the securable at `level` of the chain, or None
        when it does not. The one rule, worded: metastore admin, owner (of the securable or of a
        container above it), a grant on the securable, or a grant on a container (inherited)."""
        if self.is_admin:
            return "metastore admin"
        for securable in self.chain[level:]:
            if getattr(securable, "owner", None) == self.principal.name:
                return f"owner of {kind_of(securable)} {describe(securable)}"
        for index, securable in enumerate(self.chain[level:], start=level):
            if privilege in self._held.get(securable.id, ()):
                where = f"{kind_of(securable)} {describe(securable)}"
                return f"granted on {where}" if index == level else f"inherited from a grant on {where}"
        return None

    def has_any_privilege(self, level: int = 0) -> bool:
        return self.owns(level) or any(self._held.get(s.id) for s in self.chain[level:])

    # -- the questions the APIs ask ------------------------------------------------------------
    def can_use_catalog(self) -> bool:
        return self.has(Privilege.USE_CATALOG, len(self.chain) - 1)

    def can_use_schema(self) -> bool:
        return self.can_use_catalog() and self.has(Privilege.USE_SCHEMA, self.schema_level())

    def schema_level(self) -> int:
        """The index of the innermost schema in the chain."""
        return next(index for index, link in enumerate(self.chain) if kind_of(link) == "schema")

    def require(self, allowed: bool, message: str) -> None:
        if not allowed:
            raise PermissionDenied(message)


def describe(securable) -> str:
    return getattr(securable, "full_name", None) or getattr(securable, "name", str(securable))


def kind_of(securable) -> str:
    """`table`, `schema`, `registered model`...: the securable type, in words."""
    return securable._meta.verbose_name


def require_catalog_use(access: Access) -> None:
    access.require(access.can_use_catalog(), f"Missing USE CATALOG on catalog {describe(access.chain[-1])}.")


def require_schema_use(access: Access) -> None:
    require_catalog_use(access)
    access.require(access.can_use_schema(),
                   f"Missing USE SCHEMA on schema {describe(access.chain[access.schema_level()])}.")


# -- policy properties -----------------------------------------------------------------------------
# Table and schema properties under this prefix are the securable's maintenance policy (which
# maintenance operations clients may run themselves): they belong to its owner, not its writers.
POLICY_PROPERTY_PREFIX = "ucweb.maintenance."


def policy_properties(properties) -> dict:
    return {key: value for key, value in (properties or {}).items()
            if key.lower().startswith(POLICY_PROPERTY_PREFIX)}


def require_policy_unchanged_or_owner(access: Access, before, after) -> None:
    """The one check of every API that changes properties (Delta commit metadata, Iceberg
    set-properties / remove-properties, views): adding, changing or removing a
    `ucweb.maintenance.*` property needs the owner of the securable (or of a container above
    it) or a metastore admin. Properties that stay as they are need nothing more."""
    if policy_properties(before) == policy_properties(after):
        return
    access.require(
        access.owns(),
        f"Only the owner of {describe(access.chain[0])} or a metastore admin may change its "
        f"{POLICY_PROPERTY_PREFIX}* properties (its maintenance policy).",
    )


# -- metastore-level privileges ------------------------------------------------------------------
def has_metastore_privilege(principal: Principal, privilege: str) -> bool:
    if principal.is_metastore_admin:
        return True
    metastore = Metastore.objects.only("id").first()
    return metastore is not None and Grant.objects.filter(
        principal=principal.name, securable_id=metastore.id, privilege=privilege
    ).exists()


# -- reading and changing grants ------------------------------------------------------------------
def _assignments(queryset) -> list[dict]:
    by_principal: dict[str, list[str]] = {}
    for principal, privilege in queryset.values_list("principal", "privilege"):
        by_principal.setdefault(principal, []).append(privilege)
    return [
        {"principal": principal, "privileges": sorted(privileges)}
        for principal, privileges in sorted(by_principal.items())
    ]


def list_assignments(*, securable, principal_filter: str | None, caller: Principal, access: Access | None):
    """Owners (of the securable or above) and admins see every assignment; anyone else sees only
    their own."""
    queryset = Grant.objects.filter(securable_id=securable.id)
    can_manage = caller.is_metastore_admin or (access is not None and access.owns())
    if not can_manage:
        if principal_filter and principal_filter != caller.name:
            raise PermissionDenied("Only an owner or a metastore admin may read other principals' privileges.")
        principal_filter = caller.name
    if principal_filter:
        queryset = queryset.filter(principal=principal_filter)
    return _assignments(queryset)


def _validate_changes(securable_type: str, changes) -> list[dict]:
    if not isinstance(changes, list):
        raise InvalidParameter("changes must be an array.")
    allowed = PRIVILEGES_BY_SECURABLE[securable_type]
    validated = []
    for change in changes:
        if not isinstance(change, dict):
            raise InvalidParameter("Each change must be an object with principal, add and remove.")
        principal = change.get("principal")
        if not isinstance(principal, str) or not principal:
            raise InvalidParameter("Each change needs a principal.")
        lists = {}
        for key in ("add", "remove"):
            value = change.get(key) or []
            if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
                raise InvalidParameter(f"{key} must be an array of privileges.")
            for privilege in value:
                normalized = privilege.replace("_", " ").upper()
                if normalized not in Privilege.values:
                    raise InvalidParameter(f"Unknown privilege {privilege!r}.")
                if normalized not in allowed:
                    raise InvalidParameter(f"Privilege {normalized} cannot be granted on a {securable_type}.")
            lists[key] = [p.replace("_", " ").upper() for p in value]
        validated.append({"principal": principal, **lists})
    return validated


@transaction.atomic
def update_assignments(*, securable_type: str, securable, changes, caller: Principal, access: Access | None):
    validated = _validate_changes(securable_type, changes)
    can_manage = caller.is_metastore_admin or (access is not None and access.owns())
    if not can_manage:
        raise PermissionDenied(f"Only an owner or a metastore admin may change privileges on {describe(securable)}.")
    names = {c["principal"] for c in validated}
    existing = set(Principal.objects.filter(name__in=names).values_list("name", flat=True))
    missing = sorted(names - existing)
    if missing:
        raise PrincipalDoesNotExist(f"Principal {missing[0]} does not exist.")
    full_name = describe(securable)
    for change in validated:
        for privilege in change["add"]:
            Grant.objects.get_or_create(
                securable_id=securable.id,
                principal=change["principal"],
                privilege=privilege,
                defaults={
                    "securable_type": securable_type,
                    "securable_name": full_name,
                    "granted_by": caller.name,
                },
            )
        if change["remove"]:
            Grant.objects.filter(
                securable_id=securable.id, principal=change["principal"], privilege__in=change["remove"]
            ).delete()
    audit.record(
        principal=caller.name,
        action="updatePermissions",
        securable_type=securable_type,
        securable_name=full_name,
        securable_id=securable.id,
        details={"changes": validated},
    )
    return _assignments(Grant.objects.filter(securable_id=securable.id))


def forget_securables(ids) -> None:
    """Grants die with their securable."""
    Grant.objects.filter(securable_id__in=list(ids)).delete()


__all__ = [
    "Access",
    "SecurableType",
    "has_metastore_privilege",
    "list_assignments",
    "update_assignments",
    "forget_securables",
]
