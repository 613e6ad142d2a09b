"""Names of securables: what is allowed, and how full names are written and split.

A full name joins its parts with dots. Iceberg clients name namespaces and tables `new.db`,
`ta.ble` or `TEST NS`; such a part is written back-quoted, as Spark SQL writes it
(unity.`new.db`.`ta.ble`), so that the full name splits back into the same parts. Every other
part is written as it is, so full names that clients build by joining names with dots (Sail, the
UC SDK) keep working.
"""

import re
from urllib.parse import unquote

from ucweb.errors import InvalidParameter

MAX_NAME_LENGTH = 255
# Control characters (C0, DEL and C1) and the Unicode line and paragraph separators: a name
# holding one would break the lines of logs, audit exports and clients' output (U+0085, U+2028 and
# U+2029 end a line for many readers).
_CONTROL = r"\x00-\x1f\x7f-\x9f\u2028\u2029"
# Dots separate the levels of a full name and slashes separate URL segments, so neither may
# appear in a name; nor may white space or control characters.
_FORBIDDEN = re.compile(rf"[./\s{_CONTROL}]")
# Names created through the Iceberg REST API may also hold dots and spaces (Polaris and Lakekeeper
# accept them); never a slash, a back-quote, another white space or a control character.
_FORBIDDEN_ICEBERG = re.compile(rf"[/`\t\n\r\x0b\x0c{_CONTROL}]")
# A part that must be back-quoted in a full name: only names from the Iceberg API hold these, and
# those never hold a back-quote (a Unity Catalog name may: `a` is a name of its own).
_NEEDS_QUOTES = re.compile(r"[.\s]")


def validate_name(value, *, field: str = "name", iceberg: bool = False) -> str:
    if not isinstance(value, str) or value == "":
        raise InvalidParameter(f"{field} must be a non-empty string.")
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidParameter(f"{field} must be at most {MAX_NAME_LENGTH} characters.")
    if iceberg:
        if _FORBIDDEN_ICEBERG.search(value) or value.strip() == "":
            raise InvalidParameter(
                f"{field} {value!r} is invalid: names may not contain '/', '`', control characters or white "
                "space other than spaces, and may not be blank."
            )
        return value
    if _FORBIDDEN.search(value):
        raise InvalidParameter(
            f"{field} {value!r} is invalid: names may not contain '.', '/', white space or control characters."
        )
    return value


def quote_part(part: str) -> str:
    if _NEEDS_QUOTES.search(part):
        return "`" + part.replace("`", "``") + "`"
    return part


def join_full_name(*parts: str) -> str:
    """('unity', 'new.db', 't') → unity.`new.db`.t"""
    return ".".join(quote_part(part) for part in parts)


def _split(text: str) -> list[str] | None:
    """Splits at the dots outside back-quotes; None when the quotes do not pair up."""
    pieces, current, index, quoted, was_quoted = [], [], 0, False, False
    while index < len(text):
        char = text[index]
        if quoted:
            if char == "`":
                if text[index + 1:index + 2] == "`":
                    current.append("`")
                    index += 1
                else:
                    quoted = False
            else:
                current.append(char)
        elif char == "`":
            if current or was_quoted:
                return None  # a quote in the middle of a part
            quoted = was_quoted = True
        elif char == ".":
            pieces.append("".join(current))
            current, was_quoted = [], False
        else:
            if was_quoted:
                return None  # text after a closing quote
            current.append(char)
        index += 1
    if quoted:
        return None
    pieces.append("".join(current))
    return pieces


def _parts(text: str, parts: int) -> list[str]:
    """Back-quotes quote a part when that is what makes the name split into `parts` parts, or
    when a quoted part holds a dot or a space; otherwise they are characters of a name."""
    plain = text.split(".")
    quoted = _split(text)
    if quoted is not None and len(quoted) == parts and all(quoted):
        if len(plain) != parts or any(_NEEDS_QUOTES.search(part) for part in quoted):
            return quoted
    return plain


