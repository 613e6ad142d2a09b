"""The table row a request works on, read with what the request needs in the same round trip:
the table's schema and catalog, the caller's grants on the three (for the authorization), and on
request the table's Iceberg metadata (loadTable) or the ratified Delta commits that are not
published yet (for the Delta REST API's answer).

A commit's hot path is a handful of queries (tests/query_counts.json); reading the grants in a
second query made the authorization cost as much as the ratification's own row lock (the
column is `authz.HELD_GRANTS_SQL`; `authz.access_to_read` makes the caller's access of it). The
statement is SQL written once per process (`_statement`): compiling the equivalent queryset
(select_related, two subqueries, the row lock) cost the ORM more CPU per request than the
database spent answering it. The rows become model instances as the ORM makes them (what
`from_db` makes, with the ORM's conversions of the values on this database). A catalog by name is
read the same way, with the caller's grants on it (`catalog`).

The Iceberg metadata and the Delta commits are models of the commits app, which the catalog does
not import: they are reached through the table's relations (`iceberg`, `delta_commits`)."""

from __future__ import annotations

import re
from functools import lru_cache

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.transaction import TransactionManagementError
from django.db.models import JSONField, Model
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from pydantic_core import from_json

from catalog import authz
from catalog.choices import DataSourceFormat, TableType
from catalog.models import Catalog, Column, Principal, Schema, Table

COMMIT_FIELDS = ("version", "timestamp", "file_name", "file_size", "file_modification_timestamp")
_TABLE, _SCHEMA, _CATALOG = Table._meta.db_table, Schema._meta.db_table, Catalog._meta.db_table
_ICEBERG = Table._meta.get_field("iceberg")  # the one-to-one relation to the Iceberg metadata


def _pending_sql(keys: tuple[tuple[str, str], ...]) -> list[str]:
    """The commits after latest_published_version, newest first, as the text of one JSON array of
    objects (`keys`: each JSON key and the field it holds), and how many they are."""
    commits = Table._meta.get_field("delta_commits").related_model._meta.db_table
    if not all(re.fullmatch(r"[a-z_-]+", key) and field in COMMIT_FIELDS for key, field in keys):
        raise ValueError(f"Not keys of commit fields: {keys!r}")
    where = (f"FROM {commits} c WHERE c.table_id = \"{_TABLE}\".\"id\" "
             f'AND c.version > COALESCE("{_TABLE}"."latest_published_version", 0) '
             f'AND c.version <= "{_TABLE}"."latest_version"')
    return [("COALESCE((SELECT json_agg(json_build_object(" + ", ".join(f"'{key}', c.{field}" for key, field in keys)
             + f") ORDER BY c.version DESC) {where}), '[]'::json)::text"),
            f"(SELECT count(*) {where})"]


class PendingCommits:
    """A table's commits after its latest_published_version as `tables(pending=...)` read them:
    the JSON text of their array, newest first, and how many they are. A table's unpublished
    commits can be hundreds, and an answer that lists them passes the text on as it is
    (ucweb.renderers.RawJSON) instead of parsing and writing it again."""

    __slots__ = ("text", "count")

    def __init__(self, text: str, count: int):
        self.text, self.count = text, count

    def whole(self, table: Table) -> bool:
        """Whether they are every version after the row's latest_published_version up to its
        latest_version. A row read after waiting for its lock is the newest one, while the commits
        read in the same statement are those of the statement's start: the versions ratified
        meanwhile are then missing (versions are unique, so the count says it)."""
        return table.latest_version is not None and self.count == (
            table.latest_version - (table.latest_published_version or 0))


def _ratified_sql() -> str:
    """Whether the table holds a ratified commit of a version and file name (the parameters): a
    proposal of a version taken already is a retry of that commit (answered 200) or a lost race."""
    commits = Table._meta.get_field("delta_commits").related_model._meta.db_table
    return (f"EXISTS(SELECT 1 FROM {commits} r WHERE r.table_id = \"{_TABLE}\".\"id\" "
            "AND r.version = %s AND r.file_name = %s)")


