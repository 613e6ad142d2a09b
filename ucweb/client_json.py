"""How deeply JSON that clients write may nest: request bodies, and the documents the catalog reads
on a client's behalf (staged Delta commits and their schemaString, Iceberg metadata files named
by register or a notification, policy content, a column's type_json).

Python's decoder recurses once per level and raises RecursionError near the interpreter's limit,
and what reads a document after decoding recurses again, a few frames per level: pyiceberg's
schema models, the Delta type conversions, the JSON encoder that stores a metrics report. Within a
request pyiceberg gives out near 58 nested structs (a struct is three levels of JSON: the type,
its fields, a field), about 175 levels. A document nested deeper than MAX_DEPTH is bad input (400)
wherever it comes from. At 100 levels (32 nested structs in a createTable body) pyiceberg uses
about half of the depth it can take; real schemas stay far below it."""

from __future__ import annotations

import json

MAX_DEPTH = 100


class TooDeep(ValueError):
    def __init__(self):
        super().__init__(f"the document is nested more than {MAX_DEPTH} levels deep")


def loads(text: str | bytes):
    """json.loads, but a document nested deeper than MAX_DEPTH raises TooDeep (a ValueError, as
    json.JSONDecodeError is one)."""
    try:
        document = json.loads(text)
    except RecursionError:
        raise TooDeep() from None
    check_depth(document)
    return document


def check_depth(document) -> None:
    """Raises TooDeep when `document` (decoded JSON) nests more than MAX_DEPTH arrays or objects.
    Iterative, so that it cannot run out of stack itself."""
    pending = [(document, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise TooDeep()
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def check_text(text: str | bytes) -> None:
    """Raises TooDeep when the JSON document `text` nests deeper than MAX_DEPTH. Text that is not
    JSON passes: the parser of whatever it should be says what is wrong with it."""
    try:
        loads(text)
    except TooDeep:
        raise
    except ValueError:
        pass
