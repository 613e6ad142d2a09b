"""The table row a Delta request works on, read with what the request needs in the same round
trip: the caller's grants on the table, its schema and its catalog (for the authorization), and
on request the ratified commits that are not published yet (for the Delta REST API's answer).

A commit's hot path is a handful of queries (tests/query_counts.json); reading the grants in a
second query made the authorization cost as much as the ratification's own row lock. The two
subqueries are written as SQL: the ORM's compilation of nested querysets cost more CPU per
request than the round trips they save."""

from __future__ import annotations

from django.db import connection
from django.db.models import JSONField, QuerySet
from django.db.models.expressions import RawSQL

from catalog.models import Grant, Principal, Schema, Table
from catalog.services import grants
from commits.models import DeltaCommit

COMMIT_FIELDS = ("version", "timestamp", "file_name", "file_size", "file_modification_timestamp")
_TABLE, _SCHEMA = Table._meta.db_table, Schema._meta.db_table
_HELD = (  # "<securable id> <privilege>" for each grant of the caller on the table, schema or catalog
    f'ARRAY(SELECT g.securable_id::text || \' \' || g.privilege FROM {Grant._meta.db_table} g '
    f'WHERE g.principal = %s AND g.securable_id IN ("{_TABLE}"."id", "{_TABLE}"."schema_id", '
    f'(SELECT s.catalog_id FROM {_SCHEMA} s WHERE s.id = "{_TABLE}"."schema_id")))'
)
_PENDING = (  # the commits after latest_published_version, newest first, as one JSON array
    "COALESCE((SELECT jsonb_agg(jsonb_build_object("
    + ", ".join(f"'{name}', c.{name}" for name in COMMIT_FIELDS)
    + f") ORDER BY c.version DESC) FROM {DeltaCommit._meta.db_table} c WHERE c.table_id = \"{_TABLE}\".\"id\" "
    f'AND c.version > COALESCE("{_TABLE}"."latest_published_version", 0) '
    f'AND c.version <= "{_TABLE}"."latest_version"), \'[]\'::jsonb)'
)


def tables(caller: Principal, *, for_update: bool = False, pending: bool = False) -> QuerySet:
    """Tables with their schema and catalog and the caller's privileges on the three. With
    `for_update` the table row (only it) is locked; with `pending`, `table.pending` lists the
    commits after latest_published_version, newest first."""
    queryset = Table.objects.select_related("schema__catalog").order_by()
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    if connection.vendor != "postgresql":  # the subqueries are PostgreSQL's SQL; `access` reads the grants then
        return queryset
    if not caller.is_metastore_admin:
        queryset = queryset.annotate(held=RawSQL(_HELD, (caller.name,)))
    if pending:
        queryset = queryset.annotate(pending=RawSQL(_PENDING, (), output_field=JSONField()))
    return queryset


def access(caller: Principal, table: Table) -> grants.Access:
    """The caller's access to a table read by `tables`: no query, unless the grants did not come
    with the row (another database) or the chain is longer than table, schema and catalog (a
    nested namespace, whose parents' grants count too)."""
    if table.schema.parent_id is not None or (not caller.is_metastore_admin and not hasattr(table, "held")):
        return grants.Access.load(caller, table)
    held: dict = {}
    for item in getattr(table, "held", None) or ():
        securable_id, privilege = item.split(" ", 1)
        held.setdefault(securable_id, set()).add(privilege)
    chain = grants.chain_of(table)
    return grants.Access(principal=caller, chain=chain,
                         _held={s.id: held[str(s.id)] for s in chain if str(s.id) in held})