def split_full_name(full_name: str, parts: int, *, what: str) -> list[str]:
    """`unity.default.t` → ['unity', 'default', 't']; unity.`new.db`.t → ['unity', 'new.db', 't'].
    Clients send full names percent-encoded (`unity%2Edefault%2Et`), sometimes twice; the router
    has decoded once already. The name is decoded further only while it does not have the
    expected number of parts, so that a name that itself holds a `%` (`a%2Eb`, allowed like any
    other character) is still found."""
    return _split_decoding(full_name, lambda text: _parts(text, parts), lambda count: count == parts,
                           parts, what=what)


def _split_decoding(full_name: str, split, fits, parts: int, *, what: str) -> list[str]:
    """`split` the name, percent-decoding it further while the number of parts does not `fit`."""
    decoded = full_name
    while True:
        pieces = split(decoded)
        if fits(len(pieces)) and all(pieces):
            break
        again = unquote(decoded)
        if again == decoded:
            break
        decoded = again
    if "\x00" in decoded:
        # Decoding may have produced a NUL (`%2500`): nothing is named that, and the database
        # refuses it in a query.
        raise InvalidParameter(f"Invalid {what} full name {full_name!r}: names may not contain NUL characters.")
    if not fits(len(pieces)) or any(piece == "" for piece in pieces):
        shape = ".".join(["catalog", "schema", "name"][:parts]) if parts > 1 else "name"
        raise InvalidParameter(f"Invalid {what} full name {full_name!r}: expected {shape}.")
    return pieces


# -- nested namespaces ------------------------------------------------------------------------------
# A schema may lie in another (an Iceberg namespace ["a", "b"] is schema b in schema a). Its path
# joins its levels as a full name does, so `unity.a.b.t` is table t in namespace a.b, while
# unity.`a.b`.t is table t in the one-level namespace "a.b".
def namespace_path(levels) -> str:
    """['a', 'b'] → a.b; ['new.db'] → `new.db`."""
    return join_full_name(*levels)


# In an Iceberg REST path, a namespace is its levels joined by the unit separator (0x1F).
NAMESPACE_SEPARATOR = "\x1f"


def namespace_levels(namespace) -> list[str]:
    """The levels of an Iceberg namespace given as a path segment or already as its levels."""
    if isinstance(namespace, list):
        return namespace
    return namespace.split(NAMESPACE_SEPARATOR)


def namespace_levels_of(path: str) -> list[str]:
    """The inverse of `namespace_path` (a stored path always splits)."""
    return _split(path) or [path]


def _nested_parts(text: str) -> list[str]:
    quoted = _split(text)
    if quoted is not None and all(quoted) and any(_NEEDS_QUOTES.search(part) for part in quoted):
        return quoted
    return text.split(".")


def split_nested_full_name(full_name: str, parts: int, *, what: str) -> list[str]:
    """As `split_full_name`, for names whose schema may be nested: at least `parts` parts, the
    first the catalog; for a name in a schema the last is the name and those between are the
    schema's levels. `unity.a.b.t` → ['unity', 'a', 'b', 't']."""
    pieces = _split_decoding(full_name, _nested_parts, lambda count: count >= parts, parts, what=what)
    if len(pieces) > parts and any("`" in piece for piece in pieces):
        # Only Iceberg namespaces nest, and their names never hold a back-quote: this is a
        # back-quoted name that does not close where a part ends (unity.`new.db.t).
        raise InvalidParameter(f"Invalid {what} full name {full_name!r}: unbalanced back-quotes.")
    return pieces


def schema_paths(schema_name: str) -> list[str]:
    """The paths a Unity Catalog `schema_name` field may mean, the likelier first: `a.b` is
    namespace a.b, or else the one-level namespace "a.b" (as clients that do not back-quote send
    it); `` `a.b` `` is only the latter."""
    if not isinstance(schema_name, str) or not schema_name:
        return []
    pieces = _nested_parts(schema_name)
    candidates = [namespace_path(pieces)] if all(pieces) else []
    single = quote_part(schema_name)
    if single not in candidates and "`" not in schema_name:
        candidates.append(single)
    return candidates
