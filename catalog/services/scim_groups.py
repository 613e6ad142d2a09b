"""SCIM 2.0 groups (RFC 7643/7644) written by a directory: created, replaced, patched (members
added, removed or replaced; renamed) and deleted, each in one transaction and audited. What a
group maps to, who may write and how a request is read are catalog.services.scim's."""

from __future__ import annotations

import uuid

from django.db import transaction
from scim2_models import InvalidFilterException, ScimFilter
from scim2_models.path import Comparison, CompareOperator, ValuePath

from catalog.choices import AuditAction, GroupKind
from catalog.models import Group, GroupMember, Principal
from catalog.services import audit, groups
from catalog.services.principals import validate_principal_name
from catalog.services.scim import (
    MAX_MEMBERS_PER_REQUEST, get_group, invalid_value, patch_operations, require_admin, require_external_id_free,
    scim_error, text_member, uuid_or_none,
)
from ucweb.errors import AlreadyExists, InvalidParameter


def _member_ids(value) -> list[tuple[uuid.UUID, str | None]]:
    """SCIM members ([{"value": id, "type": "User"|"Group"}]) as (id, type or None)."""
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or len(value) > MAX_MEMBERS_PER_REQUEST:
        raise invalid_value(f"members is a list of at most {MAX_MEMBERS_PER_REQUEST} objects.")
    members = []
    for member in value:
        member_id = uuid_or_none(member.get("value")) if isinstance(member, dict) else None
        member_type = member.get("type") if isinstance(member, dict) else None
        if member_id is None or member_type not in (None, "User", "Group"):
            raise invalid_value('Each member is {"value": "<id of a user or group>", "type": "User" or "Group"}.')
        members.append((member_id, member_type))
    return members


def _member_names(members) -> tuple[set[str], set[str]]:
    """(principal names, group names) of SCIM member ids; an unknown id is refused."""
    ids = {member_id for member_id, _ in members}
    users = dict(Principal.objects.filter(id__in=ids).values_list("id", "name"))
    found_groups = dict(Group.objects.filter(id__in=ids, kind=GroupKind.GROUP).values_list("id", "name"))
    principals, group_names = set(), set()
    for member_id, member_type in members:
        if member_type != "Group" and member_id in users:
            principals.add(users[member_id])
        elif member_type != "User" and member_id in found_groups:
            group_names.add(found_groups[member_id])
        else:
            raise invalid_value(f"No {member_type or 'user or group'} has id {member_id}.")
    return principals, group_names


def _current_members(group: Group) -> tuple[set[str], set[str]]:
    principal_names, group_names = groups.member_names(group)
    return set(principal_names), set(group_names)


def _set_members(caller: Principal, group: Group, principal_names: set[str], group_names: set[str]) -> None:
    """Makes the direct members of `group` exactly these, in one membership change."""
    now_principals, now_groups = _current_members(group)
    if (now_principals, now_groups) == (principal_names, group_names):
        return
    groups.update_members(caller=caller, name=group.name,
                          add_principals=sorted(principal_names - now_principals),
                          add_groups=sorted(group_names - now_groups),
                          remove_principals=sorted(now_principals - principal_names),
                          remove_groups=sorted(now_groups - group_names))


def _group_name(body: dict) -> str:
    name = text_member(body, "displayName", required=True)
    try:
        return validate_principal_name(name, what="group")
    except InvalidParameter as exc:
        raise invalid_value(exc.message) from None


def _scim_group_error(exc: Exception):
    """groups' own refusals, with the SCIM type a directory understands."""
    if isinstance(exc, AlreadyExists):
        return scim_error(AlreadyExists, exc.message, "uniqueness")
    if isinstance(exc, InvalidParameter) and not getattr(exc, "scim_type", None):
        return invalid_value(exc.message)
    return exc


@transaction.atomic
def create_group(*, caller: Principal, body: dict) -> Group:
    require_admin(caller)
    name = _group_name(body)
    external_id = text_member(body, "externalId")
    members = _member_names(_member_ids(body.get("members") or []))
    try:
        group = groups.create_group(caller=caller, name=name, external_id=external_id)
        _set_members(caller, group, *members)
    except (AlreadyExists, InvalidParameter) as exc:
        raise _scim_group_error(exc) from None
    return group


