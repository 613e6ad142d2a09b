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

This module reads and writes users, and reads groups and requests; groups are written by
catalog.services.scim_groups.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import transaction
from scim2_models import InvalidFilterException, ScimFilter
from scim2_models.path import Comparison, CompareOperator

from catalog.choices import AuditAction, GroupKind, PrincipalKind
from catalog.models import Group, Principal
from catalog.services import audit, principals
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


def invalid_value(message: str, scim_type: str = "invalidValue"):
    return scim_error(InvalidParameter, message, scim_type)


def require_admin(caller: Principal) -> None:
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
            raise invalid_value(f"{name} must be an integer.") from None
    start = max(1, number(start_index, 1, "startIndex"))
    size = min(MAX_COUNT, max(0, number(count, DEFAULT_COUNT, "count")))
    return start, size


def _filter_lookup(text, attributes: dict) -> dict:
    """The ORM lookup for filter `text`: one `attr eq "value"` on a supported attribute."""
    if not isinstance(text, str) or len(text) > MAX_FILTER_LENGTH:
        raise invalid_value(f"A filter is a string of at most {MAX_FILTER_LENGTH} characters.", "invalidFilter")
    try:
        node = ScimFilter(text).ast
    except (InvalidFilterException, ValueError, RecursionError) as exc:
        raise invalid_value(f"Invalid filter: {exc}", "invalidFilter") from None
    supported = ", ".join(sorted(attributes))
    if not isinstance(node, Comparison) or node.op != CompareOperator.eq or node.attr_path.sub_attr:
        raise invalid_value(f'Only filters of the form `attribute eq "value"` are supported (attributes: {supported}).',
                       "invalidFilter")
    attribute = node.attr_path.attr.lower()
    if attribute not in attributes or node.attr_path.uri not in (None, USER_SCHEMA, GROUP_SCHEMA):
        raise invalid_value(f"Filtering on {node.attr_path} is not supported (attributes: {supported}).",
                            "invalidFilter")
    if not isinstance(node.value, str):
        raise invalid_value("The filter's value must be a quoted string.", "invalidFilter")
    field, lookup = attributes[attribute]
    if field == "id" and uuid_or_none(node.value) is None:
        return {"pk__in": []}  # no resource has that id
    return {f"{field}__{lookup}": node.value}


def uuid_or_none(value):
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
    user = rows.filter(id=uuid_or_none(user_id)).first() if uuid_or_none(user_id) else None
    if user is None:
        raise scim_error(PrincipalDoesNotExist, f"User {user_id} not found.")
    return user


def get_group(group_id) -> Group:
    group_uuid = uuid_or_none(group_id)
    group = Group.objects.filter(id=group_uuid, kind=GroupKind.GROUP).first() if group_uuid else None
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
def text_member(body: dict, key: str, *, required: bool = False):
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > 255 or not value.isprintable():
        raise invalid_value(f"{key} must be a non-empty printable string of at most 255 characters.")
    return value


