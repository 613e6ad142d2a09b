"""Authorization: whether a caller may do something with a securable, decided in one place.

Every check is one call, `require(caller, obj, Action.X)`, and every listing one filter,
`visible(queryset, caller, Action.SEE)`. The rules follow Unity Catalog:

- a metastore admin may do everything;
- the owner of a securable, or of any container above it, holds every privilege on it;
- a privilege granted on a container is inherited by everything inside it;
- reaching anything inside a catalog needs USE CATALOG on it, and inside a schema USE SCHEMA too.

No existence oracle: what a caller may not see (the rule of `SEEN_WITH` below, the one the list
endpoints apply) is answered exactly as what does not exist, with the error of the outermost link
they may not see ("catalog not found" for a table in a catalog hidden from them). Someone who may
see an object but lacks what the action needs gets a 403; that tells nothing they could not list.

`Access` loads a principal's grants on one chain of securables (table -> schema -> catalog) with a
single query and answers every question about that chain from memory. A resolver that already
loaded it passes it on (`access=`), so a request loads the grants once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from django.db.models import Exists, F, OuterRef, Q, Value
from django.db.models.functions import Concat
from django.db.models.lookups import StartsWith

from catalog.choices import Privilege, SecurableType
from catalog import lookup_errors
from catalog.models import Catalog, Grant, GroupClosure, Metastore, Principal, Schema, Table
from ucweb.errors import CatalogError, PermissionDenied


class Action(StrEnum):
    """What a caller asks to do with a securable. Actions named after a privilege need that
    privilege on the securable (or a container above it); the others are described in `RULES`."""

    SEE = "see"            # list it, read its metadata (SEEN_WITH)
    USE = "use"            # reach inside its containers: USE CATALOG, and USE SCHEMA below a schema
    READ = "read"          # read its data
    WRITE = "write"        # change its data
    ALTER = "alter"        # change what it is (a table's schema, partitioning, protocol...)
    UPDATE = "update"      # the owner's actions: change, rename, drop, grant
    RENAME = "rename"
    DELETE = "delete"
    DROP = "drop"
    MANAGE_GRANTS = "manage grants"
    CREATE_SCHEMA = Privilege.CREATE_SCHEMA.value
    CREATE_TABLE = Privilege.CREATE_TABLE.value
    CREATE_VOLUME = Privilege.CREATE_VOLUME.value
    CREATE_FUNCTION = Privilege.CREATE_FUNCTION.value
    CREATE_MODEL = Privilege.CREATE_MODEL.value
    CREATE_POLICY = Privilege.CREATE_POLICY.value
    CREATE_EXTERNAL_LOCATION = Privilege.CREATE_EXTERNAL_LOCATION.value
    APPLY_POLICY = Privilege.APPLY_POLICY.value
    READ_FILES = Privilege.READ_FILES.value
    WRITE_FILES = Privilege.WRITE_FILES.value
    CREATE_EXTERNAL_TABLE = Privilege.CREATE_EXTERNAL_TABLE.value
    CREATE_EXTERNAL_VOLUME = Privilege.CREATE_EXTERNAL_VOLUME.value
    CREATE_MANAGED_STORAGE = Privilege.CREATE_MANAGED_STORAGE.value


OWNER_ACTIONS = {Action.UPDATE, Action.RENAME, Action.DELETE, Action.DROP, Action.MANAGE_GRANTS}

# The privileges that make a securable visible (at any level of its chain), besides USE on its
# containers. External locations and credentials are seen with any privilege on them.
SEEN_WITH = {
    SecurableType.CATALOG: (Privilege.USE_CATALOG,),
    SecurableType.SCHEMA: (Privilege.USE_SCHEMA,),
    SecurableType.TABLE: (Privilege.SELECT, Privilege.MODIFY),
    SecurableType.VOLUME: (Privilege.READ_VOLUME,),
    SecurableType.FUNCTION: (Privilege.EXECUTE,),
    SecurableType.REGISTERED_MODEL: (Privilege.EXECUTE,),
    SecurableType.POLICY: (Privilege.APPLY_POLICY,),
}
METASTORE_LEVEL = {SecurableType.EXTERNAL_LOCATION, SecurableType.CREDENTIAL}


@dataclass(frozen=True)
class Rule:
    """Any of `privileges` on the link `level` of the chain (0: the securable itself) or above;
    no privileges: only an owner (of it or above) or a metastore admin."""

    privileges: tuple[str, ...] = ()
    level: int = 0


# (securable type, action) -> rule, for the actions whose meaning depends on the securable.
RULES: dict[tuple[str, Action], Rule] = {
    (SecurableType.TABLE, Action.READ): Rule((Privilege.SELECT,)),
    (SecurableType.TABLE, Action.WRITE): Rule((Privilege.MODIFY,)),
    (SecurableType.TABLE, Action.ALTER): Rule((Privilege.MANAGE,)),
    (SecurableType.VOLUME, Action.READ): Rule((Privilege.READ_VOLUME,)),
    (SecurableType.VOLUME, Action.WRITE): Rule(),  # Unity Catalog: only the owner writes a volume
    (SecurableType.FUNCTION, Action.READ): Rule((Privilege.EXECUTE,)),
    (SecurableType.REGISTERED_MODEL, Action.READ): Rule((Privilege.EXECUTE,)),
    # Model versions: the model's owner, or whoever may create models in its schema.
    (SecurableType.REGISTERED_MODEL, Action.WRITE): Rule((Privilege.CREATE_MODEL,), level=1),
    (SecurableType.EXTERNAL_LOCATION, Action.READ): Rule((Privilege.READ_FILES,)),
    (SecurableType.EXTERNAL_LOCATION, Action.WRITE): Rule((Privilege.WRITE_FILES,)),
}


def rule_for(securable_type: str, action: Action) -> Rule:
    rule = RULES.get((securable_type, action))
    if rule is not None:
        return rule
    if action in OWNER_ACTIONS:
        return Rule()
    if action == Action.SEE:
        return Rule(SEEN_WITH.get(securable_type, ()))
    if action in Privilege.values:
        return Rule((Privilege(action.value),))
    raise ValueError(f"No rule for {action} on a {securable_type}.")


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

    # (securable id, privilege) → the group it is held through, when not granted to the principal
    _via: dict = field(default_factory=dict)

    @classmethod
    def load(cls, principal: Principal, securable) -> Access:
        chain = chain_of(securable)
        grants = () if principal.is_metastore_admin else Grant.objects.filter(
            grantees(principal), securable_id__in=[link.id for link in chain]
        ).values_list("securable_id", "privilege", "principal")
        return cls.from_held(principal, chain, grants)

    @classmethod
    def from_held(cls, principal: Principal, chain: list, grants) -> Access:
        """The access from the principal's grants, as (securable id, privilege) pairs, or with the
        grantee as a third item (the principal, or a group it is in); ids may be UUIDs or their
        text, and grants on securables outside the chain are ignored."""
        ids = {str(link.id): link.id for link in chain}
        held: dict = {}
        via: dict = {}
        for securable_id, privilege, *grantee in grants:
            key = ids.get(str(securable_id))
            if key is None:
                continue
            held.setdefault(key, set()).add(privilege)
            if grantee and grantee[0] != principal.name:
                via.setdefault((key, privilege), grantee[0])
            else:
                via[(key, privilege)] = None  # a grant of its own explains it best
        return cls(principal=principal, chain=chain, _held=held, _via=via)

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
                group = self._via.get((securable.id, privilege))
                where += f" to group {group}" if group else ""
                return f"granted on {where}" if index == level else f"inherited from a grant on {where}"
        return None

    def has_any_privilege(self, level: int = 0) -> bool:
        return self.owns(level) or any(self._held.get(s.id) for s in self.chain[level:])

    def allows(self, rule: Rule) -> bool:
        # Owners hold every privilege; an owner of the securable itself passes a rule whose
        # privilege is looked for from a container up (model versions: CREATE MODEL on the schema).
        if self.owns():
            return True
        return any(self.has(privilege, rule.level) for privilege in rule.privileges)

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
            raise PermissionDenied(message).about(self.chain[0])


# -- grants read with the row ---------------------------------------------------------------------
# A request that reads (and locks) a table row reads the caller's grants on the table, its schema
# and its catalog in the same statement, as "<securable id> <privilege>" texts in the row's
# attribute HELD_GRANTS: its access costs no query of its own. The column is SQL
# (HELD_GRANTS_SQL, which catalog.rows writes into its own statement): the ORM's compilation of
# a nested queryset cost more CPU per request than the round trip it saves.
HELD_GRANTS = "held_grants"
_TABLE, _SCHEMA = Table._meta.db_table, Schema._meta.db_table


def _held_grants_on(securable_ids: str) -> str:
    """The caller's grants on the securables whose ids are the SQL expressions `securable_ids`."""
    return (
        f'ARRAY(SELECT g.securable_id::text || \' \' || g.privilege FROM {Grant._meta.db_table} g '
        f'WHERE (g.principal = %s OR g.principal IN (SELECT c.group_name FROM {GroupClosure._meta.db_table} c '
        f'WHERE c.principal = %s)) AND g.securable_id IN ({securable_ids}))'
    )