def _rename_and_tag(caller: Principal, group: Group, *, name: str | None, external_id, tag: bool) -> Group:
    if name is not None and name != group.name:
        group = groups.rename_group(caller=caller, name=group.name, new_name=name)
    if tag and external_id != group.external_id:
        require_external_id_free(Group, external_id, exclude=group)
        group.external_id = external_id
        group.save(update_fields=["external_id", "updated_at"])
        audit.record(principal=caller.name, action=AuditAction.UPDATE_GROUP, securable_type="group",
                     securable_name=group.name, securable_id=group.id,
                     details={"via": "scim", "external_id": external_id})
    return group


@transaction.atomic
def replace_group(*, caller: Principal, group_id, body: dict) -> Group:
    require_admin(caller)
    group = get_group(group_id)
    members = _member_names(_member_ids(body.get("members") or []))
    try:
        group = _rename_and_tag(caller, group, name=_group_name(body), external_id=text_member(body, "externalId"),
                                tag=True)
        _set_members(caller, group, *members)
    except (AlreadyExists, InvalidParameter) as exc:
        raise _scim_group_error(exc) from None
    return group


def _removed_member(path: str) -> uuid.UUID:
    """The member id of a remove path `members[value eq "<id>"]`."""
    try:
        node = ScimFilter(path).ast
    except (InvalidFilterException, ValueError, RecursionError):
        node = None
    selection = getattr(node, "val_filter", None)
    if not (isinstance(node, ValuePath) and node.attr_path.attr.lower() == "members" and not node.sub_attr
            and isinstance(selection, Comparison) and selection.op == CompareOperator.eq
            and selection.attr_path.attr.lower() == "value" and uuid_or_none(selection.value) is not None):
        raise invalid_value('A member is selected as members[value eq "<id>"].', "invalidPath")
    return uuid_or_none(selection.value)


@transaction.atomic
def patch_group(*, caller: Principal, group_id, body: dict) -> Group:
    """PATCH: add / remove / replace of members (remove one with `members[value eq "<id>"]`),
    replace of displayName and externalId; all operations or none."""
    require_admin(caller)
    group = get_group(group_id)
    principal_names, group_names = _current_members(group)
    name, external_id, tag = None, group.external_id, False
    for op, path, value in patch_operations(body):
        target = path.lower() if path is not None else None
        if target is not None and target.startswith("members["):
            if op != "remove":
                raise invalid_value("A selected member can only be removed.", "invalidPath")
            removed = _removed_member(path)
            direct = GroupMember.objects.filter(group=group)
            principal_names -= set(direct.filter(principal_id=removed).values_list("principal__name", flat=True))
            group_names -= set(direct.filter(member_group_id=removed).values_list("member_group__name", flat=True))
            continue
        if target is None:
            if op == "remove" or not isinstance(value, dict):
                raise invalid_value("An operation without a path adds or replaces an object of attributes.", "noTarget")
            items = [(key.lower(), item) for key, item in value.items()
                     if key.lower() in ("members", "displayname", "externalid")]
        elif target in ("members", "displayname", "externalid"):
            items = [(target, value)]
        else:
            raise invalid_value(f"Attribute {path!r} cannot be changed through SCIM here.", "invalidPath")
        for key, item in items:
            if key == "members":
                if op == "remove" and item is None:
                    principal_names, group_names = set(), set()
                    continue
                users, nested = _member_names(_member_ids(item))
                if op == "add":
                    principal_names, group_names = principal_names | users, group_names | nested
                elif op == "remove":
                    principal_names, group_names = principal_names - users, group_names - nested
                else:
                    principal_names, group_names = users, nested
            elif key == "displayname":
                if op == "remove":
                    raise invalid_value("displayName cannot be removed.", "mutability")
                name = _group_name({"displayName": item})
            else:
                external_id = None if op == "remove" else text_member({"externalId": item}, "externalId", required=True)
                tag = True
    try:
        group = _rename_and_tag(caller, group, name=name, external_id=external_id, tag=tag)
        _set_members(caller, group, principal_names, group_names)
    except (AlreadyExists, InvalidParameter) as exc:
        raise _scim_group_error(exc) from None
    return group


@transaction.atomic
def delete_group(*, caller: Principal, group_id) -> None:
    require_admin(caller)
    groups.delete_group(caller=caller, name=get_group(group_id).name)
