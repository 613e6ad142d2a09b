"""References to the securables of the shared data ("<securable type>:<full name>", such as
"volume:shop.sales.raw"), their containers and rows, the grants and ownership that tests give
on them, and a snapshot of every row to tell whether a request changed anything."""

from __future__ import annotations

from catalog.models import (
    Catalog,
    Credential,
    ExternalLocation,
    Function,
    Grant,
    ModelVersion,
    Principal,
    RegisteredModel,
    Schema,
    Table,
    Volume,
)
from catalog.resolve import securable_row
from tests.helpers import grant, rows

USE_CATALOG, USE_SCHEMA = "USE CATALOG", "USE SCHEMA"
LANDING_URL = "s3://lake/landing"
IAM_ROLE = {"role_arn": "arn:aws:iam::123456789012:role/lake"}

# -- references: "<securable type>:<full name>" ------------------------------------------------
METASTORE = "metastore:ucweb"
CATALOG = "catalog:shop"
SCHEMA = "schema:shop.sales"
IN_SCHEMA = {"table": Table, "volume": Volume, "function": Function, "registered_model": RegisteredModel}


def split(ref: str) -> tuple[str, str]:
    kind, name = ref.split(":", 1)
    return kind, name


def chain(ref: str) -> list[str]:
    """`ref` followed by its containers, innermost first (the metastore contains nothing here:
    its grants are not inherited)."""
    kind, name = split(ref)
    parts = name.split(".")
    if kind in IN_SCHEMA:
        return [ref, f"schema:{parts[0]}.{parts[1]}", f"catalog:{parts[0]}"]
    if kind == "schema":
        return [ref, f"catalog:{parts[0]}"]
    return [ref]


def row_of(ref: str):
    kind, name = split(ref)
    parts = name.split(".")
    if kind == "catalog":
        return Catalog.objects.get(name=name)
    if kind == "schema":
        return Schema.objects.get(catalog__name=parts[0], name=parts[1])
    if kind in IN_SCHEMA:
        return IN_SCHEMA[kind].objects.get(schema__catalog__name=parts[0], schema__name=parts[1], name=parts[2])
    if kind == "model_version":
        return ModelVersion.objects.get(model__schema__catalog__name=parts[0], model__schema__name=parts[1],
                                        model__name=parts[2], version=int(parts[3]))
    return {"credential": Credential, "external_location": ExternalLocation}[kind].objects.get(name=name)


def make_owner(principal: str, ref: str) -> None:
    row = row_of(ref)
    type(row).objects.filter(id=row.id).update(owner=principal)


def grant_all(principal: str, grants: tuple) -> None:
    """Grant each (ref, privilege) of `grants` to `principal`, one request per securable."""
    by_ref: dict = {}
    for ref, privilege in grants:
        by_ref.setdefault(ref, []).append(privilege)
    for ref, privileges in by_ref.items():
        kind, name = split(ref)
        grant(principal, kind, name, *privileges)


def grantee_of(principal: str, depth: int) -> str:
    """`principal` itself (depth 0), or a group it is in (1), or a group holding the group it is
    in (2): who the grants of a role are made to."""
    if depth == 0:
        return principal
    from catalog.services import groups

    admin = Principal.objects.get(name="admin")
    names = [f"{principal}-group-{level}" for level in range(depth)]
    for level, name in enumerate(names):
        groups.create_group(caller=admin, name=name)
        members = {"add_principals": [principal]} if level == 0 else {"add_groups": [names[level - 1]]}
        groups.update_members(caller=admin, name=name, **members)
    return names[-1]


def grant_to_dave(privilege: str) -> dict:
    return {"changes": [{"principal": "dave", "add": [privilege], "remove": []}]}


def holds(principal: str, ref: str, privilege: str) -> bool:
    """Whether `principal` holds a grant of `privilege` on the securable of `ref` itself."""
    securable = securable_row(*split(ref))
    return Grant.objects.filter(securable_id=securable.id, principal=principal, privilege=privilege).exists()


def snapshot() -> dict:
    """Every row of the namespace and governance tables but the audit log and tokens."""
    return rows(Principal, Catalog, Schema, Table, Volume, Function, RegisteredModel, ModelVersion, Credential,
                ExternalLocation, Grant)