def _commits_sql() -> str:
    """The ratified commits from a version (the first parameter) to the latest version or a last
    version (the second), whichever is lower, oldest first, as one JSON array."""
    commits = Table._meta.get_field("delta_commits").related_model._meta.db_table
    return ("COALESCE((SELECT jsonb_agg(jsonb_build_object("
            + ", ".join(f"'{name}', c.{name}" for name in COMMIT_FIELDS)
            + f") ORDER BY c.version) FROM {commits} c WHERE c.table_id = \"{_TABLE}\".\"id\" "
            f'AND c.version >= %s AND c.version <= LEAST("{_TABLE}"."latest_version", %s)), \'[]\'::jsonb)')


def _columns_sql() -> str:
    """The table's columns, ordered by position, as one JSON array of arrays (each the values of
    Column's concrete fields, in their order)."""
    columns = Column._meta.db_table
    values = ", ".join(f'k."{field.column}"' for field in Column._meta.concrete_fields)
    return (f"COALESCE((SELECT jsonb_agg(jsonb_build_array({values}) ORDER BY k.position) FROM {columns} k "
            f'WHERE k."{Column.table.field.column}" = "{_TABLE}"."id"), \'[]\'::jsonb)')


_JOINED = (Table, Schema, Catalog)  # each row: the table, its schema, the schema's catalog
BY_ID = f'"{_TABLE}"."id" = %s'
# A table by id, at a latest_version: locked (`for_update`), a row whose latest_version moved while
# the lock was awaited is not returned (PostgreSQL checks the condition again on the row's newest
# version) and is not locked, so a commit that lost the race leaves the lock's queue at once. Both
# take their id through `table_id`.
BY_ID_AT_VERSION = f'"{_TABLE}"."id" = %s AND "{_TABLE}"."latest_version" = %s'


@lru_cache(maxsize=16)
def by_name(paths: int) -> str:
    """The condition on a catalog name, one of `paths` schema paths and a table name."""
    return (f'"{_CATALOG}"."name" = %s AND "{_SCHEMA}"."path" IN ({", ".join(["%s"] * paths)}) '
            f'AND "{_TABLE}"."name" = %s')


# Iceberg tables, not views (commits.engine locks only those: a view named in a transaction is
# not one of its tables, and must not be locked by it).
_ICEBERG_TABLES = (f'"{_TABLE}"."data_source_format" = \'{DataSourceFormat.ICEBERG}\' '
                   f'AND "{_TABLE}"."table_type" <> \'{TableType.VIEW}\'')


@lru_cache(maxsize=64)
def by_names(count: int, *, iceberg_tables: bool = False) -> str:
    """The condition on a catalog name and `count` (schema path, table name) pairs; with
    `iceberg_tables`, only Iceberg tables (not views) match."""
    pair = f'("{_SCHEMA}"."path" = %s AND "{_TABLE}"."name" = %s)'
    condition = f'"{_CATALOG}"."name" = %s AND ({" OR ".join([pair] * count)})'
    return f"{condition} AND {_ICEBERG_TABLES}" if iceberg_tables else condition


@lru_cache(maxsize=64)
def by_ids(count: int) -> str:
    """The condition on `count` table ids (a multi-table Delta transaction locks its tables by it,
    in the order of their ids as every locking read here does)."""
    return f'"{_TABLE}"."id" IN ({", ".join(["%s"] * count)})'


def _is_condition(where: str) -> bool:
    """`where` is one of this module's conditions: it is part of the statement's cache key and of
    its SQL."""
    placeholders = where.count("%s")
    if where in (BY_ID, BY_ID_AT_VERSION) or where == by_name(placeholders - 2) or where == by_ids(placeholders):
        return True
    pairs = placeholders // 2
    return placeholders % 2 == 1 and where in (by_names(pairs), by_names(pairs, iceberg_tables=True))


def _converters_of(column) -> list:
    return connection.ops.get_db_converters(column) + column.get_db_converters(connection)


def _converted_columns(model: type[Model], alias: str) -> tuple[tuple[int, object], ...]:
    """Each field of `model` whose stored value the ORM converts on this database: its index and
    its column (what the query compiler converts). The same object for the same model, alias and
    database, for the life of the process (`_conversions` keeps what it found by it)."""
    return _converted_columns_on(model, alias, connection.vendor)


