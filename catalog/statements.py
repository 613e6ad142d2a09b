"""INSERT and UPDATE statements written once per process, for the rows the hot paths write (the
audit event of every request, the rows of a ratified commit: commits.one_statement).

A model's `save()` compiles its statement at every call, which costs more CPU than the database
spends on the row: a third of a refused commit's Python went to the ORM's compilation of its audit
event. The text of each statement depends only on the model and the fields written, so it is
written once; the values go through the fields as the ORM's insert and update compilers send them
(`pre_save`, then `get_db_prep_save`), so conversions and `auto_now_add` stay the ORM's. The rows
hold plain values (no expressions): tests/test_delta_commit_sql.py compares the statements with
the ORM's own."""

from __future__ import annotations

from functools import lru_cache

from django.db import connection, transaction
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
            raise TypeError(f"{field} holds an expression; these statements write plain values.")
        values.append(field.get_db_prep_save(value, connection))
    return values


def insert(obj: Model) -> tuple[str, list]:
    """The INSERT of a new row (without its auto primary key), and its parameters."""
    sql, fields = _insert_statement(type(obj), connection.vendor)
    return sql, _values(fields, obj, add=True)


def update(obj: Model, field_names) -> tuple[str, list]:
    """The UPDATE of `field_names` of a row, by its primary key, and its parameters."""
    sql, fields = _update_statement(type(obj), tuple(sorted(set(field_names))), connection.vendor)
    return sql, [*_values(fields, obj, add=False), obj._meta.pk.get_db_prep_value(obj.pk, connection, prepared=False)]


def insert_all(rows: list[Model]) -> None:
    """`row.save(force_insert=True)` for each new row, in one statement on PostgreSQL (the rows but
    the last as data-modifying CTEs); elsewhere one save each, in one transaction. The rows get no
    primary key back."""
    if connection.vendor != "postgresql":
        if len(rows) == 1:
            rows[0].save(force_insert=True)
            return
        with transaction.atomic(savepoint=False):  # no savepoint: the caller's transaction is theirs too
            for row in rows:
                row.save(force_insert=True)
        return
    parts, params = [], []
    for index, row in enumerate(rows):
        sql, values = insert(row)
        parts.append(f"w{index} AS ({sql})" if index < len(rows) - 1 else sql)
        params += values
    statement = parts[-1] if len(parts) == 1 else f"WITH {', '.join(parts[:-1])} {parts[-1]}"
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
