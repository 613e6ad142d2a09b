"""The recipes every securable shares, so that a change means the same thing whatever is changed.

`update(...)`: rename inside its container, comment, properties, owner, then the names recorded on
grants (of the securable and of everything inside it) and the audit event, in the caller's
transaction. Each securable describes itself once in an `Updatable`; what only it has (a location's
url, a credential's keys) is applied by the service before the recipe runs.

`readable(...)`: a securable found by name, once the caller may read it. `audited(...)`: the audit
event of a created or updated securable (`save_new_with_storage_root(...)`: a new catalog or schema
with its managed storage). `dropping(...)`: the caller may delete the row, the body of the `with`
deletes it, then its audit event names what it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.db.models import QuerySet
from django.utils import timezone

from catalog import authz, locations, resolve, schema_contract
from catalog.authz import Action
from catalog.models import Principal
from catalog.services import audit, grants
from catalog.services.common import validate_comment, validate_properties
from catalog.names import validate_name
from ucweb.errors import AlreadyExists, CatalogError, InvalidParameter, PermissionDenied, PrincipalDoesNotExist

COMMON_FIELDS = ("comment", "properties", "owner")
COMMENT_AND_OWNER = ("comment", "owner")  # the securables whose properties are not the owner's to set


def in_its_schema(row) -> QuerySet:
    """The rows of `row`'s kind in its schema: the names a table, volume or registered model must
    differ from."""
    return type(row).objects.filter(schema=row.schema)


def in_the_metastore(row) -> QuerySet:
    """Every row of `row`'s kind: the names a catalog, credential or external location must
    differ from."""
    return type(row).objects.all()


@dataclass(frozen=True)
class Updatable:
    """How one kind of securable is updated.

    `fields`: the common fields it takes from a request (a table's properties belong to its
    protocol, so it takes no `properties`); `renamable`: whether `new_name` is accepted;
    `siblings`: the rows its name must differ from; `comment`: the comment's validator."""

    securable_type: str
    siblings: Callable[[object], QuerySet] | None = None
    fields: tuple[str, ...] = COMMON_FIELDS
    comment: Callable = validate_comment
    already_exists: type[CatalogError] = AlreadyExists
    # What the update is audited as; by default the update of its securable type (updateVolume).
    audit_action: str = ""

    def __post_init__(self):
        if not self.audit_action:
            object.__setattr__(self, "audit_action", audit.change_of(self.securable_type, "update"))

    @classmethod
    def in_a_schema(cls, securable_type: str, **rest) -> Updatable:
        """A table, volume or registered model: renamed among the rows of its schema, its comment
        and owner changed (its properties are not the owner's to set)."""
        return cls(securable_type=securable_type, siblings=in_its_schema, fields=COMMENT_AND_OWNER, **rest)

    @property
    def what(self) -> str:
        """What "already exists" calls it: "Catalog", "Registered model"."""
        return self.securable_type.replace("_", " ").capitalize()


def rename(row, new_name, kind: Updatable) -> None:
    """Gives `row` the name `new_name` when it differs, once no sibling holds it."""
    if new_name is None or new_name == row.name:
        return
    validate_name(new_name, field="new_name")
    if kind.siblings(row).filter(name=new_name).exclude(pk=row.pk).exists():
        container = getattr(row, "schema", None) or getattr(row, "catalog", None)
        where = f"{container.full_name}.{new_name}" if container is not None else new_name
        raise kind.already_exists(f"{kind.what} '{where}' already exists.")
    row.name = new_name


def change_owner(row, new_owner, *, caller: Principal, access: authz.Access) -> None:
    if not isinstance(new_owner, str) or not new_owner:
        raise InvalidParameter("owner must be a principal name.")
    if not access.owns():
        raise PermissionDenied("Only the owner or a metastore admin may change the owner.")
    if not Principal.objects.filter(name=new_owner).exists():
        raise PrincipalDoesNotExist(f"Principal {new_owner} does not exist.")
    row.owner = new_owner


def apply_common_fields(row, fields: dict, kind: Updatable, *, caller: Principal, access: authz.Access) -> None:
    """Comment, properties and owner, each when the request names it (and the securable has it)."""
    if "comment" in fields and "comment" in kind.fields:
        row.comment = kind.comment(fields["comment"])
    if "properties" in fields and "properties" in kind.fields:
        row.properties = validate_properties(fields["properties"])
        schema_contract.require_settable(row.properties, applies=False, what=f"{authz.kind_of(row)} {row.name}")
    owner = fields.get("owner")
    if "owner" in kind.fields and owner is not None and owner != row.owner:
        change_owner(row, owner, caller=caller, access=access)
    row.updated_at, row.updated_by = timezone.now(), caller.name


