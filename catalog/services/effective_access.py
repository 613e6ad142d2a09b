"""Who may do what, and why: the governance console's read side of authorization.

Every answer here comes from `authz.Access`, the evaluator the APIs enforce with; this module
only chooses which principals and securables to ask about and words the answers. Grants are
loaded once per report and handed to `Access` objects, so a report costs a few queries whatever
its size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from catalog.choices import PRIVILEGES_BY_SECURABLE, Privilege, SecurableType
from catalog import models
from catalog import authz
from catalog.authz import Access, chain_of, describe, kind_of
from ucweb.errors import InvalidParameter
from ucweb.ids import parse_uuid

ALL_PRIVILEGES = "ALL PRIVILEGES"
# The order privileges are listed in: Privilege's own order.
_ORDER = {value: index for index, value in enumerate(Privilege.values)}

SECURABLE_MODELS: dict[str, type] = {
    SecurableType.METASTORE: models.Metastore,
    SecurableType.CATALOG: models.Catalog,
    SecurableType.SCHEMA: models.Schema,
    SecurableType.TABLE: models.Table,
    SecurableType.VOLUME: models.Volume,
    SecurableType.FUNCTION: models.Function,
    SecurableType.REGISTERED_MODEL: models.RegisteredModel,
    SecurableType.EXTERNAL_LOCATION: models.ExternalLocation,
    SecurableType.CREDENTIAL: models.Credential,
    SecurableType.POLICY: models.Policy,
}
RELATED_FIELDS = {
    models.Schema: ("catalog",),
    models.Table: ("schema__catalog",),
    models.Volume: ("schema__catalog",),
    models.Function: ("schema__catalog",),
    models.RegisteredModel: ("schema__catalog",),
    models.Policy: ("schema__catalog",),
    models.ExternalLocation: ("credential",),
}


def securable_type_of(securable) -> str:
    for securable_type, model in SECURABLE_MODELS.items():
        if isinstance(securable, model):
            return securable_type
    raise InvalidParameter(f"{securable!r} is not a securable.")


def securable_by_id(securable_type: str, securable_id):
    """The row of `securable_type` with this id: a picker's choice, checked against its type."""
    model = SECURABLE_MODELS.get(securable_type)
    if model is None:
        raise InvalidParameter(f"Unknown securable type {securable_type!r}.")
    securable_id = parse_uuid(securable_id, field="securable_id")
    row = model.objects.select_related(*RELATED_FIELDS.get(model, ())).filter(id=securable_id).first()
    if row is None:
        raise InvalidParameter(f"There is no {kind_of_type(securable_type)} with id {securable_id}.")
    return row


def kind_of_type(securable_type: str) -> str:
    return SECURABLE_MODELS[securable_type]._meta.verbose_name


def sorted_privileges(privileges) -> list[str]:
    return sorted(privileges, key=lambda p: _ORDER.get(p, len(_ORDER)))


def _held_by_principal(chain_ids) -> dict[str, dict]:
    """grantee (a principal or a group) → securable id → the privileges granted to it there."""
    rows = models.Grant.objects.filter(securable_id__in=list(chain_ids))
    held: dict[str, dict] = {}
    for name, securable_id, privilege in rows.values_list("principal", "securable_id", "privilege"):
        held.setdefault(name, {}).setdefault(securable_id, set()).add(privilege)
    return held


def _usability(access: Access) -> tuple[bool, str]:
    """Whether the principal can reach the securable at all, as the APIs require: USE CATALOG on
    a catalog and anything in it, USE SCHEMA too on a schema and anything in it."""
    chain = access.chain
    if not isinstance(chain[-1], models.Catalog):
        return True, ""
    if not access.can_use_catalog():
        return False, f"missing USE CATALOG on catalog {describe(chain[-1])}"
    if len(chain) >= 2 and not access.can_use_schema():
        return False, f"missing USE SCHEMA on schema {describe(chain[-2])}"
    return True, ""


