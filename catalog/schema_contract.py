"""A table's schema contract: the table property `ucweb.schema-contract`.

Its owner (or a holder of MANAGE: setting, changing or removing the property changes the table's
definition, commits.formats.definition) sets `ucweb.schema-contract` to `additive-only`; from then
on every commit of the table, whoever sends it (the owner and a metastore admin too), is ratified
only if its schema keeps every reader of the old one working: new nullable columns, yes; a drop,
a rename, a type change or a tightened nullability, no (commits.formats.schema_evolution says
what breaks, per format). The schemas compared are the table's before the commit and after it,
whatever operation the client declared, so a schema change hidden in a commit that also adds
files is refused with it. A refused commit is a 400 in the protocol's own shape and changes nothing.

A property rather than a Polaris policy, because a property travels with the table in every
protocol: Spark, Sail and pyiceberg set it with their own property syntax (TBLPROPERTIES,
`set_properties`), the Delta log and the Iceberg metadata carry it for every reader to see, and
`loadTable` shows it; and it is checked in the one place every commit of the table passes. A
table has it, or not: it is not inherited from a schema or a catalog.

It applies where the catalog ratifies every change of the schema: catalog-managed Delta tables and
Iceberg tables (their commits, transactions and Polaris notifications). Elsewhere (an external
Delta table, whose log its writers change without the catalog; a view; a Polaris generic table; a
catalog or schema) it would promise what nobody checks: setting it there is refused, as is a value
that is not a known contract, and a contract set in the same commit as a change it forbids (400,
nothing changed)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from catalog.authz import describe
from catalog.choices import TableType
from ucweb import metrics
from ucweb.errors import InvalidParameter

PROPERTY = "ucweb.schema-contract"
ADDITIVE_ONLY = "additive-only"
CONTRACTS = (ADDITIVE_ONLY,)
WHERE = "catalog-managed Delta tables and Iceberg tables"
_LENGTH = len(PROPERTY)


def contract_of(properties: Mapping | None) -> str | None:
    """The contract `properties` hold (the key compared in lower case, as Spark spells keys), or None."""
    for key, value in (properties or {}).items():
        if len(key) == _LENGTH and key.lower() == PROPERTY:  # the length first: every commit asks
            return value
    return None


def require_settable(properties: Mapping | None, *, applies: bool, what: str) -> None:
    """Refuses (400) a contract that `properties` (of a table being created, or of a securable
    whose properties are being set) hold when it is not a known contract, or when `applies` is
    False: `what` names the securable in the refusal ("view unity.default.v")."""
    problem = _problem(contract_of(properties), applies=applies, what=what)
    if problem is not None:
        raise InvalidParameter(problem)


def _problem(contract: str | None, *, applies: bool, what: str) -> str | None:
    if contract is None:
        return None
    if not applies:
        return (f"{PROPERTY} cannot be set on {what}: a schema contract applies to {WHERE}, whose every "
                "schema change the catalog ratifies.")
    if contract not in CONTRACTS:
        return f"{PROPERTY} {contract!r} is not a known schema contract; it may be {', '.join(CONTRACTS)}."
    return None


def enforce(table, before: Mapping | None, after: Mapping | None, breaking: Callable[[], list[str]], *,
            applies: bool, table_format: str) -> None:
    """Refuses (400) a commit of `table` that takes its properties from `before` to `after` when
    the contract it held, or the one it is being given, forbids what the commit does to the schema
    (`breaking()`, asked only when there is a contract: commits.formats.schema_evolution). A
    contract set or changed here must be settable (`require_settable`; `applies`: whether the
    catalog ratifies every schema change of this table). Called before anything is written."""
    held, attached = contract_of(before), contract_of(after)
    if held is None and attached is None:
        return
    what = f"{'view' if table.table_type == TableType.VIEW else 'table'} {describe(table)}"
    problem = _problem(attached, applies=applies, what=what) if attached != held else None
    if problem is not None:
        raise InvalidParameter(problem).about(table)
    changes = breaking()
    if not changes:
        return
    metrics.commit_outcome(table_format, "refused_by_contract")
    if held is not None:
        raise InvalidParameter(
            f"Table {describe(table)} has the schema contract {PROPERTY}={held}: this commit {'; '.join(changes)}. "
            "The commit is refused and nothing changed. The contract allows adding nullable columns; the "
            "table's owner may remove it first, in a commit of its own.").about(table)
    raise InvalidParameter(
        f"The schema contract {PROPERTY}={attached} that this commit sets on table {describe(table)} forbids "
        f"what the same commit does: it {'; '.join(changes)}. Change the schema and set the contract in separate "
        "commits; nothing changed.").about(table)
