"""Validation shared by the services of every securable."""

from catalog.locations import RECORDED_SCHEMES, canonical
from ucweb.errors import InvalidParameter


def validate_comment(value):
    if value is not None and not isinstance(value, str):
        raise InvalidParameter("comment must be a string.")
    return value


def validate_properties(value, *, field: str = "properties") -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidParameter(f"{field} must be an object of string keys and string values.")
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise InvalidParameter(f"{field} must map strings to strings; {key!r} does not.")
    return dict(value)


def validate_storage_url(value, *, field: str):
    """A storage URL or a bare absolute path, in canonical form (see catalog.locations); None
    stays None. Where the location may be placed is decided by catalog.locations too."""
    if value is None:
        return None
    return canonical(value, field=field, schemes=RECORDED_SCHEMES)


def validate_optional_bool(value, *, field: str) -> bool:
    if value in (None, ""):
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "false"}:
        return value.lower() == "true"
    raise InvalidParameter(f"{field} must be true or false.")
