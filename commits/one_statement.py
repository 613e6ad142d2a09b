"""The writes that end a ratification, sent as one SQL statement.

A ratified commit changes three rows: the commit's own (INSERT), the table's (UPDATE) and the
audit event's (INSERT). They are one PostgreSQL statement with data-modifying CTEs:

    WITH w0 AS (INSERT INTO commits_deltacommit ...), w1 AS (INSERT INTO catalog_auditevent ...)
    UPDATE catalog_table SET ... WHERE id = ...

inside the transaction that holds the table row's lock, so nothing changes for the guarantees
(the rows are written together or not at all, as before) while the commit pays one round trip
instead of three. The text of each part depends only on the model and the fields written, so it
is written once per process; the values go through the fields as the ORM's insert and update
compilers send them (`pre_save`, then `get_db_prep_save`), so conversions and `auto_now_add` stay
the ORM's. The rows are plain values (no expressions): tests/test_delta_commit_sql.py compares the
statements with the ORM's own."""

from __future__ import annotations

from functools import lru_cache

from django.db import DatabaseError, connection
from django.db.models import Model


@lru_cache(maxsize=64)
def _insert_statement(model: type[Model], vendor: str) -> tuple[str, list]:
    meta = model._meta
    fields = [f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field]
    quote = connection.ops.quote_name
    return (f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))})", fields)


@lru_cache(maxsize=64)
def _update_statement(model: type[Model], field_names: tuple[str, ...], vendor: str) -> tuple[str, list]:
    meta = model._meta
    fields = [meta.get_field(name) for name in field_names]
    quote, table = connection.ops.quote_name, connection.ops.quote_name(meta.db_table)
    return (f"UPDATE {table} SET {', '.join(f'{quote(f.column)} = %s' for f in fields)} "
            f"WHERE {table}.{quote(meta.pk.column)} = %s", fields)


def _values(fields, obj: Model, *, add: bool) -> list:
    values = []
    for field in fields:
        value = field.pre_save(obj, add)
        if hasattr(value, "resolve_expression"):
            raise TypeError(f"{field} holds an expression; save_with writes plain values.")
        values.append(field.get_db_prep_save(value, connection))
    return values


def _insert(obj: Model) -> tuple[str, list]:
    sql, fields = _insert_statement(type(obj), connection.vendor)
    return sql, _values(fields, obj, add=True)


def _update(obj: Model, field_names) -> tuple[str, list]:
    sql, fields = _update_statement(type(obj), tuple(sorted(set(field_names))), connection.vendor)
    return sql, [*_values(fields, obj, add=False), obj._meta.pk.get_db_prep_value(obj.pk, connection, prepared=False)]


def save_with(obj: Model, field_names, inserts: list[Model], updates=()) -> None:
    """`obj.save(update_fields=field_names)`, `row.save()` for each new row of `inserts` and
    `row.save(update_fields=names)` for each `(row, names)` of `updates`, in one statement. The
    new rows get no primary key back (nothing on the commit path reads it). Data-modifying CTEs
    are PostgreSQL's: elsewhere (the embedded SQLite of `make run`) the same rows are written one
    statement each, in the same transaction."""
    if connection.vendor != "postgresql":
        _save_each(obj, field_names, inserts, updates)
        return
    parts, params = [], []
    for index, row in enumerate(inserts):
        sql, values = _insert(row)
        parts.append(f"w{index} AS ({sql})")
        params += values
    for index, (row, names) in enumerate(updates):
        sql, values = _update(row, names)
        parts.append(f"u{index} AS ({sql})")
        params += values
    sql, values = _update(obj, field_names)
    params += values
    statement = (f"WITH {', '.join(parts)} {sql}" if parts else sql)
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        if cursor.rowcount != 1:
            raise DatabaseError(f"{obj._meta.label} {obj.pk} was not updated.")


def _save_each(obj: Model, field_names, inserts: list[Model], updates) -> None:
    for row in inserts:
        row.save(force_insert=True)
    for row, names in updates:
        row.save(update_fields=sorted(set(names)))
    obj.save(update_fields=sorted(set(field_names)))  # a row that is gone raises DatabaseError