def _active(value) -> bool:
    """`active` as a boolean; some directories (Azure AD) send "True"/"False" as strings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise invalid_value("active must be true or false.")


def _user_name(body: dict) -> str:
    """userName, or (as Unity Catalog OSS's clients send) the primary e-mail address."""
    if "userName" in body:
        name = text_member(body, "userName", required=True)
    else:
        emails = body.get("emails")
        primary = [email.get("value") for email in emails or () if isinstance(email, dict) and email.get("primary")] \
            if isinstance(emails, list) else []
        if not primary:
            raise invalid_value("A user needs a userName (or a primary e-mail address).")
        name = text_member({"userName": primary[0]}, "userName", required=True)
    try:
        return validate_principal_name(name, what="user")
    except InvalidParameter as exc:
        raise invalid_value(exc.message) from None


def require_external_id_free(model, external_id, *, exclude=None) -> None:
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
    require_admin(caller)
    name = _user_name(body)
    display_name = text_member(body, "displayName") or ""
    external_id = text_member(body, "externalId")
    active = _active(body["active"]) if "active" in body else True
    if Principal.objects.filter(name=name).exists():
        raise scim_error(AlreadyExists, f"User {name} already exists.", "uniqueness")
    if Group.objects.filter(name=name).exists():
        raise scim_error(AlreadyExists, f"{name} is the name of a group; a user needs a name of its own.",
                         "uniqueness")
    require_external_id_free(Principal, external_id)
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
        raise invalid_value(f"{user.name} is a metastore admin; SCIM does not deactivate metastore admins.",
                       "mutability")
    if "external_id" in changes:
        require_external_id_free(Principal, changes["external_id"], exclude=user)
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
    require_admin(caller)
    user = get_user(user_id, for_update=True)
    if _user_name(body) != user.name:
        raise invalid_value("userName cannot be changed (grants name their principal by it).", "mutability")
    return _apply_user_changes(caller, user, {
        "display_name": text_member(body, "displayName") or "",
        "external_id": text_member(body, "externalId"),
        "active": _active(body["active"]) if "active" in body else True,
    })


USER_PATCHABLE = {"active": "active", "displayname": "display_name", "externalid": "external_id"}


def _user_value(field: str, value):
    if field == "active":
        return _active(value)
    return text_member({field: value}, field, required=True)


@transaction.atomic
def patch_user(*, caller: Principal, user_id, body: dict) -> Principal:
    """PATCH: add / replace / remove of active, displayName, externalId (with a path, or without one
    and an object of attributes). Attributes SCIM does not keep here (roles, entitlements, emails,
    extensions) are ignored in an object and refused as a path."""
    require_admin(caller)
    user = get_user(user_id, for_update=True)
    changes: dict = {}
    for op, path, value in patch_operations(body):
        if path is None:
            if op == "remove" or not isinstance(value, dict):
                raise invalid_value("An operation without a path adds or replaces an object of attributes.", "noTarget")
            items = [(key.lower(), item) for key, item in value.items() if key.lower() in USER_PATCHABLE]
        else:
            if path.lower() not in USER_PATCHABLE:
                raise invalid_value(f"Attribute {path!r} cannot be changed through SCIM here.", "invalidPath")
            items = [(path.lower(), value)]
        for key, item in items:
            field = USER_PATCHABLE[key]
            if op == "remove":
                if field == "active":
                    raise invalid_value("active cannot be removed; replace it with false.", "mutability")
                changes[field] = "" if field == "display_name" else None
            else:
                changes[field] = _user_value(field, item)
    return _apply_user_changes(caller, user, changes)


@transaction.atomic
def delete_user(*, caller: Principal, user_id) -> None:
    require_admin(caller)
    user = get_user(user_id, for_update=True)
    if user.is_metastore_admin:
        raise invalid_value(f"{user.name} is a metastore admin; SCIM does not delete metastore admins.", "mutability")
    principals.delete_principal(caller=caller, principal=user, details={"via": "scim"})


# -- PATCH requests -----------------------------------------------------------------------------
def patch_operations(body: dict):
    """The PatchOp's operations as (op in lower case, path or None, value)."""
    operations = body.get("Operations", body.get("operations"))
    if not isinstance(operations, list) or not operations:
        raise invalid_value("A PatchOp carries a non-empty list of Operations.")
    for operation in operations:
        if not isinstance(operation, dict) or not isinstance(operation.get("op"), str) \
                or operation["op"].lower() not in ("add", "remove", "replace"):
            raise invalid_value("Each operation has an op: add, remove or replace.")
        path = operation.get("path")
        if path is not None and (not isinstance(path, str) or not path or len(path) > MAX_FILTER_LENGTH):
            raise invalid_value("An operation's path is a non-empty string.", "invalidPath")
        yield operation["op"].lower(), path, operation.get("value")
