"""Apache Polaris policies over the one namespace.

A policy lives in a namespace (a schema) and is attached to the catalog, a namespace or a table of
the same catalog (any format: Iceberg, Delta, a generic table, a view). What applies to a target is
resolved as Polaris's `PolicyCatalog.getEffectivePolicies` does: walk the path catalog → namespace
→ table; an inheritable policy attached higher up flows down, and for each policy type the one
attached deepest wins. Every system type is inheritable. For example, with

    catalog unity:            system.snapshot-expiry  "keep-7d"    system.data-compaction "bin-pack"
    namespace unity.sales:    system.snapshot-expiry  "keep-30d"
    table unity.sales.orders: system.data-compaction  "no-compaction"

the table's applicable policies are keep-30d (inherited, from the namespace) and no-compaction
(attached to it, not inherited); the namespace's are keep-30d (not inherited) and bin-pack
(inherited).

Privileges. Polaris has POLICY_CREATE, POLICY_READ, POLICY_WRITE, POLICY_DROP, POLICY_LIST and
POLICY_ATTACH/POLICY_DETACH (with CATALOG/NAMESPACE/TABLE_ATTACH_POLICY on the target). In ucweb's
Unity Catalog grant model they are:
- CREATE POLICY on the schema (or its catalog): create policies in the schema;
- APPLY POLICY on the policy (or its schema or catalog): read it, attach it and detach it;
- APPLY POLICY on the target (the catalog, the schema or the table, or a container of it):
  attach policies to it and detach them;
- updating and dropping a policy: its owner (or an owner above it, or a metastore admin);
- reading what applies to a target: being able to see the target (USE CATALOG, USE SCHEMA, and
  SELECT or MODIFY for a table).
Owners hold every privilege, as everywhere in ucweb; USE CATALOG and USE SCHEMA are needed to reach
anything inside a catalog or schema.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from catalog import authz, resolve
from catalog.authz import Action
from catalog.choices import PolicyTargetType
from catalog.models import Catalog, Policy, PolicyAttachment, Principal, Schema, Table
from catalog.services import audit
from catalog.services.common import validate_properties
from catalog.services.iceberg import warehouse
from catalog.names import namespace_levels
from catalog.services.policy_content import parse_content, validate_policy_type
from ucweb.errors import (
    AlreadyExists,
    InvalidParameter,
    PolicyAttachmentConflict,
    PolicyDoesNotExist,
    PolicyInUse,
    PolicyMappingDoesNotExist,
    PolicyVersionMismatch,
    TableDoesNotExist,
)

POLICY_NAME_CHARACTERS = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
MAX_DESCRIPTION = 10_000
MAX_CONTENT = 100_000


# -- names and lookups --------------------------------------------------------------------------
def validate_policy_name(value) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidParameter("name must be a non-empty string.")
    if len(value) > 255 or not set(value) <= POLICY_NAME_CHARACTERS:
        raise InvalidParameter(
            f"Policy name {value!r} is invalid: use 1 to 255 letters, digits, '-' and '_'.")
    return value


def dotted(schema: Schema, name: str) -> str:
    """`a.b.name`: how the Polaris messages name a policy or table of a namespace."""
    return ".".join([*schema.levels, name])


def _policy(caller: Principal, prefix: str, namespace, name: str, *,
            for_update: bool = False) -> tuple[Policy, authz.Access]:
    """The policy, with the caller's access to it (a policy they cannot see answers as a missing one)."""
    schema, _ = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    queryset = resolve.lockable(Policy.objects.select_related("schema__catalog"), for_update)
    policy = queryset.filter(schema=schema, name=name).first()
    missing = PolicyDoesNotExist(f"Policy {dotted(schema, name)} does not exist.")
    if policy is None:
        raise missing
    policy.schema = schema
    return policy, authz.require(caller, policy, Action.SEE, missing=missing)