@lru_cache(maxsize=None)
def _converted_columns_on(model: type[Model], alias: str, vendor: str) -> tuple[tuple[int, object], ...]:
    found = []
    for index, field in enumerate(model._meta.concrete_fields):
        column = field.get_col(alias)
        if _converters_of(column):
            found.append((index, column))
    return tuple(found)


def _conversions(columns: tuple[tuple[int, object], ...]) -> list[tuple[int, list]]:
    """The converters of each column on this thread's connection, as the compiler asks for them
    (SQLite's are methods of the connection that made them, and each thread has a connection of
    its own), once per connection: asking again at each query cost a commit 0.3 ms."""
    wrapper = connections[DEFAULT_DB_ALIAS]
    known = wrapper.__dict__.setdefault("_ucweb_row_conversions", {})
    found = known.get(id(columns))  # `columns` lives as long as the process (_converted_columns_on)
    if found is None:
        found = known[id(columns)] = [(index, [(converter, column) for converter in _converters_of(column)])
                                      for index, column in columns]
    return found


@lru_cache(maxsize=64)
def _statement(vendor: str, where: str, for_update: bool, held: bool, pending: tuple | None, iceberg: bool,
               ratified: bool = False, columns_too: bool = False, commits: bool = False):
    """The SELECT of tables with their schema and catalog (and the extra columns asked for), and
    the conversions of its values, for `vendor`'s database."""
    quote = connection.ops.quote_name
    joined = [*_JOINED, _ICEBERG.related_model] if iceberg else _JOINED
    columns = [f"{quote(model._meta.db_table)}.{quote(field.column)}"
               for model in joined for field in model._meta.concrete_fields]
    if held:
        columns.append(authz.HELD_GRANTS_SQL)
    if pending:
        columns += _pending_sql(pending)
    if ratified:
        columns.append(_ratified_sql())
    if columns_too:
        columns.append(_columns_sql())
    if commits:
        columns.append(_commits_sql())
    sql = (f"SELECT {', '.join(columns)} FROM {quote(_TABLE)} "
           f"INNER JOIN {quote(_SCHEMA)} ON {quote(_SCHEMA)}.{quote('id')} = {quote(_TABLE)}.{quote('schema_id')} "
           f"INNER JOIN {quote(_CATALOG)} ON {quote(_CATALOG)}.{quote('id')} = {quote(_SCHEMA)}.{quote('catalog_id')} ")
    if iceberg:
        # Locked, the metadata row is locked with the table's (an outer join's row cannot be)
        metadata = quote(_ICEBERG.related_model._meta.db_table)
        sql += (f"{'INNER' if for_update else 'LEFT OUTER'} JOIN {metadata} ON "
                f"{metadata}.{quote(_ICEBERG.field.column)} = {quote(_TABLE)}.{quote('id')} ")
    # A dropped table is missing for every request (catalog.services.dropped reads it itself)
    sql += f"WHERE ({where}) AND {quote(_TABLE)}.{quote('dropped_at')} IS NULL ORDER BY {quote(_TABLE)}.{quote('id')}"
    if for_update and connection.features.has_select_for_update:
        locked = quote(_TABLE) + (f", {metadata}" if iceberg else "")
        sql += f" FOR UPDATE OF {locked}" if connection.features.has_select_for_update_of else " FOR UPDATE"
    converted = [_converted_columns(model, model._meta.db_table) for model in joined]
    json_converters = JSONField().get_db_converters(connection)
    return sql, joined, converted, json_converters


def _instance(model: type[Model], values: list, conversions) -> Model:
    for index, converters in conversions:
        value = values[index]
        for converter, column in converters:
            value = converter(value, column, connection)
        values[index] = value
    if _own_from_db(model) or pre_init.has_listeners(model) or post_init.has_listeners(model):
        return model.from_db(connection.alias, _attnames(model), values)
    # What Model.from_db makes, without Model.__init__'s signals and walk over the fields (it cost
    # more than the statement's own execution, for loadTable's four rows): the values of every
    # concrete field in the instance's __dict__, as __init__ leaves them
    instance = model.__new__(model)
    instance._state = ModelState()
    instance._state.adding, instance._state.db = False, connection.alias
    instance.__dict__.update(zip(_attnames(model), values))
    return instance


