"""How every PostgreSQL connection of ucweb reads a `timestamptz`.

Django reads them with a subclass of psycopg's pure-Python loader (its C loader cannot be
subclassed, and Django asks the loader for its `timezone`), about 15 µs a value: a table's row,
its schema's and its catalog's carry six of them, a Delta commit's answer more. PostgreSQL writes a
timestamptz of a UTC session as ISO 8601 with `+00`, which `datetime.fromisoformat` (C) reads in
about a tenth of the time, into the same aware datetime in `timezone.utc` that Django's loader
makes. Anything else (another session time zone, a BC date, `infinity`) goes to Django's loader as
before."""

from __future__ import annotations

from datetime import datetime, timezone

from django.db.backends.postgresql.psycopg_any import BaseTzLoader, get_adapters_template

_fromisoformat = datetime.fromisoformat


class UtcTimestamptzLoader(BaseTzLoader):
    timezone = timezone.utc

    def load(self, data):
        try:
            value = _fromisoformat(bytes(data).decode())
        except ValueError:
            return super().load(data)
        return value if value.tzinfo is timezone.utc else super().load(data)


def install() -> None:
    """Registers the loader on the adapters every new connection starts from (Django's template
    for USE_TZ with the UTC time zone): connections made before keep Django's. Nothing changes in
    any other configuration."""
    from django.db import connections

    connection = connections["default"]
    if connection.vendor != "postgresql" or connection.timezone is not timezone.utc or connection.timezone_name != "UTC":
        return
    get_adapters_template(True, connection.timezone).register_loader("timestamptz", UtcTimestamptzLoader)