def _text(value, *, field: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParameter(f"{field} must be a string.")
    if len(value) > limit:
        raise InvalidParameter(f"{field} must be at most {limit} characters.")
    if "\x00" in value:
        raise InvalidParameter(f"{field} must not contain NUL characters.")
    return value


def _record(caller: Principal, action: str, policy: Policy, **details) -> None:
    audit.record(principal=caller.name, action=action, securable_type="policy",
                 securable_name=policy.full_name, securable_id=policy.id, details=details)


# -- policies -------------------------------------------------------------------------------------
def create_policy(*, caller: Principal, prefix: str, namespace: str, body: dict) -> Policy:
    schema, access = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    name = validate_policy_name(body.get("name"))
    policy_type = validate_policy_type(body.get("type"))
    description = _text(body.get("description"), field="description", limit=MAX_DESCRIPTION)
    content = _text(body.get("content"), field="content", limit=MAX_CONTENT)
    parse_content(policy_type, content)
    authz.require(caller, schema, Action.CREATE_POLICY, access=access)
    try:
        with transaction.atomic():
            policy = Policy.objects.create(
                schema=schema, name=name, policy_type=policy_type, comment=description, content=content,
                owner=caller.name, created_by=caller.name, updated_by=caller.name,
            )
            _record(caller, "createPolicy", policy, policy_type=policy_type, version=0)
    except IntegrityError:
        raise AlreadyExists(f"Policy {dotted(schema, name)} already exists.") from None
    return policy


def load_policy(*, caller: Principal, prefix: str, namespace: str, name: str) -> Policy:
    policy, access = _policy(caller, prefix, namespace, name)
    authz.require(caller, policy, Action.APPLY_POLICY, access=access, missing=None)
    return policy


def list_policies(*, caller: Principal, prefix: str, namespace: str, policy_type: str | None):
    schema, access = resolve.namespace(caller, warehouse(prefix, caller), namespace)
    queryset = Policy.objects.filter(schema=schema)
    if policy_type not in (None, ""):
        queryset = queryset.filter(policy_type=validate_policy_type(policy_type))
    return authz.visible(queryset, caller, access=access)


def update_policy(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> Policy:
    expected = body.get("current-policy-version")
    if not isinstance(expected, int) or isinstance(expected, bool):
        raise InvalidParameter("current-policy-version is required (the version the update is based on).")
    description = _text(body.get("description"), field="description", limit=MAX_DESCRIPTION)
    content = _text(body.get("content"), field="content", limit=MAX_CONTENT)
    with transaction.atomic():
        policy, access = _policy(caller, prefix, namespace, name, for_update=True)
        authz.require(caller, policy, Action.UPDATE, access=access, missing=None)
        if content is not None:
            parse_content(policy.policy_type, content)
        if policy.version != expected:
            raise PolicyVersionMismatch(
                f"Policy {dotted(policy.schema, policy.name)} is at version {policy.version}, not {expected}.")
        if description is not None:
            policy.comment = description
        if content is not None:
            policy.content = content
        policy.version += 1
        policy.updated_at = timezone.now()
        policy.updated_by = caller.name
        policy.save()
        _record(caller, "updatePolicy", policy, version=policy.version,
                changed=[key for key, value in (("description", description), ("content", content)) if value is not None])
    return policy


def drop_policy(*, caller: Principal, prefix: str, namespace: str, name: str, detach_all: bool) -> None:
    with transaction.atomic():
        policy, access = _policy(caller, prefix, namespace, name, for_update=True)
        authz.require(caller, policy, Action.DROP, access=access, missing=None)
        targets = [attachment.target_name for attachment in
                   policy.attachments.select_related("catalog", "schema__catalog", "table__schema__catalog")]
        if targets and not detach_all:
            raise PolicyInUse(
                f"Policy {dotted(policy.schema, policy.name)} is attached to {', '.join(sorted(targets))}; "
                f"detach it first or drop it with detach-all=true.")
        _record(caller, "dropPolicy", policy, detached=sorted(targets))
        policy.delete()


# -- targets and attachments -------------------------------------------------------------------------
@dataclass
class Target:
    kind: str
    row: Catalog | Schema | Table
    access: authz.Access | None = None  # the caller's, when `_target` loaded it

    @property
    def name(self) -> str:
        return self.row.full_name


def _target(caller: Principal, catalog: Catalog, data) -> Target:
    if not isinstance(data, dict):
        raise InvalidParameter("target must be an object with type and path.")
    kind, path = data.get("type"), data.get("path")
    if kind not in PolicyTargetType.values:
        raise InvalidParameter(f"target.type must be one of {', '.join(PolicyTargetType.values)}.")
    if path is None:
        path = []
    if not isinstance(path, list) or not all(isinstance(level, str) and level for level in path):
        raise InvalidParameter("target.path must be an array of non-empty strings.")
    if kind == PolicyTargetType.CATALOG:
        if path:
            raise InvalidParameter("target.path must be empty for a catalog.")
        return Target(kind, catalog)
    if kind == PolicyTargetType.NAMESPACE:
        if not path:
            raise InvalidParameter("target.path must name the namespace.")
        return Target(kind, resolve.namespace(caller, catalog, path)[0])
    if len(path) < 2:
        raise InvalidParameter("target.path must name the namespace and then the table.")
    schema, _ = resolve.namespace(caller, catalog, path[:-1])
    table = Table.objects.filter(schema=schema, name=path[-1]).first()
    missing = TableDoesNotExist(f"Table {dotted(schema, path[-1])} does not exist.")
    if table is None:
        raise missing
    table.schema = schema
    # Hidden answers as missing; APPLY POLICY on the table is enough to name it as a target.
    access = authz.Access.load(caller, table)
    if not authz.allows(caller, table, Action.APPLY_POLICY, access=access):
        authz.require(caller, table, Action.SEE, access=access, missing=missing)
    return Target(kind, table, access)


def _require_target(caller: Principal, target: Target) -> None:
    """APPLY POLICY on the target (found by `_target`, which the caller sees)."""
    authz.require(caller, target.row, Action.APPLY_POLICY, access=target.access, missing=None,
                  refused=f"Missing APPLY POLICY on {target.kind} {target.name}.")


def _target_fields(target: Target) -> dict:
    field = {PolicyTargetType.CATALOG: "catalog", PolicyTargetType.NAMESPACE: "schema",
             PolicyTargetType.TABLE_LIKE: "table"}[target.kind]
    return {field: target.row, "target_type": target.kind, "target_id": target.row.id}


def attach_policy(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> None:
    catalog = warehouse(prefix, caller)
    parameters = validate_properties(body.get("parameters"), field="parameters")
    with transaction.atomic():
        policy, access = _policy(caller, prefix, namespace, name, for_update=True)
        target = _target(caller, catalog, body.get("target"))
        authz.require(caller, policy, Action.APPLY_POLICY, access=access, missing=None)
        _require_target(caller, target)
        existing = PolicyAttachment.objects.filter(target_id=target.row.id, policy_type=policy.policy_type).first()
        if existing is not None and existing.policy_id != policy.id:
            other = Policy.objects.select_related("schema").get(id=existing.policy_id)
            raise PolicyAttachmentConflict(
                f"{target.kind} {target.name} already has a {policy.policy_type} policy attached "
                f"({dotted(other.schema, other.name)}); detach it first.")
        try:
            with transaction.atomic():
                if existing is not None:
                    existing.parameters = parameters
                    existing.save(update_fields=["parameters"])
                else:
                    PolicyAttachment.objects.create(policy=policy, policy_type=policy.policy_type,
                                                    parameters=parameters, created_by=caller.name,
                                                    **_target_fields(target))
        except IntegrityError:
            raise PolicyAttachmentConflict(
                f"{target.kind} {target.name} already has a {policy.policy_type} policy attached.") from None
        _record(caller, "attachPolicy", policy, target_type=target.kind, target=target.name, parameters=parameters)


def detach_policy(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> None:
    catalog = warehouse(prefix, caller)
    with transaction.atomic():
        policy, access = _policy(caller, prefix, namespace, name, for_update=True)
        target = _target(caller, catalog, body.get("target"))
        authz.require(caller, policy, Action.APPLY_POLICY, access=access, missing=None)
        _require_target(caller, target)
        deleted, _ = PolicyAttachment.objects.filter(policy=policy, target_id=target.row.id).delete()
        if not deleted:
            raise PolicyMappingDoesNotExist(
                f"Policy {dotted(policy.schema, policy.name)} is not attached to {target.kind} {target.name}.")
        _record(caller, "detachPolicy", policy, target_type=target.kind, target=target.name)


# -- what applies ---------------------------------------------------------------------------------
@dataclass
class Applicable:
    policy: Policy
    inherited: bool
    parameters: dict
    level: int = 0  # where it is attached: 0 the catalog, then each namespace level, then the table

    @property
    def content(self) -> dict:
        return parse_content(self.policy.policy_type, self.policy.content)


def _path(target) -> list:
    """catalog → namespace → nested namespace → table: the target's ancestors and the target,
    outermost first."""
    if isinstance(target, Table):
        return [*_path(target.schema), target]
    if isinstance(target, Schema):
        return [target.catalog, *reversed(target.ancestors()), target]
    return [target]


def effective_policies(target, *, policy_type: str | None = None) -> dict[str, Applicable]:
    """The policies that apply to a catalog, schema or table, by type: for each type the
    inheritable policy attached deepest on the path wins; a policy attached elsewhere than the
    target itself is `inherited`. Non-inheritable policies (none of the system types is) would
    count only where they are attached. One query (two below a nested namespace)."""
    path = _path(target)
    depth = {row.id: index for index, row in enumerate(path)}
    attachments = PolicyAttachment.objects.filter(target_id__in=list(depth)).select_related("policy__schema__catalog")
    if policy_type:
        attachments = attachments.filter(policy_type=policy_type)
    result: dict[str, Applicable] = {}
    chosen_depth: dict[str, int] = {}
    last = len(path) - 1
    for attachment in attachments:
        level = depth[attachment.target_id]
        policy = attachment.policy
        if not policy.inheritable and level != last:
            continue
        if chosen_depth.get(policy.policy_type, -1) < level:
            chosen_depth[policy.policy_type] = level
            result[policy.policy_type] = Applicable(policy, level != last, dict(attachment.parameters), level)
    return dict(sorted(result.items()))


def applicable_policies(*, caller: Principal, prefix: str, namespace: str | None, target_name: str | None,
                        policy_type: str | None) -> list[Applicable]:
    catalog = warehouse(prefix, caller)
    if policy_type not in (None, ""):
        policy_type = validate_policy_type(policy_type)
    else:
        policy_type = None
    if target_name and not namespace:
        raise InvalidParameter("namespace is required with target-name.")
    if target_name:
        found = _target(caller, catalog, {"type": PolicyTargetType.TABLE_LIKE,
                                          "path": [*namespace_levels(namespace), target_name]})
        target = found.row
        # Seen (or it answered as missing): what applies to it needs SELECT or MODIFY.
        authz.require(caller, target, Action.SEE, access=found.access, missing=None,
                      refused=f"Missing SELECT on table {target.full_name}.")
    elif namespace:
        target, _ = resolve.namespace(caller, catalog, namespace)
    else:
        target = catalog  # `warehouse` answered it missing unless the caller holds USE CATALOG
    return list(effective_policies(target, policy_type=policy_type).values())


def attachments_of(policy: Policy) -> list[PolicyAttachment]:
    """What a policy is attached to (for the admin)."""
    return list(policy.attachments.select_related("catalog", "schema__catalog", "table__schema__catalog"))