HELD_GRANTS_SQL = _held_grants_on(
    f'"{_TABLE}"."id", "{_TABLE}"."schema_id", (SELECT s.catalog_id FROM {_SCHEMA} s WHERE s.id = "{_TABLE}"."schema_id")')
# The same for a catalog read by itself (catalog.rows.catalog): the caller's grants on it.
_CATALOG = Catalog._meta.db_table
CATALOG_HELD_GRANTS_SQL = _held_grants_on(f'"{_CATALOG}"."id"')


def held_grants_params(caller: Principal) -> list:
    """The parameters of HELD_GRANTS_SQL for `caller`."""
    return [caller.name, caller.name]


def grantees(principal: Principal) -> Q:
    """The grants `principal` holds (a condition on Grant): its own, and those of every group it
    is in, however deep (GroupClosure), in the same query that reads the grants."""
    return Q(principal=principal.name) | Q(
        principal__in=GroupClosure.objects.filter(principal=principal.name).values("group_name"))


def access_to_read(caller: Principal, row) -> Access:
    """The caller's access to a table read by `catalog.rows.tables`, or a catalog read by
    `catalog.rows.catalog`: no query, unless the grants did not come with the row (another
    database) or the chain is longer than table, schema and catalog (a nested namespace, whose
    parents' grants count too)."""
    held = getattr(row, HELD_GRANTS, None)
    nested = isinstance(row, Table) and row.schema.parent_id is not None
    if nested or (held is None and not caller.is_metastore_admin):
        return Access.load(caller, row)
    return Access.from_held(caller, chain_of(row), (item.split(" ", 1) for item in held or ()))


