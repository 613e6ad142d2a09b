"""JSON answers written by pydantic's serializer (Rust) instead of the standard library's: a Delta
REST API answer lists every unpublished commit of its table, and json.dumps of it was a fifth of a
`/delta/v1` commit's Python. For the views whose answers are made of JSON's own types (the Delta
APIs: the services build them as dicts, lists, strings and numbers), the same JSON as DRF's
JSONRenderer with this server's settings (compact, UTF-8, U+2028 and U+2029 escaped; only a
float's exponent is spelled `1e20` where json.dumps writes `1e+20`); an answer asked for with an
indent (`Accept: application/json; indent=4`) is DRF's. A part of an answer that the database
wrote as JSON already (RawJSON) is passed on as it is."""

import json
import secrets

from pydantic_core import to_json
from rest_framework.renderers import JSONRenderer
from rest_framework.utils import encoders

_LINE_SEPARATORS = (("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


class RawJSON:
    """JSON text that an answer holds as it is (the database wrote it: catalog.rows.PendingCommits)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class _Encoder(encoders.JSONEncoder):
    def default(self, obj):
        return json.loads(obj.text) if isinstance(obj, RawJSON) else super().default(obj)


class PlainJSONRenderer(JSONRenderer):
    encoder_class = _Encoder  # DRF's, for an answer with an indent

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if self.get_indent(accepted_media_type, renderer_context or {}) is not None:
            return super().render(data, accepted_media_type, renderer_context)
        raw, nonce = [], secrets.token_hex(8)

        def placeholder(value):
            if not isinstance(value, RawJSON):
                raise TypeError(f"{type(value).__name__} is not JSON")
            raw.append(value.text.encode())
            return f"\x00{nonce} {len(raw) - 1}\x00"

        body = to_json(data, fallback=placeholder)
        for index, text in enumerate(raw):  # each written as "\u0000<nonce> <index>\u0000", which no other string is
            body = body.replace(b'"\\u0000%s %d\\u0000"' % (nonce.encode(), index), text, 1)
        if b"\xe2\x80" in body:  # the lead bytes of U+2028 and U+2029 in UTF-8
            for line_separator, escaped in _LINE_SEPARATORS:
                body = body.replace(line_separator, escaped)
        return body