@dataclass
class Holding:
    privilege: str
    reason: str


@dataclass
class PrincipalAccess:
    """What one principal holds on one securable, and whether it can use it."""

    principal: str
    kind: str
    holdings: list[Holding] = field(default_factory=list)
    usable: bool = True
    blocked_by: str = ""
    exists: bool = True


def _holdings(access: Access, securable_type: str) -> list[Holding]:
    if access.owns():
        return [Holding(ALL_PRIVILEGES, access.why(ALL_PRIVILEGES) or "")]
    holdings = []
    for privilege in sorted_privileges(PRIVILEGES_BY_SECURABLE.get(securable_type, ())):
        reason = access.why(privilege)
        if reason is not None:
            holdings.append(Holding(privilege, reason))
    return holdings


def on_securable(securable) -> list[PrincipalAccess]:
    """Every principal that holds anything on `securable`: grants on it or inherited from its
    schema and catalog, ownership of it or of a container, and the metastore admins."""
    securable_type = securable_type_of(securable)
    chain = chain_of(securable)
    held = _held_by_principal(s.id for s in chain)
    names = set(held)
    names.update(s.owner for s in chain if getattr(s, "owner", None))
    principals = {p.name: p for p in models.Principal.objects.filter(name__in=names)}
    groups = set(models.Group.objects.filter(name__in=names - set(principals)).values_list("name", flat=True))
    admins = models.Principal.objects.filter(is_metastore_admin=True).exclude(name__in=names)
    principals.update({p.name: p for p in admins})
    names.update(principals)
    answer = []
    for name in sorted(names):
        principal = principals.get(name)
        exists = principal is not None
        if principal is None:  # an owner whose principal row is gone still owns
            principal = models.Principal(name=name)
        access = Access(principal=principal, chain=chain, _held=held.get(name, {}))
        holdings = _holdings(access, securable_type)
        if not holdings:
            continue
        usable, blocked_by = _usability(access)
        kind = principal.kind if exists else "group" if name in groups else "unknown principal"
        answer.append(PrincipalAccess(
            principal=name, kind=kind, holdings=holdings, usable=usable, blocked_by=blocked_by,
            exists=exists or name in groups,
        ))
    # Admins last: they hold everything everywhere and say least about this securable.
    answer.sort(key=lambda row: (row.holdings[0].reason == "metastore admin", row.principal))
    return answer


@dataclass
class Reach:
    securable_type: str
    securable: object
    holdings: list[Holding]
    usable: bool
    blocked_by: str

    @property
    def name(self) -> str:
        return describe(self.securable)


@dataclass
class PrincipalReach:
    principal: models.Principal
    is_admin: bool
    rows: list[Reach]
    truncated: bool