def update(row, fields: dict, kind: Updatable, *, caller: Principal, access: authz.Access,
           details: dict | None = None, apply: Callable[[], None] | None = None):
    """The owner's update of `row`, in the caller's transaction: rename, `apply` (what only this
    securable has), the common fields, save, the names on grants, the audit event (`details`, or
    the request's fields)."""
    authz.require(caller, row, Action.UPDATE, access=access)
    name_before = authz.describe(row)
    if kind.siblings is not None:
        rename(row, fields.get("new_name"), kind)
    if apply is not None:
        apply()
    apply_common_fields(row, fields, kind, caller=caller, access=access)
    row.save()
    if authz.describe(row) != name_before:  # the grants inside carry the full name; only a rename changes it
        grants.refresh_names(row)
    return audited(row, caller=caller, action=kind.audit_action, securable_type=kind.securable_type,
                   details=dict(fields) if details is None else details)


def readable(find: Callable, *, caller: Principal, full_name: str):
    """The securable `find` (a resolver of catalog.resolve: the row and the caller's access) finds
    by `full_name`, once the caller may read it: READ VOLUME on a volume, EXECUTE on a function or
    a registered model.

    The other securables are answered as the resolver finds them, to whoever sees them: a
    catalog, schema or credential has no reading apart from its seeing, and a table or an
    external location is shown to more than the readers of its data (see their get_*)."""
    row, access = find(caller, full_name)
    authz.require(caller, row, Action.READ, access=access)
    return row


def audited(row, *, caller: Principal, action: str, securable_type: str, details: dict | None = None):
    """`row`, once the caller's `action` on it is in the audit trail under its full name."""
    audit.record(principal=caller.name, action=action, securable_type=securable_type,
                 securable_name=row.full_name, securable_id=row.id, details=details)
    return row


def save_new_with_storage_root(row, *, caller: Principal, kind: str, action: str):
    """Saves a new catalog or schema (`kind`) and audits it as `action`: when it names a
    storage_root, its managed storage is placed there first (catalog.locations.place_root)."""
    if row.storage_root:
        row.storage_root, row.storage_location = locations.place_root(
            caller=caller, value=row.storage_root, kind=kind, securable_id=row.id)
    row.save()
    return audited(row, caller=caller, action=action, securable_type=kind)


@contextmanager
def dropping(row, *, caller: Principal, access: authz.Access, securable_type: str,
             details: dict | None = None) -> Iterator[dict]:
    """The deletion of `row` in the caller's transaction, by the body of the `with`.

    On entry, the caller must be allowed to delete it (its owner, an owner of a container or a
    metastore admin; else a 403), before the body checks what else must hold (no schemas in a
    catalog unless forced, ...). The body deletes the row and what goes with it: a catalog's,
    schema's or table's grants explicitly (they have no post_delete handler); a volume's,
    function's or registered model's grants and files go by the post_delete handlers of
    catalog.models.assets, a credential's or external location's grants by theirs. When the body
    is done, the audit event (the deletion of its securable type: deleteVolume) names the id and
    full name the row had, with `details` (the dict the `with` gives: the body may add what it
    learnt; none are recorded when it is empty)."""
    authz.require(caller, row, Action.DELETE, access=access)
    row_id, name = row.id, row.full_name
    details = {} if details is None else details
    yield details
    audit.record(principal=caller.name, action=audit.change_of(securable_type, "delete"),
                 securable_type=securable_type, securable_name=name, securable_id=row_id, details=details or None)


@contextmanager
def dropping_container(row, *, caller: Principal, access: authz.Access, securable_type: str, force: bool,
                       holds_anything: Callable[[], bool], not_empty: CatalogError) -> Iterator[dict]:
    """`dropping` for a catalog or schema, whose body drops it with everything inside: refused with
    `not_empty` when it holds anything and `force` is not set.

    The caller resolves the row for update, and it stays locked until the end: what is created in
    it meanwhile waits, and fails then, instead of slipping in after the check that it is empty."""
    with dropping(row, caller=caller, access=access, securable_type=securable_type,
                  details={"force": force}) as details:
        if not force and holds_anything():
            raise not_empty
        yield details


def require_create(caller: Principal, catalog_name: str, schema_name: str, action: Action):
    """The schema named, once the caller may see it and do `action` (CREATE TABLE, ...) in it."""
    schema, access = resolve.schema(caller, catalog_name, schema_name)
    authz.require(caller, schema, action, access=access)
    return schema


def require_create_table(caller: Principal, catalog_name: str, schema_name: str):
    """Every protocol that creates tables (UC, Delta, Iceberg, Polaris) asks this."""
    return require_create(caller, catalog_name, schema_name, Action.CREATE_TABLE)
