"""Groups: named sets of principals and other groups. A privilege granted to a group is held by
every principal inside it, however deep (catalog.authz.grantees reads GroupClosure).

Who may do what:
    create a group          a metastore admin
    change its members,     its owner or a metastore admin (a member added by anyone else is
    rename or drop it       refused, and nothing changes)

A group may not contain itself, directly or through another group (a cycle is refused). Group
and principal names share one namespace, since a grant names its grantee by name. Dropping a
group revokes the grants made to it, in the same transaction, and the audit event lists them.
Every change rewrites the closure of the principals it touches in its own transaction: a
principal removed from a group loses what the group held at the next request.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from catalog.choices import AuditAction, GroupKind
from catalog.models import Catalog, Grant, Group, GroupClosure, GroupMember, Principal
from catalog.services import audit
from catalog.services.principals import validate_principal_name
from ucweb.errors import AlreadyExists, GroupDoesNotExist, InvalidParameter, PermissionDenied, PrincipalDoesNotExist

MAX_DEPTH = 100  # levels of groups inside groups; deeper is refused (a directory's are far shallower)


def group_not_found(name) -> GroupDoesNotExist:
    return GroupDoesNotExist(f"Group not found: {name}")


# -- reading -------------------------------------------------------------------------------------
def get_group(name: str, *, for_update: bool = False) -> Group:
    rows = Group.objects.select_for_update() if for_update else Group.objects
    group = rows.filter(name=name).first() if isinstance(name, str) else None
    if group is None:
        raise group_not_found(name)
    return group


def member_names(group: Group) -> tuple[list[str], list[str]]:
    """The direct members of `group`: (principal names, group names), sorted."""
    rows = GroupMember.objects.filter(group=group).select_related("principal", "member_group")
    principals = sorted(row.principal.name for row in rows if row.principal_id)
    groups = sorted(row.member_group.name for row in rows if row.member_group_id)
    return principals, groups


def groups_of(principal: Principal) -> list[str]:
    """Every group `principal` is in, directly or through nesting."""
    return sorted(GroupClosure.objects.filter(principal=principal.name).values_list("group_name", flat=True))


# -- changing ------------------------------------------------------------------------------------
def may_change(caller: Principal, group: Group) -> bool:
    """Whether the caller may change the group (its members, its name, drop it)."""
    return caller.is_metastore_admin or group.owner == caller.name


def _require_owner(caller: Principal, group: Group) -> None:
    if not may_change(caller, group):
        raise PermissionDenied(f"Only the owner of group {group.name} or a metastore admin may change it.")


def _validate_group_name(name) -> str:
    validate_principal_name(name, what="group")
    if Principal.objects.filter(name=name).exists():
        raise AlreadyExists(f"{name} is the name of a principal; a group needs a name of its own.")
    return name


@transaction.atomic
def create_group(*, caller: Principal, name, comment: str = "", kind: str = GroupKind.GROUP,
                 catalog: Catalog | None = None, external_id: str | None = None) -> Group:
    if not caller.is_metastore_admin:
        raise PermissionDenied("Only a metastore admin may create groups.")
    _validate_group_name(name)
    if kind not in GroupKind.values:
        raise InvalidParameter(f"kind must be one of {', '.join(GroupKind.values)}.")
    if (kind == GroupKind.CATALOG_ROLE) != (catalog is not None):
        raise InvalidParameter("A catalog role, and only a catalog role, belongs to a catalog.")
    if Group.objects.filter(name=name).exists():
        raise AlreadyExists(f"Group {name} already exists.")
    if external_id is not None and Group.objects.filter(external_id=external_id).exists():
        raise AlreadyExists(f"A group with external id {external_id} already exists.")
    group = Group.objects.create(name=name, kind=kind, catalog=catalog, owner=caller.name, created_by=caller.name,
                                 comment=comment or "", external_id=external_id)
    audit.record(principal=caller.name, action=AuditAction.CREATE_GROUP, securable_type="group",
                 securable_name=name, securable_id=group.id, details={"kind": kind})
    return group


@transaction.atomic
def update_members(*, caller: Principal, name: str, add_principals: Iterable[str] = (),
                   add_groups: Iterable[str] = (), remove_principals: Iterable[str] = (),
                   remove_groups: Iterable[str] = ()) -> Group:
    """Adds and removes direct members of group `name` in one change (all or nothing)."""
    group = get_group(name, for_update=True)
    _require_owner(caller, group)
    add_principals, add_groups = _names(add_principals), _names(add_groups)
    remove_principals, remove_groups = _names(remove_principals), _names(remove_groups)
    principals = {p.name: p for p in Principal.objects.filter(name__in=add_principals + remove_principals)}
    for member in add_principals:
        if member not in principals:
            raise PrincipalDoesNotExist(f"Principal {member} does not exist.")
    groups = {g.name: g for g in Group.objects.filter(name__in=add_groups + remove_groups)}
    for member in add_groups:
        if member not in groups:
            raise group_not_found(member)
        _refuse_cycle(group, groups[member])
    touched = set(add_principals) | set(remove_principals)
    for member in add_groups + remove_groups:
        if member in groups:
            touched |= _principals_under(groups[member])
    GroupMember.objects.bulk_create(
        [GroupMember(group=group, principal=principals[member], added_by=caller.name) for member in add_principals]
        + [GroupMember(group=group, member_group=groups[member], added_by=caller.name) for member in add_groups],
        ignore_conflicts=True)
    GroupMember.objects.filter(group=group, principal__name__in=remove_principals).delete()
    GroupMember.objects.filter(group=group, member_group__name__in=remove_groups).delete()
    _refresh_closure(touched)
    changes = {key: value for key, value in (
        ("add_principals", add_principals), ("add_groups", add_groups),
        ("remove_principals", remove_principals), ("remove_groups", remove_groups)) if value}
    audit.record(principal=caller.name, action=AuditAction.UPDATE_GROUP, securable_type="group",
                 securable_name=group.name, securable_id=group.id, details=changes)
    group.save(update_fields=["updated_at"])
    return group


@transaction.atomic
def rename_group(*, caller: Principal, name: str, new_name) -> Group:
    """Renames group `name`: its grants and the closure rows that name it follow in the same
    transaction, so its members keep what it holds."""
    group = get_group(name, for_update=True)
    _require_owner(caller, group)
    if new_name == name:
        return group
    _validate_group_name(new_name)
    if Group.objects.filter(name=new_name).exists():
        raise AlreadyExists(f"Group {new_name} already exists.")
    group.name = new_name
    group.save(update_fields=["name", "updated_at"])
    Grant.objects.filter(principal=name).update(principal=new_name)
    GroupClosure.objects.filter(group_name=name).update(group_name=new_name)
    audit.record(principal=caller.name, action=AuditAction.UPDATE_GROUP, securable_type="group",
                 securable_name=new_name, securable_id=group.id, details={"renamed_from": name})
    return group


@transaction.atomic
def delete_group(*, caller: Principal, name: str) -> None:
    group = get_group(name, for_update=True)
    _require_owner(caller, group)
    touched = _principals_under(group)
    revoked = list(Grant.objects.filter(principal=group.name).values_list("securable_name", "privilege"))
    Grant.objects.filter(principal=group.name).delete()
    group_id = group.id
    group.delete()
    _refresh_closure(touched)
    audit.record(principal=caller.name, action=AuditAction.DELETE_GROUP, securable_type="group",
                 securable_name=name, securable_id=group_id,
                 details={"revoked": [f"{privilege} on {securable}" for securable, privilege in revoked]})


@transaction.atomic
def sync_directory_memberships(*, principal: Principal, source: str, names: Iterable[str]) -> dict | None:
    """Makes `principal` a direct member of exactly the groups `names` among the memberships that
    `source` (an identity provider) made, creating missing groups owned by `source`; memberships
    made otherwise stay. Names that are not valid group names, or are principals' names, are
    skipped. The change is audited as `source`; None when nothing changed."""
    names = [name for name in names if isinstance(name, str)]
    # One sync of a principal at a time: a client's first requests with a new token come at once.
    Principal.objects.select_for_update().filter(pk=principal.pk).first()
    wanted = set()
    skipped = []
    taken = set(Principal.objects.filter(name__in=list(names)).values_list("name", flat=True))
    for name in names:
        try:
            validate_principal_name(name, what="group")
        except InvalidParameter:
            skipped.append(name)
            continue
        (skipped.append if name in taken else wanted.add)(name)
    current = set(GroupMember.objects.filter(principal=principal, added_by=source).values_list(
        "group__name", flat=True))
    if wanted == current:
        return None
    existing = set(Group.objects.filter(name__in=wanted).values_list("name", flat=True))
    created = sorted(wanted - existing)
    Group.objects.bulk_create([Group(name=name, owner=source, created_by=source) for name in created],
                              ignore_conflicts=True)
    added, removed = sorted(wanted - current), sorted(current - wanted)
    GroupMember.objects.bulk_create(
        [GroupMember(group=group, principal=principal, added_by=source)
         for group in Group.objects.filter(name__in=added)], ignore_conflicts=True)
    GroupMember.objects.filter(principal=principal, added_by=source, group__name__in=removed).delete()
    _refresh_closure({principal.name})
    details = {"added": added, "removed": removed, "created_groups": created, "skipped": sorted(skipped)}
    audit.record(principal=source, action=AuditAction.SYNC_IDP_GROUPS, securable_type="principal",
                 securable_name=principal.name, securable_id=principal.id, details=details)
    return details


# -- the closure ----------------------------------------------------------------------------------
def _names(values) -> list[str]:
    if isinstance(values, str) or not all(isinstance(value, str) and value for value in values):
        raise InvalidParameter("Members are named by non-empty strings.")
    return list(dict.fromkeys(values))


def _edges() -> tuple[dict, dict]:
    """The nesting of groups: (group id → the groups it is directly in, group id → its direct
    member groups)."""
    parents: dict = {}
    children: dict = {}
    for group_id, member_id in GroupMember.objects.filter(member_group__isnull=False).values_list(
            "group_id", "member_group_id"):
        parents.setdefault(member_id, set()).add(group_id)
        children.setdefault(group_id, set()).add(member_id)
    return parents, children


def _reach(start, edges: dict) -> tuple[set, int]:
    """What `start` reaches through `edges` (itself included), and in how many steps at most."""
    seen, frontier, steps = {start}, {start}, 0
    while frontier:
        frontier = {node for current in frontier for node in edges.get(current, ())} - seen
        steps += bool(frontier)
        seen |= frontier
    return seen, steps


def _refuse_cycle(group: Group, member: Group) -> None:
    """Adding `member` to `group` must not put a group inside itself, nor nest deeper than MAX_DEPTH."""
    parents, children = _edges()
    above, levels_above = _reach(group.id, parents)
    if member.id in above:
        raise InvalidParameter(f"Adding group {member.name} to {group.name} would make a cycle.")
    _, levels_below = _reach(member.id, children)
    if levels_above + levels_below + 2 > MAX_DEPTH:
        raise InvalidParameter(f"Groups may nest {MAX_DEPTH} levels deep at most.")


def _principals_under(group: Group) -> set[str]:
    """The names of the principals inside `group`, however deep."""
    inside, _ = _reach(group.id, _edges()[1])
    return set(GroupMember.objects.filter(group_id__in=inside, principal__isnull=False).values_list(
        "principal__name", flat=True))


def _refresh_closure(principal_names: set[str]) -> None:
    """Rewrites the closure rows of these principals from the membership as it now stands."""
    if not principal_names:
        return
    parents, _ = _edges()
    names = {group_id: name for group_id, name in Group.objects.values_list("id", "name")}
    direct: dict = {}
    for principal, group_id in GroupMember.objects.filter(principal__name__in=principal_names).values_list(
            "principal__name", "group_id"):
        direct.setdefault(principal, set()).add(group_id)
    above: dict = {}  # group id → the groups it is in, itself included: once per group, not per principal
    rows = []
    for principal in principal_names:
        groups = set()
        for group_id in direct.get(principal, ()):
            if group_id not in above:
                above[group_id] = _reach(group_id, parents)[0]
            groups |= above[group_id]
        rows += [GroupClosure(principal=principal, group_name=names[group_id]) for group_id in groups]
    GroupClosure.objects.filter(principal__in=principal_names).delete()
    GroupClosure.objects.bulk_create(rows, batch_size=1000)