def reach_of(principal: models.Principal, *, limit: int = 500) -> PrincipalReach:
    """What `principal` can reach: every securable it holds a privilege on, directly, through a
    container's grant or ownership, with whether the USE privileges above let it use it."""
    if principal.is_metastore_admin:
        return PrincipalReach(principal=principal, is_admin=True, rows=[], truncated=False)
    held: dict = {}
    via: dict = {}  # (securable id, privilege) → the group it comes through, as Access keeps it
    for securable_id, privilege, grantee in models.Grant.objects.filter(authz.grantees(principal)).values_list(
            "securable_id", "privilege", "principal"):
        held.setdefault(securable_id, set()).add(privilege)
        if grantee == principal.name:
            via[(securable_id, privilege)] = None
        else:
            via.setdefault((securable_id, privilege), grantee)
    name = principal.name
    # The catalogs in which the principal holds or owns anything, at any level.
    catalog_ids = set(models.Catalog.objects.filter(id__in=held).values_list("id", flat=True))
    catalog_ids |= set(models.Catalog.objects.filter(owner=name).values_list("id", flat=True))
    catalog_ids |= set(models.Schema.objects.filter(id__in=held).values_list("catalog_id", flat=True))
    catalog_ids |= set(models.Schema.objects.filter(owner=name).values_list("catalog_id", flat=True))
    for model in (models.Table, models.Volume, models.Function, models.RegisteredModel):
        for ids in (model.objects.filter(id__in=held), model.objects.filter(owner=name)):
            catalog_ids |= set(ids.values_list("schema__catalog_id", flat=True))
    candidates: list = []
    metastore = models.Metastore.objects.first()
    if metastore is not None and metastore.id in held:
        candidates.append(metastore)
    candidates += list(models.Catalog.objects.filter(id__in=catalog_ids).order_by("name"))
    candidates += list(models.Schema.objects.filter(catalog_id__in=catalog_ids).select_related("catalog"))
    for model in (models.Table, models.Volume, models.Function, models.RegisteredModel):
        candidates += list(model.objects.filter(schema__catalog_id__in=catalog_ids)
                           .select_related("schema__catalog")[: limit + 1])
    for model in (models.ExternalLocation, models.Credential):
        candidates += list(model.objects.filter(id__in=held) | model.objects.filter(owner=name))
    rows: list[Reach] = []
    for securable in candidates:
        securable_type = securable_type_of(securable)
        access = Access(principal=principal, chain=chain_of(securable), _held=held, _via=via)
        holdings = _holdings(access, securable_type)
        if not holdings:
            continue
        usable, blocked_by = _usability(access)
        rows.append(Reach(securable_type, securable, holdings, usable, blocked_by))
    truncated = len(rows) > limit
    return PrincipalReach(principal=principal, is_admin=False, rows=rows[:limit], truncated=truncated)


@dataclass
class Step:
    question: str
    allowed: bool
    reason: str


@dataclass
class Decision:
    allowed: bool
    steps: list[Step]

    @property
    def summary(self) -> str:
        failed = [step for step in self.steps if not step.allowed]
        if not failed:
            return "Allowed: " + "; ".join(f"{s.question}: {s.reason}" for s in self.steps)
        return f"Denied: {failed[0].question}: {failed[0].reason}"


def check(*, principal: models.Principal, securable, privilege: str) -> Decision:
    """Can `principal` exercise `privilege` on `securable`? The steps the APIs take: USE CATALOG
    on the catalog (above), USE SCHEMA on the schema (above), then the privilege itself."""
    securable_type = securable_type_of(securable)
    allowed_privileges = PRIVILEGES_BY_SECURABLE.get(securable_type, frozenset())
    if privilege not in allowed_privileges:
        raise InvalidParameter(
            f"{privilege} is not a privilege of a {kind_of(securable)}; "
            f"expected one of {', '.join(sorted_privileges(allowed_privileges))}."
        )
    access = Access.load(principal, securable)  # its own grants and its groups'
    chain = access.chain
    steps = []
    if isinstance(chain[-1], models.Catalog):
        steps.append(_step(access, Privilege.USE_CATALOG, len(chain) - 1))
        if len(chain) >= 2:
            steps.append(_step(access, Privilege.USE_SCHEMA, len(chain) - 2))
    if not any(step.question == f"{privilege} on {kind_of(securable)} {describe(securable)}" for step in steps):
        steps.append(_step(access, privilege, 0))
    return Decision(allowed=all(step.allowed for step in steps), steps=steps)


def _step(access: Access, privilege: str, level: int) -> Step:
    securable = access.chain[level]
    where = f"{kind_of(securable)} {describe(securable)}"
    reason = access.why(privilege, level)
    if reason is not None:
        return Step(f"{privilege} on {where}", True, reason)
    above = [f"{kind_of(s)} {describe(s)}" for s in access.chain[level + 1:]]
    places = where + (" or " + " or ".join(above) if above else "")
    return Step(
        f"{privilege} on {where}", False,
        f"no grant of {privilege} to {access.principal.name} on {places}; not an owner; not a metastore admin",
    )
