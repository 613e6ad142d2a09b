"""SCIM 2.0 provisioning (RFC 7643/7644): a directory keeps principals and groups in step.

What maps to what:
    User   id = principal id, userName = principal name, displayName, externalId, active
           (an inactive principal's tokens and secret stop working at its next request)
    Group  id = group id, displayName = group name, externalId, members (value = the member's id,
           type User or Group; groups nest, never in a cycle). Only groups of the organization
           (GroupKind.GROUP): Polaris principal roles and catalog roles are not a directory's.

Only a metastore admin may write (a directory authenticates as an admin service principal).
SCIM never changes who is a metastore admin: a new user is never one, attributes such as `roles`,
`entitlements` or extension schemas are not stored, and a metastore admin cannot be deactivated or
deleted through SCIM (that is done with `manage.py`, so a directory cannot lock the catalog out).

Deleting a user deletes the principal: its grants are revoked, its tokens and group memberships go
with it, in one transaction (as Unity Catalog OSS's Scim2UserService does). Things it owns keep
their owner's name until an admin transfers them.

Filters: one comparison `attr eq "value"` on userName / displayName / externalId / id (what
directories send to find a resource before creating it); anything else is refused with
scimType invalidFilter, before any query.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import transaction
from scim2_models import InvalidFilterException, ScimFilter
from scim2_models.path import Comparison, CompareOperator, ValuePath

from catalog.choices import AuditAction, GroupKind, PrincipalKind
from catalog.models import Group, GroupMember, Principal
from catalog.services import audit, groups, principals
from catalog.services.principals import forget_cached_tokens, validate_principal_name
from ucweb.errors import AlreadyExists, GroupDoesNotExist, InvalidParameter, PermissionDenied, PrincipalDoesNotExist

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
MAX_FILTER_LENGTH = 1000
DEFAULT_COUNT = 100
MAX_COUNT = 1000
MAX_MEMBERS_PER_REQUEST = 50_000

# filter attribute (lower case, as SCIM attribute names are case-insensitive) → (model field, lookup)
USER_FILTERS = {"username": ("name", "iexact"), "displayname": ("display_name", "iexact"),
                "externalid": ("external_id", "exact"), "id": ("id", "exact")}
GROUP_FILTERS = {"displayname": ("name", "iexact"), "externalid": ("external_id", "exact"), "id": ("id", "exact")}


def scim_error(error_class, message: str, scim_type: str | None = None):
    """A catalog error that the SCIM envelope renders with `scimType` (RFC 7644 §3.12)."""
    error = error_class(message)
    error.scim_type = scim_type
    return error


def _invalid(message: str, scim_type: str = "invalidValue"):
    return scim_error(InvalidParameter, message, scim_type)


def _require_admin(caller: Principal) -> None:
    if not caller.is_metastore_admin:
        raise PermissionDenied("Only a metastore admin may provision users and groups through SCIM.")


# -- reading -------------------------------------------------------------------------------------
@dataclass
class Page:
    resources: list
    total: int
    start_index: int


def _page_bounds(start_index, count) -> tuple[int, int]:
    """RFC 7644 §3.4.2.4: startIndex is 1-based (less than 1 means 1); count below 0 means 0."""
    def number(value, default, name):
        if value in (None, ""):
            return default
        try:
            return int(value)
        except (TypeError, ValueError):
            raise _invalid(f"{name} must be an integer.") from None
    start = max(1, number(start_index, 1, "startIndex"))
    size = min(MAX_COUNT, max(0, number(count, DEFAULT_COUNT, "count")))
    return start, size


def _filter_lookup(text, attributes: dict) -> dict:
    """The ORM lookup for filter `text`: one `attr eq "value"` on a supported attribute."""
    if not isinstance(text, str) or len(text) > MAX_FILTER_LENGTH:
        raise _invalid(f"A filter is a string of at most {MAX_FILTER_LENGTH} characters.", "invalidFilter")
    try:
        node = ScimFilter(text).ast
    except (InvalidFilterException, ValueError, RecursionError) as exc:
        raise _invalid(f"Invalid filter: {exc}", "invalidFilter") from None
    supported = ", ".join(sorted(attributes))
    if not isinstance(node, Comparison) or node.op != CompareOperator.eq or node.attr_path.sub_attr:
        raise _invalid(f'Only filters of the form `attribute eq "value"` are supported (attributes: {supported}).',
                       "invalidFilter")
    attribute = node.attr_path.attr.lower()
    if attribute not in attributes or node.attr_path.uri not in (None, USER_SCHEMA, GROUP_SCHEMA):
        raise _invalid(f"Filtering on {node.attr_path} is not supported (attributes: {supported}).", "invalidFilter")
    if not isinstance(node.value, str):
        raise _invalid("The filter's value must be a quoted string.", "invalidFilter")
    field, lookup = attributes[attribute]
    if field == "id" and _uuid(node.value) is None:
        return {"pk__in": []}  # no resource has that id
    return {f"{field}__{lookup}": node.value}


def _uuid(value):
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _list(rows, *, filter_text, start_index, count, attributes) -> Page:
    start, size = _page_bounds(start_index, count)
    if filter_text not in (None, ""):
        rows = rows.filter(**_filter_lookup(filter_text, attributes))
    total = rows.count()
    return Page(list(rows.order_by("name")[start - 1:start - 1 + size]), total, start)


def list_users(*, filter_text=None, start_index=None, count=None) -> Page:
    return _list(Principal.objects.prefetch_related("memberships__group"), filter_text=filter_text,
                 start_index=start_index, count=count, attributes=USER_FILTERS)


def list_groups(*, filter_text=None, start_index=None, count=None) -> Page:
    rows = Group.objects.filter(kind=GroupKind.GROUP).prefetch_related("members__principal", "members__member_group")
    return _list(rows, filter_text=filter_text, start_index=start_index, count=count, attributes=GROUP_FILTERS)


def get_user(user_id, *, for_update: bool = False) -> Principal:
    rows = Principal.objects.select_for_update() if for_update else Principal.objects
    user = rows.filter(id=_uuid(user_id)).first() if _uuid(user_id) else None
    if user is None:
        raise scim_error(PrincipalDoesNotExist, f"User {user_id} not found.")
    return user


def get_group(group_id) -> Group:
    group = Group.objects.filter(id=_uuid(group_id), kind=GroupKind.GROUP).first() if _uuid(group_id) else None
    if group is None:
        raise scim_error(GroupDoesNotExist, f"Group {group_id} not found.")
    return group


def members_of(group: Group) -> list[dict]:
    """The direct members of `group` as SCIM members: value (id), display (name), type."""
    rows = group.members.all()  # prefetched by list_groups: no query per group
    members = [{"value": str(row.principal.id), "display": row.principal.name, "type": "User"}
               if row.principal_id else
               {"value": str(row.member_group.id), "display": row.member_group.name, "type": "Group"}
               for row in rows]
    return sorted(members, key=lambda member: (member["type"], member["display"]))


def groups_of_user(user: Principal) -> list[dict]:
    """The groups `user` is directly in (the User resource's read-only `groups`)."""
    rows = user.memberships.all()  # prefetched by list_users: no query per user
    return sorted(({"value": str(row.group.id), "display": row.group.name, "type": "direct"} for row in rows),
                  key=lambda item: item["display"])


# -- users ---------------------------------------------------------------------------------------
def _text(body: dict, key: str, *, required: bool = False):
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > 255 or not value.isprintable():
        raise _invalid(f"{key} must be a non-empty printable string of at most 255 characters.")
    return value


def _active(value) -> bool:
    """`active` as a boolean; some directories (Azure AD) send "True"/"False" as strings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise _invalid("active must be true or false.")


def _user_name(body: dict) -> str:
    """userName, or (as Unity Catalog OSS's clients send) the primary e-mail address."""
    if "userName" in body:
        name = _text(body, "userName", required=True)
    else:
        emails = body.get("emails")
        primary = [email.get("value") for email in emails or () if isinstance(email, dict) and email.get("primary")] \
            if isinstance(emails, list) else []
        if not primary:
            raise _invalid("A user needs a userName (or a primary e-mail address).")
        name = _text({"userName": primary[0]}, "userName", required=True)
    try:
        return validate_principal_name(name, what="user")
    except InvalidParameter as exc:
        raise _invalid(exc.message) from None


def _external_id_free(model, external_id, *, exclude=None) -> None:
    rows = model.objects.filter(external_id=external_id)
    if exclude is not None:
        rows = rows.exclude(pk=exclude.pk)
    if external_id is not None and rows.exists():
        raise scim_error(AlreadyExists, f"externalId {external_id} is already taken.", "uniqueness")


def _audit_principal(caller: Principal, action: AuditAction, user: Principal, details: dict) -> None:
    audit.record(principal=caller.name, action=action, securable_type="principal", securable_name=user.name,
                 securable_id=user.id, details={"via": "scim", **details})


@transaction.atomic
def create_user(*, caller: Principal, body: dict) -> Principal:
    _require_admin(caller)
    name = _user_name(body)
    display_name = _text(body, "displayName") or ""
    external_id = _text(body, "externalId")
    active = _active(body["active"]) if "active" in body else True
    if Principal.objects.filter(name=name).exists():
        raise scim_error(AlreadyExists, f"User {name} already exists.", "uniqueness")
    if Group.objects.filter(name=name).exists():
        raise scim_error(AlreadyExists, f"{name} is the name of a group; a user needs a name of its own.",
                         "uniqueness")
    _external_id_free(Principal, external_id)
    user = Principal.objects.create(name=name, kind=PrincipalKind.USER, is_metastore_admin=False,
                                    display_name=display_name, external_id=external_id, active=active)
    _audit_principal(caller, AuditAction.CREATE_PRINCIPAL, user,
                     {"active": active, "external_id": external_id, "metastore_admin": False})
    return user


def _apply_user_changes(caller: Principal, user: Principal, changes: dict) -> Principal:
    """Writes the changed fields of `user` (display_name, external_id, active), audited."""
    changes = {field: value for field, value in changes.items() if getattr(user, field) != value}
    if not changes:
        return user
    if changes.get("active") is False and user.is_metastore_admin:
        raise _invalid(f"{user.name} is a metastore admin; SCIM does not deactivate metastore admins.",
                       "mutability")
    if "external_id" in changes:
        _external_id_free(Principal, changes["external_id"], exclude=user)
    for field, value in changes.items():
        setattr(user, field, value)
    user.save(update_fields=list(changes))
    if changes.get("active") is False:
        # Its tokens stop working at its next request: forgotten now, and again at commit, since a
        # request in between still reads the principal as active and may cache it so.
        forget_cached_tokens()
        transaction.on_commit(forget_cached_tokens)
    _audit_principal(caller, AuditAction.UPDATE_PRINCIPAL, user, {"changed": sorted(changes)})
    return user


@transaction.atomic
def replace_user(*, caller: Principal, user_id, body: dict) -> Principal:
    """PUT: the user's writable attributes become the body's (absent ones their defaults)."""
    _require_admin(caller)
    user = get_user(user_id, for_update=True)
    if _user_name(body) != user.name:
        raise _invalid("userName cannot be changed (grants name their principal by it).", "mutability")
    return _apply_user_changes(caller, user, {
        "display_name": _text(body, "displayName") or "",
        "external_id": _text(body, "externalId"),
        "active": _active(body["active"]) if "active" in body else True,
    })


USER_PATCHABLE = {"active": "active", "displayname": "display_name", "externalid": "external_id"}


def _user_value(field: str, value):
    if field == "active":
        return _active(value)
    return _text({field: value}, field, required=True)


@transaction.atomic
def patch_user(*, caller: Principal, user_id, body: dict) -> Principal:
    """PATCH: add / replace / remove of active, displayName, externalId (with a path, or without one
    and an object of attributes). Attributes SCIM does not keep here (roles, entitlements, emails,
    extensions) are ignored in an object and refused as a path."""
    _require_admin(caller)
    user = get_user(user_id, for_update=True)
    changes: dict = {}
    for op, path, value in _operations(body):
        if path is None:
            if op == "remove" or not isinstance(value, dict):
                raise _invalid("An operation without a path adds or replaces an object of attributes.", "noTarget")
            items = [(key.lower(), item) for key, item in value.items() if key.lower() in USER_PATCHABLE]
        else:
            if path.lower() not in USER_PATCHABLE:
                raise _invalid(f"Attribute {path!r} cannot be changed through SCIM here.", "invalidPath")
            items = [(path.lower(), value)]
        for key, item in items:
            field = USER_PATCHABLE[key]
            if op == "remove":
                if field == "active":
                    raise _invalid("active cannot be removed; replace it with false.", "mutability")
                changes[field] = "" if field == "display_name" else None
            else:
                changes[field] = _user_value(field, item)
    return _apply_user_changes(caller, user, changes)


@transaction.atomic
def delete_user(*, caller: Principal, user_id) -> None:
    _require_admin(caller)
    user = get_user(user_id, for_update=True)
    if user.is_metastore_admin:
        raise _invalid(f"{user.name} is a metastore admin; SCIM does not delete metastore admins.", "mutability")
    principals.delete_principal(caller=caller, principal=user, details={"via": "scim"})


# -- groups --------------------------------------------------------------------------------------
def _operations(body: dict):
    """The PatchOp's operations as (op in lower case, path or None, value)."""
    operations = body.get("Operations", body.get("operations"))
    if not isinstance(operations, list) or not operations:
        raise _invalid("A PatchOp carries a non-empty list of Operations.")
    for operation in operations:
        if not isinstance(operation, dict) or not isinstance(operation.get("op"), str) \
                or operation["op"].lower() not in ("add", "remove", "replace"):
            raise _invalid("Each operation has an op: add, remove or replace.")
        path = operation.get("path")
        if path is not None and (not isinstance(path, str) or not path or len(path) > MAX_FILTER_LENGTH):
            raise _invalid("An operation's path is a non-empty string.", "invalidPath")
        yield operation["op"].lower(), path, operation.get("value")


def _member_ids(value) -> list[tuple[uuid.UUID, str | None]]:
    """SCIM members ([{"value": id, "type": "User"|"Group"}]) as (id, type or None)."""
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list) or len(value) > MAX_MEMBERS_PER_REQUEST:
        raise _invalid(f"members is a list of at most {MAX_MEMBERS_PER_REQUEST} objects.")
    members = []
    for member in value:
        member_id = _uuid(member.get("value")) if isinstance(member, dict) else None
        member_type = member.get("type") if isinstance(member, dict) else None
        if member_id is None or member_type not in (None, "User", "Group"):
            raise _invalid('Each member is {"value": "<id of a user or group>", "type": "User" or "Group"}.')
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
            raise _invalid(f"No {member_type or 'user or group'} has id {member_id}.")
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
    name = _text(body, "displayName", required=True)
    try:
        return validate_principal_name(name, what="group")
    except InvalidParameter as exc:
        raise _invalid(exc.message) from None


def _scim_group_error(exc: Exception):
    """groups' own refusals, with the SCIM type a directory understands."""
    if isinstance(exc, AlreadyExists):
        return scim_error(AlreadyExists, exc.message, "uniqueness")
    if isinstance(exc, InvalidParameter) and not getattr(exc, "scim_type", None):
        return _invalid(exc.message)
    return exc


@transaction.atomic
def create_group(*, caller: Principal, body: dict) -> Group:
    _require_admin(caller)
    name = _group_name(body)
    external_id = _text(body, "externalId")
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
        _external_id_free(Group, external_id, exclude=group)
        group.external_id = external_id
        group.save(update_fields=["external_id", "updated_at"])
        audit.record(principal=caller.name, action=AuditAction.UPDATE_GROUP, securable_type="group",
                     securable_name=group.name, securable_id=group.id,
                     details={"via": "scim", "external_id": external_id})
    return group


@transaction.atomic
def replace_group(*, caller: Principal, group_id, body: dict) -> Group:
    _require_admin(caller)
    group = get_group(group_id)
    members = _member_names(_member_ids(body.get("members") or []))
    try:
        group = _rename_and_tag(caller, group, name=_group_name(body), external_id=_text(body, "externalId"),
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
            and selection.attr_path.attr.lower() == "value" and _uuid(selection.value) is not None):
        raise _invalid('A member is selected as members[value eq "<id>"].', "invalidPath")
    return _uuid(selection.value)


@transaction.atomic
def patch_group(*, caller: Principal, group_id, body: dict) -> Group:
    """PATCH: add / remove / replace of members (remove one with `members[value eq "<id>"]`),
    replace of displayName and externalId; all operations or none."""
    _require_admin(caller)
    group = get_group(group_id)
    principal_names, group_names = _current_members(group)
    name, external_id, tag = None, group.external_id, False
    for op, path, value in _operations(body):
        target = path.lower() if path is not None else None
        if target is not None and target.startswith("members["):
            if op != "remove":
                raise _invalid("A selected member can only be removed.", "invalidPath")
            removed = _removed_member(path)
            direct = GroupMember.objects.filter(group=group)
            principal_names -= set(direct.filter(principal_id=removed).values_list("principal__name", flat=True))
            group_names -= set(direct.filter(member_group_id=removed).values_list("member_group__name", flat=True))
            continue
        if target is None:
            if op == "remove" or not isinstance(value, dict):
                raise _invalid("An operation without a path adds or replaces an object of attributes.", "noTarget")
            items = [(key.lower(), item) for key, item in value.items()
                     if key.lower() in ("members", "displayname", "externalid")]
        elif target in ("members", "displayname", "externalid"):
            items = [(target, value)]
        else:
            raise _invalid(f"Attribute {path!r} cannot be changed through SCIM here.", "invalidPath")
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
                    raise _invalid("displayName cannot be removed.", "mutability")
                name = _group_name({"displayName": item})
            else:
                external_id = None if op == "remove" else _text({"externalId": item}, "externalId", required=True)
                tag = True
    try:
        group = _rename_and_tag(caller, group, name=name, external_id=external_id, tag=tag)
        _set_members(caller, group, principal_names, group_names)
    except (AlreadyExists, InvalidParameter) as exc:
        raise _scim_group_error(exc) from None
    return group


@transaction.atomic
def delete_group(*, caller: Principal, group_id) -> None:
    _require_admin(caller)
    groups.delete_group(caller=caller, name=get_group(group_id).name)
