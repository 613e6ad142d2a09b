"""Pagination of the listings (keyset, by name). Lookups by name or id live in catalog.resolve;
the names below them are kept for the modules that still import them from here."""

from __future__ import annotations

import base64
import binascii

from django.conf import settings

from catalog import resolve
from catalog.services.names import quote_part
from ucweb.errors import InvalidParameter

# -- kept for callers not yet moved to catalog.resolve (commits/delta_v1.py) ------------------------
catalog_not_found = resolve.catalog_not_found
get_catalog = resolve.get_catalog
get_schema = resolve.get_schema
get_table = resolve.get_table
get_table_by_full_name = resolve.get_table_by_full_name


def schema_not_found(catalog_name: str, schema_name: str):
    return resolve.schema_not_found(catalog_name, quote_part(schema_name))


def table_not_found(catalog_name: str, schema_name: str, table_name: str):
    return resolve.table_not_found(catalog_name, quote_part(schema_name), table_name)


# -- pagination ---------------------------------------------------------------------------------
def page_size(max_results, *, ceiling: int | None = None) -> int:
    """The spec: > 0 → min(value, server maximum); 0 or absent → server default; < 0 → error."""
    ceiling = ceiling or settings.UCWEB_MAX_PAGE_SIZE
    if max_results in (None, ""):
        return min(settings.UCWEB_DEFAULT_PAGE_SIZE, ceiling)
    try:
        value = int(max_results)
    except (TypeError, ValueError):
        raise InvalidParameter("max_results must be an integer.") from None
    if value < 0:
        raise InvalidParameter("max_results must not be negative.")
    if value == 0:
        return min(settings.UCWEB_DEFAULT_PAGE_SIZE, ceiling)
    return min(value, ceiling)


def encode_page_token(last_name: str) -> str:
    return base64.urlsafe_b64encode(last_name.encode()).decode().rstrip("=")


def decode_page_token(token: str | None) -> str | None:
    """The inverse of `encode_page_token`. Anything that it cannot have produced (characters
    outside the URL-safe base64 alphabet, bytes that are not UTF-8, a NUL) is refused."""
    if not token:
        return None
    try:
        padded = token + "=" * (-len(token) % 4)
        name = base64.b64decode(padded.encode(), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeError, ValueError):
        raise InvalidParameter("Invalid page_token.") from None
    if not name or "\x00" in name:
        raise InvalidParameter("Invalid page_token.")
    return name


def paginate(queryset, *, max_results, page_token, key: str = "name", ceiling: int | None = None):
    """Keyset pagination ordered by `key`: stable under concurrent inserts and deletes."""
    size = page_size(max_results, ceiling=ceiling)
    after = decode_page_token(page_token)
    queryset = queryset.order_by(key)
    if after is not None:
        queryset = queryset.filter(**{f"{key}__gt": after})
    items = list(queryset[: size + 1])
    next_token = encode_page_token(getattr(items[size - 1], key)) if len(items) > size else None
    return items[:size], next_token


def paginate_list(items: list, *, max_results, page_token, key):
    """The same pages over a list computed in memory, sorted by `key(item)` (a string)."""
    size = page_size(max_results)
    after = decode_page_token(page_token)
    ordered = sorted(items, key=key)
    if after is not None:
        ordered = [item for item in ordered if key(item) > after]
    page = ordered[:size]
    next_token = encode_page_token(key(page[-1])) if len(ordered) > size else None
    return page, next_token


def paginate_versions(queryset, *, max_results, page_token, ceiling: int = 50):
    """Keyset pagination of model versions by number."""
    size = page_size(max_results, ceiling=ceiling)
    after = decode_page_token(page_token)
    if after is not None:
        if not (after.isascii() and after.isdigit() and len(after) <= 18):
            raise InvalidParameter("Invalid page_token.")
        queryset = queryset.filter(version__gt=int(after))
    items = list(queryset.order_by("version")[: size + 1])
    next_token = encode_page_token(str(items[size - 1].version)) if len(items) > size else None
    return items[:size], next_token
