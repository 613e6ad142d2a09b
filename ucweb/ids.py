"""Ids that clients send, parsed once for every app (the catalog and the commit services)."""

from __future__ import annotations

import uuid

from ucweb.errors import InvalidParameter


def parse_uuid(value, *, field: str) -> uuid.UUID:
    if not isinstance(value, str) or not value:
        raise InvalidParameter(f"{field} is required.")
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidParameter(f"{field} {value!r} is not a valid id.") from None
