"""The authorization matrix: the roles an operation is run as (`roles_for`), the checks the
server makes for it, in order (`see`, `allow`, `own`), and from those the answer each role
must get (`Op.expected`), restated from the rules in docs/security.md rather than read from the
server's code."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from catalog.choices import PRIVILEGES_BY_SECURABLE
from tests.api_cases.references import (
    CATALOG,
    IN_SCHEMA,
    METASTORE,
    SCHEMA,
    USE_CATALOG,
    USE_SCHEMA,
    chain,
    split,
)

# Inside a schema, the privileges that make an object visible (at any level of its chain).
SEEN_WITH = {"table": ("SELECT", "MODIFY"), "volume": ("READ VOLUME",), "function": ("EXECUTE",),
             "registered_model": ("EXECUTE",)}
NOT_FOUND = {
    "catalog": "CATALOG_DOES_NOT_EXIST", "schema": "SCHEMA_DOES_NOT_EXIST", "table": "TABLE_DOES_NOT_EXIST",
    "volume": "VOLUME_DOES_NOT_EXIST", "function": "FUNCTION_DOES_NOT_EXIST",
    "registered_model": "RESOURCE_DOES_NOT_EXIST", "credential": "CREDENTIAL_DOES_NOT_EXIST",
    "external_location": "EXTERNAL_LOCATION_DOES_NOT_EXIST",
}



@dataclass(frozen=True)
class Role:
    name: str
    grants: tuple = ()  # ((ref, privilege), ...)
    owns: str | None = None
    admin: bool = False
    anonymous: bool = False
    # What the declaration itself implies for the role: allowed with exactly the grants an
    # operation needs (or the same inherited from a container), as the owner or an admin; refused
    # with any one of them missing. Checked against the rules, so that a declaration cannot need
    # too much or too little unnoticed.
    declared: str | None = None
    # The grants are made to a group bob is in (1), or to a group holding the group bob is in (2).
    through_groups: int = 0

    def owns_any(self, ref: str) -> bool:
        return self.admin or self.owns in chain(ref)

    def holds(self, privilege: str, ref: str) -> bool:
        """Admin, owner of `ref` or a container, or a grant on `ref` or a container."""
        return self.owns_any(ref) or any((link, privilege) in self.grants for link in chain(ref))

    def hidden(self, ref: str) -> str | None:
        """None when the role sees `ref`; otherwise the error code of the outermost level it does
        not see (what is invisible answers as missing)."""
        kind, _ = split(ref)
        if self.admin or kind == "metastore":
            return None
        if kind in ("credential", "external_location"):
            seen = self.owns == ref or any(link == ref for link, _ in self.grants)
            return None if seen else NOT_FOUND[kind]
        for level in reversed(chain(ref)):
            level_kind, _ = split(level)
            needs = {"catalog": (USE_CATALOG,), "schema": (USE_SCHEMA,)}.get(level_kind) or SEEN_WITH[level_kind]
            if not any(self.holds(privilege, level) for privilege in needs):
                return NOT_FOUND[level_kind]
        return None


# A check the server makes, in order: ("see", ref), or ("allow", ((privilege or None, ref), ...)):
# one of the alternatives held (None: ownership of ref or a container).
def see(ref: str) -> tuple:
    return ("see", ref)


def allow(*alternatives: tuple) -> tuple:
    return ("allow", alternatives)


def own(ref: str) -> tuple:
    return allow((None, ref))


@dataclass(frozen=True)
class Op:
    name: str
    method: str
    path: str
    body: dict | None = None
    checks: tuple = ()
    # Exactly the grants a non-owner needs; None when only ownership lets one do it.
    needed: tuple | None = ()
    # Other sets of grants that serve as well as `needed` (a table read with MODIFY, not SELECT).
    alternatives: tuple = ()
    # The securable an owner owns, and the USE grants an owner still needs to reach it.
    owned: str | None = None
    action: str | None = None  # audit action of a successful mutation; None for reads
    # A listing: (key of the list in the response, ref of the object that must show exactly when
    # the role sees it).
    lists: tuple | None = None
    # After a success by principal `who`: did it do what it says?
    done: Callable[[str], bool] = field(default=lambda who: True, compare=False)

    def expected(self, role: Role) -> tuple[int, str | None]:
        if role.anonymous:
            return 401, "UNAUTHENTICATED"
        for kind, subject in self.checks:
            if kind == "see":
                code = role.hidden(subject)
                if code is not None:
                    return 404, code
            elif not any(role.owns_any(ref) if privilege is None else role.holds(privilege, ref)
                         for privilege, ref in subject):
                return 403, "PERMISSION_DENIED"
        return 200, None


def use_grants(ref: str) -> tuple:
    """The USE privileges that reaching `ref` needs (on its containers)."""
    grants = []
    for link in chain(ref)[1:]:
        kind, _ = split(link)
        grants.append((link, USE_CATALOG if kind == "catalog" else USE_SCHEMA))
    return tuple(reversed(grants))


def _lift(grants: tuple, to: str) -> tuple:
    """The same privileges granted on container `to` instead of inside it, where `to` takes them."""
    lifted = []
    for ref, privilege in grants:
        if to in chain(ref) and privilege in PRIVILEGES_BY_SECURABLE[split(to)[0]]:
            ref = to
        lifted.append((ref, privilege))
    return tuple(dict.fromkeys(lifted))


def roles_for(op: Op, every_privilege: tuple):
    yield Role("anonymous", anonymous=True)
    yield Role("nobody")
    for number, needed in enumerate((op.needed, *op.alternatives) if op.needed else ()):
        which = f" (set {number + 1})" if op.alternatives else ""
        yield Role(f"exactly the grants{which}", needed, declared="allowed")
        if number == 0:
            yield Role("exactly the grants, through a group", needed, declared="allowed", through_groups=1)
            yield Role("exactly the grants, through a nested group", needed, declared="allowed", through_groups=2)
        for index, (ref, privilege) in enumerate(needed):
            rest = needed[:index] + needed[index + 1:]
            yield Role(f"without {privilege} on {ref}{which}", rest, declared="refused")
        for container in (SCHEMA, CATALOG):
            lifted = _lift(needed, container)
            if lifted != needed:
                yield Role(f"inherited from {container}{which}", lifted, declared="allowed")
    yield Role("every privilege, no ownership", every_privilege)
    if op.owned:
        yield Role(f"owner of {op.owned}", use_grants(op.owned), owns=op.owned, declared="allowed")
        if use_grants(op.owned):
            yield Role(f"owner of {op.owned} without USE", owns=op.owned)
    if op.owned != SCHEMA and op.owned != CATALOG and split(op.owned or METASTORE)[0] in IN_SCHEMA:
        yield Role("owner of the schema", ((CATALOG, USE_CATALOG),), owns=SCHEMA)
    if op.owned != CATALOG:
        yield Role("owner of the catalog", owns=CATALOG)
    yield Role("admin", admin=True, declared="allowed")