def describe(securable) -> str:
    return getattr(securable, "full_name", None) or getattr(securable, "name", str(securable))


def kind_of(securable) -> str:
    """`table`, `schema`, `registered model`...: the securable type, in words."""
    return securable._meta.verbose_name


def type_of(securable) -> str:
    """The SecurableType of a row (or a model): its model's name in Unity Catalog's spelling."""
    return SecurableType(kind_of(securable).replace(" ", "_"))


# -- visibility ------------------------------------------------------------------------------------
def hidden_level(access: Access, securable_type: str) -> int | None:
    """The index in `access.chain` (innermost first) of the outermost link that the caller may
    not see, or None when they see the whole chain. The catalog is the last link; a schema
    hidden from the caller is its innermost one (USE SCHEMA there is inherited from above)."""
    if access.is_admin:
        return None
    if securable_type in METASTORE_LEVEL:
        return None if access.has_any_privilege() else 0
    top = len(access.chain) - 1  # the catalog
    if not access.can_use_catalog():
        return top
    level = access.schema_level() if top >= 1 else None
    if level is not None and not access.has(Privilege.USE_SCHEMA, level):
        return level
    if level == 1 and not any(access.has(privilege) for privilege in SEEN_WITH[securable_type]):
        return 0
    return None


def hidden(error: CatalogError) -> CatalogError:
    """The "does not exist" error, marked so that the audit log records the refusal as DENIED
    (the mark never reaches the response)."""
    error.hidden = True
    return error