@lru_cache(maxsize=None)
def _own_from_db(model: type[Model]) -> bool:
    """Whether `model` makes its instances from rows its own way (Schema remembers its path)."""
    return model.from_db.__func__ is not Model.from_db.__func__


@lru_cache(maxsize=None)
def _attnames(model: type[Model]) -> tuple[str, ...]:
    return tuple(field.attname for field in model._meta.concrete_fields)


def tables(caller: Principal, where: str, params: list, *, for_update: bool = False,
           pending: tuple[tuple[str, str], ...] | None = None, iceberg: bool = False,
           ratified: tuple[int, str] | None = None,
           columns: bool = False, commits: tuple[int, int] | None = None) -> list[Table]:
    """The tables matching `where` (BY_ID, by_ids(...), by_name(...) or by_names(...), with its params), in
    the order of their ids, each with its schema and catalog and the caller's privileges on the
    three. With `for_update` the table rows (only they) are locked, in that order; with `pending`
    (each JSON key and the commit field it holds), `table.pending` holds the commits after
    latest_published_version (PendingCommits); with
    `iceberg`, `table.iceberg` is the table's Iceberg metadata, read in the same statement (absent:
    the table has none); with `ratified` (a version and a file name), `table.ratified` is
    (version, file name, whether the table holds that ratified commit), what tells a proposal of a
    taken version from a retry (commits.ratification); with `columns`, the table's columns are
    read too, and kept where `read_columns` keeps them; with `commits` (a first and a last
    version), `table.ratified_commits` lists the ratified commits between them, but none past the
    latest version, oldest first. Locked, an Iceberg read locks the metadata rows too, and reads
    only the tables that have one: PostgreSQL hands a `SELECT ... FOR UPDATE` that waited for another
    transaction the newest version of the rows it locks, but the rows it joins without locking as
    they were when it began (so a locked read that may have waited takes `columns` only where the
    columns cannot change without the row: commits.delta_v1.update). The grants, commits and
    columns are PostgreSQL's SQL: elsewhere `authz.access_to_read` reads the grants itself, and the
    commits and columns are read when needed."""
    if not _is_condition(where):
        raise ValueError(f"Not a condition of catalog.rows: {where!r}")
    if for_update and connection.features.has_select_for_update and connection.get_autocommit():
        raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
    postgresql = connection.vendor == "postgresql"
    held = postgresql and not caller.is_metastore_admin
    pending, columns = (pending or None) if postgresql else None, postgresql and columns
    commits = commits if postgresql else None
    sql, joined, converted, json_converters = _statement(connection.vendor, where, for_update, held, pending,
                                                            iceberg, ratified is not None, columns, commits is not None)
    column_conversions = _conversions(_converted_columns(Column, Column._meta.db_table)) if columns else None
    conversions = [_conversions(model_columns) for model_columns in converted]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*(authz.held_grants_params(caller) if held else ()), *(ratified or ()), *(commits or ()),
                             *params])
        found = cursor.fetchall()
    result = []
    for row in found:
        values, start, parts = list(row), 0, []
        for model, converters in zip(joined, conversions):
            size = len(model._meta.concrete_fields)
            part = values[start:start + size]
            # A LEFT JOIN that found nothing: the primary key (the table's id) is NULL
            parts.append(None if part[0] is None else _instance(model, part, converters))
            start += size
        table, schema, catalog = parts[:3]
        Schema.catalog.field.set_cached_value(schema, catalog)
        Table.schema.field.set_cached_value(table, schema)
        if iceberg:
            _ICEBERG.set_cached_value(table, parts[3])  # None: `table.iceberg` raises, as select_related leaves it
            if parts[3] is not None:
                _ICEBERG.field.set_cached_value(parts[3], table)
        extra = iter(values[start:])
        if held:
            setattr(table, authz.HELD_GRANTS, next(extra))
        if pending:
            table.pending = PendingCommits(next(extra), next(extra))
        if ratified is not None:
            table.ratified = (*ratified, bool(next(extra)))
        if columns:
            _keep_columns(table, [_column(column_values, table, column_conversions)
                                      for column_values in _json(next(extra), json_converters)])
        if commits is not None:
            table.ratified_commits = _json(next(extra), json_converters)
        result.append(table)
    return result


