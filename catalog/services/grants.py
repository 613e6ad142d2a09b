"""Reading and changing grants. Whether a principal may do something is decided by
`catalog.authz`."""

from __future__ import annotations

from django.db import transaction

from catalog.authz import Access, describe
from catalog.choices import PRIVILEGES_BY_SECURABLE, Privilege
from catalog.models import Catalog, Function, Grant, Group, Policy, Principal, RegisteredModel, Schema, Table, Volume
from catalog.services import audit
from ucweb.errors import InvalidParameter, PermissionDenied, PrincipalDoesNotExist


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


def may_change(caller: Principal, access: Access | None) -> bool:
    """Whether the caller may change the privileges on the securable of `access` (None: the
    metastore): its owner or a metastore admin, as in Unity Catalog."""
    return caller.is_metastore_admin or (access is not None and access.owns())


@transaction.atomic
def update_assignments(*, securable_type: str, securable, changes, caller: Principal, access: Access | None):
    validated = _validate_changes(securable_type, changes)
    if not may_change(caller, access):
        raise PermissionDenied(
            f"Only an owner or a metastore admin may change privileges on {describe(securable)}.").about(securable)
    names = {c["principal"] for c in validated}
    existing = set(Principal.objects.filter(name__in=names).values_list("name", flat=True))
    roles = {group.name: group for group in Group.objects.filter(name__in=names - existing)}
    missing = sorted(names - existing - set(roles))
    if missing:
        raise PrincipalDoesNotExist(f"Principal {missing[0]} does not exist.")
    for role in roles.values():
        if role.catalog_id is not None and _catalog_id_of(securable) != role.catalog_id:
            raise InvalidParameter(f"Catalog role {role.name} holds privileges only on securables of its catalog.")
    full_name = describe(securable)
    # Changes of one securable are written one after the other, so their change events (written
    # with the audit event) come in the order the changes took effect.
    list(type(securable).objects.select_for_update().filter(pk=securable.pk).values_list("pk"))
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


def refresh_names(securable) -> None:
    """Grants record the full name of their securable (for display, ordering and search); a
    rename rewrites it on the grants of the securable and of everything inside it, in the
    rename's transaction, so that no grant shows a name that no longer exists."""
    rows = [securable, *_inside(securable)]
    names = {row.id: describe(row) for row in rows}
    stale = [grant for grant in Grant.objects.filter(securable_id__in=list(names)).only("id", "securable_id",
                                                                                       "securable_name")
             if grant.securable_name != names[grant.securable_id]]
    for grant in stale:
        grant.securable_name = names[grant.securable_id]
    Grant.objects.bulk_update(stale, ["securable_name"])


def _inside(securable) -> list:
    """The granted securables inside a catalog or a schema (each with what its full name needs)."""
    has_grants = Grant.objects.values("securable_id")
    if isinstance(securable, Catalog):
        found = list(Schema.objects.filter(catalog=securable, id__in=has_grants).select_related("catalog"))
        where = {"schema__catalog": securable}
    elif isinstance(securable, Schema):
        schemas, frontier = [securable], [securable]
        while frontier:  # schemas nest: a rename changes the names of all that lies below
            frontier = list(Schema.objects.filter(parent__in=frontier).select_related("catalog"))
            schemas += frontier
        found, where = schemas[1:], {"schema__in": schemas}
    else:
        return []
    for model in (Table, Volume, Function, RegisteredModel, Policy):
        found += model.objects.filter(id__in=has_grants, **where).select_related("schema__catalog")
    return found


def forget_securables(ids) -> None:
    """Grants die with their securable."""
    Grant.objects.filter(securable_id__in=list(ids)).delete()


def _catalog_id_of(securable):
    """The id of the catalog `securable` is (in); None for what lies outside every catalog."""
    if isinstance(securable, Catalog):
        return securable.id
    if isinstance(securable, Schema):
        return securable.catalog_id
    schema = getattr(securable, "schema", None)
    return schema.catalog_id if schema is not None else None
