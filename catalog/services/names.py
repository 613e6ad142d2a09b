"""Names of securables: what is allowed, and how full names split."""

import re
from urllib.parse import unquote

from ucweb.errors import InvalidParameter

MAX_NAME_LENGTH = 255
# Dots separate the levels of a full name and slashes separate URL segments, so neither may
# appear in a name; nor may white space or control characters.
_FORBIDDEN = re.compile(r"[./\s\x00-\x1f\x7f]")


def validate_name(value, *, field: str = "name") -> str:
    if not isinstance(value, str) or value == "":
        raise InvalidParameter(f"{field} must be a non-empty string.")
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidParameter(f"{field} must be at most {MAX_NAME_LENGTH} characters.")
    if _FORBIDDEN.search(value):
        raise InvalidParameter(
            f"{field} {value!r} is invalid: names may not contain '.', '/', white space or control characters."
        )
    return value


def split_full_name(full_name: str, parts: int, *, what: str) -> list[str]:
    """`unity.default.t` → ['unity', 'default', 't']. Clients send full names percent-encoded
    (`unity%2Edefault%2Et`), sometimes twice; the router has decoded once already. The name is
    decoded further only while it does not have the expected number of parts, so that a name that
    itself holds a `%` (`a%2Eb`, allowed like any other character) is still found."""
    decoded = full_name
    while True:
        pieces = decoded.split(".")
        if len(pieces) == parts and all(pieces):
            break
        again = unquote(decoded)
        if again == decoded:
            break
        decoded = again
    if "\x00" in decoded:
        # Decoding may have produced a NUL (`%2500`): nothing is named that, and the database
        # refuses it in a query.
        raise InvalidParameter(f"Invalid {what} full name {full_name!r}: names may not contain NUL characters.")
    if len(pieces) != parts or any(piece == "" for piece in pieces):
        shape = ".".join(["catalog", "schema", "name"][:parts]) if parts > 1 else "name"
        raise InvalidParameter(f"Invalid {what} full name {full_name!r}: expected {shape}.")
    return pieces