def not_found(row) -> CatalogError:
    """The error a lookup of `row` by its name answers when it does not exist."""
    securable_type = type_of(row)
    if securable_type == SecurableType.CATALOG:
        return lookup_errors.catalog_not_found(row.name)
    if securable_type == SecurableType.SCHEMA:
        return lookup_errors.schema_not_found(row.catalog.name, row.path)
    if securable_type == SecurableType.EXTERNAL_LOCATION:
        return lookup_errors.external_location_not_found(row.name)
    if securable_type == SecurableType.CREDENTIAL:
        return lookup_errors.credential_not_found(row.name)
    in_schema = {
        SecurableType.TABLE: lookup_errors.table_not_found,
        SecurableType.VOLUME: lookup_errors.volume_not_found,
        SecurableType.FUNCTION: lookup_errors.function_not_found,
        SecurableType.REGISTERED_MODEL: lookup_errors.registered_model_not_found,
        SecurableType.POLICY: lookup_errors.policy_not_found,
    }[securable_type]
    return in_schema(row.schema.catalog.name, row.schema.path, row.name)


NAMED = object()  # `missing` default: the not-found error of the hidden link, by name


# -- the checks -------------------------------------------------------------------------------------
def require(caller: Principal, obj, action: Action, *, access: Access | None = None,
            missing: CatalogError | Callable[[object], CatalogError] | None = NAMED,
            refused: str | None = None) -> Access:
    """The caller's access to `obj` once they may do `action` with it; otherwise an error.

    A caller who may not see `obj` gets `missing`: by default the error a lookup by name gives for
    the outermost link hidden from them; an error (or a function of the hidden row) when the
    caller named the object otherwise (an id, an Iceberg namespace). `missing=None` when the caller
    did not name the object at all (the external location containing a path they sent) or when an
    API answers an object it found a 403: then the USE privileges on its containers and the action
    (seeing it too) are checked, each with a 403. `refused`: the message of the action's 403 where
    an API words it its own way (Polaris's "table-like"), instead of `refusal`'s."""
    if access is None:
        access = Access.load(caller, obj)
    securable_type = type_of(obj)
    if missing is None:
        require_container_use(access)
    else:
        level = hidden_level(access, securable_type)
        if level is not None:
            if missing is NAMED:
                error = not_found(access.chain[level])
            elif callable(missing):
                error = missing(access.chain[level])
            else:
                error = missing
            raise hidden(error).about(obj)
    if action == Action.USE or (action == Action.SEE and missing is not None):
        return access
    rule = rule_for(securable_type, action)
    if not access.allows(rule):
        raise PermissionDenied(refused or refusal(obj, action, rule)).about(obj)
    return access


def allows(caller: Principal, obj, action: Action, *, access: Access | None = None) -> bool:
    """Whether the caller, who may see `obj`, may also do `action` with it (no error)."""
    if access is None:
        access = Access.load(caller, obj)
    if action in (Action.SEE, Action.USE):
        return hidden_level(access, type_of(obj)) is None
    return access.allows(rule_for(type_of(obj), action))


VERBS = {Action.WRITE: "write to", Action.MANAGE_GRANTS: "change privileges on"}


def require_alter(access: Access, changes: list[str]) -> None:
    """A commit that changes a table's definition (`changes`, in words: what
    commits.formats.definition finds) needs its owner, MANAGE on it or above, or a metastore
    admin; MODIFY writes data only. A data-only commit (no changes) needs nothing more."""
    table = access.chain[0]
    if changes and not access.allows(rule_for(type_of(table), Action.ALTER)):
        raise PermissionDenied(
            f"Changing the definition of {kind_of(table)} {describe(table)} ({', '.join(changes)}) needs "
            f"its owner, {Privilege.MANAGE} on it, or a metastore admin; {Privilege.MODIFY} writes data only."
        ).about(table)


def refusal(obj, action: Action, rule: Rule) -> str:
    """The 403 message: what the action needs and where."""
    target = f"{kind_of(obj)} {describe(obj)}"
    if not rule.privileges:
        return f"Only the owner of {target} or a metastore admin may {VERBS.get(action, action.value)} it."
    if rule.level:
        return (f"Only the owner of {target} or a holder of {' or '.join(rule.privileges)} on its "
                f"{kind_of(chain_of(obj)[rule.level])} may {VERBS.get(action, action.value)} it.")
    return f"Missing {' or '.join(rule.privileges)} on {target}."


