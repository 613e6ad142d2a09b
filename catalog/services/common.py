"""Validation shared by the services of every securable."""

from urllib.parse import urlparse

from ucweb.errors import InvalidParameter

STORAGE_SCHEMES = {"file", "s3", "s3a", "gs", "abfs", "abfss"}


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
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidParameter(f"{field} must be a URL.")
    try:
        parsed = urlparse(value)
    except ValueError:  # for example an unterminated IPv6 host: "s3://[bucket"
        raise InvalidParameter(f"{field} {value!r} is not a valid URL.") from None
    if parsed.scheme not in STORAGE_SCHEMES:
        raise InvalidParameter(
            f"{field} {value!r} must be a URL with one of the schemes {', '.join(sorted(STORAGE_SCHEMES))}."
        )
    if parsed.scheme != "file" and not parsed.netloc:
        raise InvalidParameter(f"{field} {value!r} has no bucket or container.")
    return value.rstrip("/")


def validate_optional_bool(value, *, field: str) -> bool:
    if value in (None, ""):
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "false"}:
        return value.lower() == "true"
    raise InvalidParameter(f"{field} must be true or false.")