def table_id(value) -> object:
    """A table id as the BY_ID condition takes it on this database."""
    return Table._meta.pk.get_db_prep_value(value, connection, prepared=False)


@lru_cache(maxsize=8)
def _columns_statement(vendor: str):
    quote = connection.ops.quote_name
    table = quote(Column._meta.db_table)
    columns = ", ".join(f"{table}.{quote(field.column)}" for field in Column._meta.concrete_fields)
    column = quote(Column.table.field.column)
    return (f"SELECT {columns} FROM {table} WHERE {table}.{column} = %s ORDER BY {table}.{quote('position')}",
            _converted_columns(Column, Column._meta.db_table))


def _json(value, converters):
    """A jsonb column's value (this database hands it over as text, as JSONField reads it), parsed
    by pydantic's parser, several times faster than json.loads on a long list of commits."""
    if isinstance(value, str | bytes):
        return from_json(value)
    for converter in converters:
        value = converter(value, None, connection)
    return value


_TABLE_ID_INDEX = [field.attname for field in Column._meta.concrete_fields].index(Column.table.field.attname)


def _column(values: list, table: Table, conversions) -> Column:
    """A Column of `table` from its values as `_columns_sql` hands them over."""
    values[_TABLE_ID_INDEX] = table.pk
    return _instance(Column, values, conversions)


def read_columns(table: Table) -> None:
    """Reads the table's columns (one query, no compilation) and keeps them with the table, where
    `columns_of` finds them."""
    sql, converted = _columns_statement(connection.vendor)
    conversions = _conversions(converted)
    with connection.cursor() as cursor:
        cursor.execute(sql, [table_id(table.pk)])
        found = [_instance(Column, list(row), conversions) for row in cursor.fetchall()]
    _keep_columns(table, found)


# Where a table's columns read with it are kept: a list, not the queryset prefetch_related leaves
# (making that queryset, a related manager's filtered clone, cost more than reading the columns)
_READ_COLUMNS = "_columns_read"


def columns_of(table: Table) -> list[Column]:
    """The table's columns by position: those read with it (`tables(columns=True)`,
    `read_columns`), else the database's (or what `prefetch_related("columns")` left)."""
    found = table.__dict__.get(_READ_COLUMNS)
    return found if found is not None else list(table.columns.all())


def has_columns(table: Table) -> bool:
    """Whether the table's columns were read with it (`columns`) or by `read_columns`."""
    return _READ_COLUMNS in table.__dict__


def forget_columns(table: Table) -> None:
    """After the table's columns changed: `columns_of` reads them again."""
    table.__dict__.pop(_READ_COLUMNS, None)
    table._prefetched_objects_cache = {}


def _keep_columns(table: Table, found: list[Column]) -> None:
    for column in found:
        Column.table.field.set_cached_value(column, table)
    table.__dict__[_READ_COLUMNS] = found


@lru_cache(maxsize=8)
def _catalog_statement(vendor: str, held: bool):
    quote = connection.ops.quote_name
    table = quote(_CATALOG)
    columns = [f"{table}.{quote(field.column)}" for field in Catalog._meta.concrete_fields]
    if held:
        columns.append(authz.CATALOG_HELD_GRANTS_SQL)
    return f"SELECT {', '.join(columns)} FROM {table} WHERE {table}.{quote('name')} = %s"


def catalog(caller: Principal, name: str) -> Catalog | None:
    """The catalog named `name`, with the caller's grants on it on PostgreSQL (for
    `authz.access_to_read`), in one statement written once per process; None when there is none."""
    held = connection.vendor == "postgresql" and not caller.is_metastore_admin
    sql = _catalog_statement(connection.vendor, held)
    conversions = _conversions(_converted_columns(Catalog, _CATALOG))
    with connection.cursor() as cursor:
        cursor.execute(sql, [*authz.held_grants_params(caller), name] if held else [name])
        row = cursor.fetchone()
    if row is None:
        return None
    size = len(Catalog._meta.concrete_fields)
    found = _instance(Catalog, list(row[:size]), conversions)
    if held:
        setattr(found, authz.HELD_GRANTS, row[size])
    return found