def require_container_use(access: Access) -> None:
    """USE CATALOG on the catalog above, and USE SCHEMA on the schema above, each with a 403."""
    securable = access.chain[0]
    if getattr(securable, "schema", None) is not None:
        require_schema_use(access)
    elif getattr(securable, "catalog", None) is not None:
        require_catalog_use(access)


def require_catalog_use(access: Access) -> None:
    access.require(access.can_use_catalog(), f"Missing USE CATALOG on catalog {describe(access.chain[-1])}.")


def require_schema_use(access: Access) -> None:
    require_catalog_use(access)
    access.require(access.can_use_schema(),
                   f"Missing USE SCHEMA on schema {describe(access.chain[access.schema_level()])}.")


def visible(queryset, caller: Principal, action: Action = Action.SEE, *, access: Access | None = None):
    """The rows of `queryset` with which the caller may do `action`, in one query.

    `access`: the caller's access to the container all rows share (a resolver checked the USE
    privileges on it); then a privilege held on the container shows every row, and otherwise only
    the rows owned or granted one by one (a schema, also through a schema it lies in). Without
    it, the rule is applied to every link of each row's chain in SQL (USE CATALOG, USE SCHEMA,
    then the action), a nested schema's parents included, as `require` applies it."""
    if caller.is_metastore_admin:
        return queryset
    securable_type = type_of(queryset.model)
    rule = rule_for(securable_type, action)
    if access is not None and access.allows(Rule(rule.privileges)):
        return queryset
    links = _links(queryset.model)
    if access is not None:
        return queryset.filter(_held_at(caller, rule.privileges, links[:1]))
    if securable_type in METASTORE_LEVEL:
        if action == Action.SEE:
            granted = Grant.objects.filter(grantees(caller)).values("securable_id")
            return queryset.filter(Q(owner=caller.name) | Q(id__in=granted))
        return queryset.filter(_held_at(caller, rule.privileges, links))
    queryset = queryset.filter(_held_at(caller, (Privilege.USE_CATALOG,), links[-1:]))
    if len(links) >= 2:
        queryset = queryset.filter(_held_at(caller, (Privilege.USE_SCHEMA,), links[-2:]))
    if action == Action.SEE and securable_type in (SecurableType.CATALOG, SecurableType.SCHEMA):
        return queryset  # seeing them is using them
    return queryset.filter(_held_at(caller, rule.privileges, links[rule.level:]))


def _links(model) -> list[tuple[str, type]]:
    """The field path from a row to each link of its chain and the link's model, innermost
    first. A schema link stands for the schemas it lies in too (`_held_at`)."""
    fields = {f.name for f in model._meta.concrete_fields}
    if "schema" in fields:
        return [("", model), ("schema__", Schema), ("schema__catalog__", Catalog)]
    if "catalog" in fields:
        return [("", model), ("catalog__", Catalog)]
    return [("", model)]


def _held_at(caller: Principal, privileges, links) -> Q:
    """Owner of one of `links`, or holding one of `privileges` on one of them; on a schema link,
    on the schema or on a schema it lies in (as `chain_of` has it for `require`)."""
    granted = Grant.objects.filter(grantees(caller), privilege__in=list(privileges)).values("securable_id")

    def held(path: str) -> Q:
        owned = Q(**{f"{path}owner": caller.name})
        return owned | Q(**{f"{path}id__in": granted}) if privileges else owned

    condition = Q()
    for path, link in links:
        condition |= held(path)
        if link is Schema:  # the schemas a nested one lies in: those whose path prefixes its own
            outer = Schema.objects.filter(held(""), catalog_id=OuterRef(f"{path}catalog_id")).filter(
                StartsWith(OuterRef(f"{path}path"), Concat(F("path"), Value("."))))
            condition |= Q(**{f"{path}parent__isnull": False}) & Exists(outer)
    return condition


# -- metastore-level privileges ------------------------------------------------------------------
def has_metastore_privilege(principal: Principal, privilege: str) -> bool:
    if principal.is_metastore_admin:
        return True
    metastore = Metastore.objects.only("id").first()
    return metastore is not None and Grant.objects.filter(
        grantees(principal), securable_id=metastore.id, privilege=privilege
    ).exists()
