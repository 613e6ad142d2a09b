"""Pagination: one keyset paginator and one ceiling for every list of every protocol.

A page is the rows after the last key of the previous page, in key order, so it is stable under
concurrent inserts and deletes. The page token is that key, URL-safe base64 encoded. The page size
follows the Unity Catalog spec for `max_results`, and Iceberg's `pageSize` the same way:

    > 0           min(value, the operation's documented maximum, UCWEB_MAX_PAGE_SIZE)
    0 or absent   UCWEB_DEFAULT_PAGE_SIZE (never above either bound)
    < 0           400 INVALID_PARAMETER_VALUE

UCWEB_MAX_PAGE_SIZE is the one ceiling of the server. The documented maxima are those of the
Unity Catalog spec (`SPEC_MAXIMUM`, by the key of the list in the answer); Iceberg documents none.

The Iceberg REST and Polaris lists page only when the client sends `pageToken` (an empty one asks
for the first page); without it they answer the whole list, as the Iceberg spec lets servers do.
"""

from __future__ import annotations

import base64
import binascii

from django.conf import settings

from ucweb.errors import InvalidParameter

MAX_NUMERIC_TOKEN_DIGITS = 18  # a bigint

# The `maximum` of each Unity Catalog list operation's `max_results`, as its spec documents it.
SPEC_MAXIMUM = {
    "catalogs": 1000, "schemas": 1000, "tables": 50, "volumes": 10000, "functions": 1000,
    "registered_models": 50, "model_versions": 50, "credentials": 1000, "external_locations": 1000,
}


def page_size(max_results, *, maximum: int | None = None, field: str = "max_results") -> int:
    ceiling = min(settings.UCWEB_MAX_PAGE_SIZE, maximum or settings.UCWEB_MAX_PAGE_SIZE)
    default = min(settings.UCWEB_DEFAULT_PAGE_SIZE, ceiling)
    if max_results in (None, ""):
        return default
    try:
        value = int(max_results)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{field} must be an integer.") from None
    if value < 0:
        raise InvalidParameter(f"{field} must not be negative.")
    return default if value == 0 else min(value, ceiling)


def encode_page_token(last_key: str) -> str:
    return base64.urlsafe_b64encode(last_key.encode()).decode().rstrip("=")


def decode_page_token(token: str | None) -> str | None:
    """The inverse of `encode_page_token`. Anything that it cannot have produced (characters
    outside the URL-safe base64 alphabet, bytes that are not UTF-8, a NUL) is refused."""
    if not token:
        return None
    try:
        padded = token + "=" * (-len(token) % 4)
        key = base64.b64decode(padded.encode(), altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeError, ValueError):
        raise InvalidParameter("Invalid page_token.") from None
    if not key or "\x00" in key:
        raise InvalidParameter("Invalid page_token.")
    return key


def paginate(queryset, *, max_results, page_token, key: str = "name", numeric: bool = False,
             maximum: int | None = None):
    """One page of `queryset` ordered by `key` (`numeric`: an integer column, such as a model
    version's number), and the token of the next page (None on the last). `maximum`: the
    operation's documented maximum page size, if its spec has one."""
    size = page_size(max_results, maximum=maximum)
    after = decode_page_token(page_token)
    queryset = queryset.order_by(key)
    if after is not None:
        if numeric:
            if not (after.isascii() and after.isdigit() and len(after) <= MAX_NUMERIC_TOKEN_DIGITS):
                raise InvalidParameter("Invalid page_token.")
            after = int(after)
        queryset = queryset.filter(**{f"{key}__gt": after})
    items = list(queryset[: size + 1])
    next_token = encode_page_token(str(_key_of(items[size - 1], key))) if len(items) > size else None
    return items[:size], next_token


def _key_of(item, key: str):
    """The key of a row: a model instance, or a dict of `values()`."""
    return item[key] if isinstance(item, dict) else getattr(item, key)


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


def page_if_asked(queryset, query_params, *, key: str = "name"):
    """The Iceberg REST and Polaris lists: a page when the client sent `pageToken`, else all."""
    if "pageToken" not in query_params:
        return list(queryset.order_by(key)), None
    return paginate(queryset, max_results=query_params.get("pageSize"),
                    page_token=query_params.get("pageToken") or None, key=key)


def paginate_versions(queryset, *, max_results, page_token):
    """Keyset pagination of model versions by number."""
    return paginate(queryset, max_results=max_results, page_token=page_token, key="version", numeric=True,
                    maximum=SPEC_MAXIMUM["model_versions"])
