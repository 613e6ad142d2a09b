from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from ucweb import client_json

# Text the database cannot store: PostgreSQL refuses NUL in text and jsonb, and a lone UTF-16
# surrogate (`"\ud800"` is valid JSON) cannot be encoded as UTF-8 at all.
_NUL = "\x00"


def _unstorable(text: str) -> bool:
    if _NUL in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_storable(data) -> None:
    """Raises ParseError when a string anywhere in `data` (keys included) holds a NUL character or
    a lone surrogate. Iterative, so that a deep document cannot exhaust the stack."""
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _unstorable(item):
                raise ParseError("JSON strings must not contain NUL characters or unpaired surrogates.")
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


class LenientJSONParser(JSONParser):
    """Accepts JSON whatever the Content-Type says: the Delta and Iceberg clients send bodies with
    `text/plain`, `application/x-www-form-urlencoded` or no type at all.

    Django's DATA_UPLOAD_MAX_MEMORY_SIZE bounds the body before it is parsed (413). Documents
    nested deeper than client_json allows and strings the database cannot store are malformed
    input (400), not server errors."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
            client_json.check_depth(data)
        except (RecursionError, client_json.TooDeep):
            raise ParseError(f"JSON parse error - {client_json.TooDeep()}.") from None
        check_storable(data)
        return data
