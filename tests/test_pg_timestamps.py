"""A timestamptz reads the same through ucweb's loader (ucweb.pg_timestamps) as through Django's,
for the values a UTC session writes and for the ones it hands back to Django's loader."""

from datetime import timezone

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader

pytestmark = pytest.mark.django_db

VALUES = ("2026-12-02 03:53:17.123456+00", "2026-12-02 03:53:17+00", "0001-01-01 00:00:00+00",
          "1900-06-30 23:59:59.5+00", "9999-12-31 23:59:59.999999+00", "2000-01-01 12:00:00+05:30")


def _select(values) -> str:
    return "SELECT " + ", ".join(f"'{value}'::timestamptz" for value in values)


SQL = _select(VALUES)


class DjangosLoader(BaseTzLoader):
    timezone = timezone.utc


def _read(sql: str, loader=None) -> tuple:
    with connection.cursor() as cursor:
        if loader is not None:
            cursor.cursor.adapters.register_loader("timestamptz", loader)
        cursor.execute(sql)
        return cursor.fetchone()


def _postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("the loader is PostgreSQL's (psycopg)")
    connection.ensure_connection()


def test_a_new_connection_reads_timestamps_with_the_fast_loader():
    _postgresql()
    from psycopg.pq import Format

    from django.db.backends.postgresql.base import TIMESTAMPTZ_OID

    from ucweb.pg_timestamps import UtcTimestamptzLoader

    assert connection.connection.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT) is UtcTimestamptzLoader


def test_timestamps_read_as_djangos_loader_reads_them():
    _postgresql()
    ours, djangos = _read(SQL), _read(SQL, DjangosLoader)
    assert ours == djangos
    assert [value.tzinfo for value in ours] == [timezone.utc] * len(VALUES)
    assert [value.isoformat() for value in ours] == [value.isoformat() for value in djangos]


def test_values_that_are_not_a_utc_sessions_iso_text_go_to_djangos_loader():
    """A BC date, and another session time zone's offsets, as Django's loader reads them (or
    refuses them: a BC date is no Python datetime)."""
    _postgresql()
    from django.db import transaction

    in_range = _select(value for value in VALUES if not value.startswith("9999"))  # past year 9999 there
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL TIME ZONE 'Asia/Kolkata'")
        ours, djangos = _read(in_range), _read(in_range, DjangosLoader)
    assert ours == djangos
    assert {value.tzinfo for value in ours} == {timezone.utc}
    for loader in (None, DjangosLoader):
        with pytest.raises(Exception) as refused:
            _read("SELECT '0044-03-15 12:00:00+00 BC'::timestamptz", loader)
        assert "BC" in str(refused.value) or "year" in str(refused.value)
