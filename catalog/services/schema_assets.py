"""What volumes, functions and registered models share: they live in a schema, reaching them needs
USE CATALOG and USE SCHEMA, and their managed storage sits under the schema's managed location."""

from __future__ import annotations


from catalog import authz, locations, resolve
from catalog.models import Principal
from catalog.names import validate_name
from ucweb.errors import InvalidParameter

MAX_COMMENT_LENGTH = 65536


def schema_access(caller: Principal, catalog_name, schema_name):
    """The schema and the caller's access to it; USE CATALOG and USE SCHEMA are required."""
    validate_name(catalog_name, field="catalog_name")
    validate_name(schema_name, field="schema_name")
    return resolve.schema(caller, catalog_name, schema_name)


def visible_in_schema(queryset, *, caller: Principal, catalog_name, schema_name):
    """The rows of `queryset` in one schema that the caller may see (catalog.authz)."""
    schema, access = schema_access(caller, catalog_name, schema_name)
    return authz.visible(queryset.filter(schema=schema).select_related("schema__catalog"), caller, access=access)


def managed_location(schema, kind: str, securable_id) -> str:
    """`<root>/<kind>/<id>` under the schema's managed location, else the catalog's, else the
    server's storage root."""
    return locations.managed_location(schema, kind, securable_id)


def validate_long_comment(value):
    """Comments of volumes, functions and models: a string of at most 64 KiB; an empty string
    clears the comment (the spec's minimum length is 1)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParameter("comment must be a string.")
    if len(value) > MAX_COMMENT_LENGTH:
        raise InvalidParameter(f"comment must be at most {MAX_COMMENT_LENGTH} characters.")
    return value or None


def validate_optional_string(value, *, field: str, max_length: int | None = None):
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParameter(f"{field} must be a string.")
    if max_length is not None and len(value) > max_length:
        raise InvalidParameter(f"{field} must be at most {max_length} characters.")
    return value


def validate_required_string(value, *, field: str, max_length: int | None = None) -> str:
    if not isinstance(value, str) or value == "":
        raise InvalidParameter(f"{field} is required and must be a non-empty string.")
    return validate_optional_string(value, field=field, max_length=max_length)


def reject_nul(value, *, field: str):
    """PostgreSQL refuses NUL in text and jsonb; nothing stored may hold one."""
    if isinstance(value, str) and "\x00" in value:
        raise InvalidParameter(f"{field} must not contain NUL characters.")
    if isinstance(value, dict):
        for key, item in value.items():
            reject_nul(key, field=field)
            reject_nul(item, field=field)
    if isinstance(value, list):
        for item in value:
            reject_nul(item, field=field)
    return value
