"""The table row a Delta request works on, read with what the request needs in the same round
trip: the caller's grants on the table, its schema and its catalog (for the authorization), and
on request the ratified commits that are not published yet (for the Delta REST API's answer).

A commit's hot path is a handful of queries (tests/query_counts.json); reading the grants in a
second query made the authorization cost as much as the ratification's own row lock."""

from __future__ import annotations

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import F, OuterRef, QuerySet
from django.db.models.functions import Coalesce, JSONObject

from catalog.models import Grant, Principal, Table
from catalog.services import grants
from commits.models import DeltaCommit

_CHAIN = (("held_on_table", "id"), ("held_on_schema", "schema_id"), ("held_on_catalog", "schema__catalog_id"))
COMMIT_FIELDS = ("version", "timestamp", "file_name", "file_size", "file_modification_timestamp")


def tables(caller: Principal, *, for_update: bool = False, pending: bool = False) -> QuerySet:
    """Tables with their schema and catalog and the caller's privileges on the three. With
    `for_update` the table row (only it) is locked; with `pending`, `table.pending` lists the
    commits after latest_published_version, newest first."""
    queryset = Table.objects.select_related("schema__catalog")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    if not caller.is_metastore_admin:
        queryset = queryset.annotate(**{
            name: ArraySubquery(Grant.objects.filter(principal=caller.name, securable_id=OuterRef(column))
                                .values("privilege"))
            for name, column in _CHAIN
        })
    if pending:
        rows = DeltaCommit.objects.filter(
            table_id=OuterRef("id"), version__gt=Coalesce(OuterRef("latest_published_version"), 0),
            version__lte=OuterRef("latest_version"),
        ).order_by("-version").values(row=JSONObject(**{name: F(name) for name in COMMIT_FIELDS}))
        queryset = queryset.annotate(pending=ArraySubquery(rows))
    return queryset


def access(caller: Principal, table: Table) -> grants.Access:
    """The caller's access to a table read by `tables` (no query)."""
    chain = grants.chain_of(table)
    held = {}
    if not caller.is_metastore_admin:
        for securable, (name, _) in zip(chain, _CHAIN):
            privileges = set(getattr(table, name) or ())
            if privileges:
                held[securable.id] = privileges
    return grants.Access(principal=caller, chain=chain, _held=held)
