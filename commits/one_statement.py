"""The writes that end a ratification, sent as one SQL statement.

A ratified commit changes three rows: the commit's own (INSERT), the table's (UPDATE) and the
audit event's (INSERT). They are one PostgreSQL statement with data-modifying CTEs:

    WITH w0 AS (INSERT INTO commits_deltacommit ...), w1 AS (INSERT INTO catalog_auditevent ...)
    UPDATE catalog_table SET ... WHERE id = ...

inside the transaction that holds the table row's lock, so nothing changes for the guarantees
(the rows are written together or not at all, as before) while the commit pays one round trip
instead of three. The text of each part is written once per process (catalog.statements), with the
values the ORM would send."""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.db.models import Model

from catalog.statements import insert as _insert, update as _update


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
