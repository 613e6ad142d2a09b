"""The writes that end a ratification, sent as one SQL statement.

A ratified commit changes three rows: the commit's own (INSERT), the table's (UPDATE) and the
audit event's (INSERT). They are one PostgreSQL statement with data-modifying CTEs:

    WITH w0 AS (INSERT INTO commits_deltacommit ...), w1 AS (INSERT INTO catalog_auditevent ...)
    UPDATE catalog_table SET ... WHERE id = ...

inside the transaction that holds the table row's lock, so nothing changes for the guarantees
(the rows are written together or not at all, as before) while the commit pays one round trip
instead of three. The SQL is Django's own (its insert and update compilers), so field
conversions and `auto_now_add` stay the ORM's."""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.db.models import Model, Q
from django.db.models.sql import InsertQuery, UpdateQuery


def _insert(obj: Model) -> tuple[str, list]:
    meta = obj._meta
    fields = [f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field]
    query = InsertQuery(type(obj))
    query.insert_values(fields, [obj])
    [(sql, params)] = query.get_compiler(connection=connection).as_sql()
    return sql, list(params)


def _update(obj: Model, field_names) -> tuple[str, list]:
    meta = obj._meta
    query = UpdateQuery(type(obj))
    query.add_update_fields([(field, None, field.pre_save(obj, False))
                             for field in (meta.get_field(name) for name in field_names)])
    query.add_q(Q(pk=obj.pk))
    sql, params = query.get_compiler(connection=connection).as_sql()
    return sql, list(params)


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
        sql, values = _update(row, sorted(set(names)))
        parts.append(f"u{index} AS ({sql})")
        params += values
    sql, values = _update(obj, sorted(set(field_names)))
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
