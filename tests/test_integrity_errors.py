"""Which database integrity errors are a lost race (409 ABORTED, nothing changed) and which stay a
server error: only a foreign key or unique violation is a race the services could not check first."""

import sqlite3

import pytest
from django.db import IntegrityError

from ucweb import errors


class Violation(Exception):
    def __init__(self, sqlstate):
        super().__init__(f"violation {sqlstate}")
        self.sqlstate = sqlstate


def integrity_error(cause) -> IntegrityError:
    error = IntegrityError(str(cause))
    error.__cause__ = cause
    return error


@pytest.mark.parametrize("cause", [Violation("23503"), Violation("23505"),
                                   sqlite3.IntegrityError("FOREIGN KEY constraint failed"),
                                   sqlite3.IntegrityError("UNIQUE constraint failed: catalog_table.name")])
def test_a_foreign_key_or_unique_violation_is_a_concurrent_change(cause):
    translated = errors.translate(integrity_error(cause))
    assert isinstance(translated, errors.ConcurrentChange)
    assert translated.status == 409 and translated.error_code == "ABORTED"


@pytest.mark.parametrize("cause", [Violation("23502"), Violation("23514"),
                                   sqlite3.IntegrityError("NOT NULL constraint failed: catalog_table.name")])
def test_any_other_integrity_error_stays_a_server_error(cause):
    assert errors.translate(integrity_error(cause)) is None
