"""JSON answers written by pydantic's serializer (Rust) instead of the standard library's: a Delta
REST API answer lists every unpublished commit of its table, and json.dumps of it was a fifth of a
`/delta/v1` commit's Python. For the views whose answers are made of JSON's own types (the Delta
APIs: the services build them as dicts, lists, strings and numbers), the same JSON as DRF's
JSONRenderer with this server's settings (compact, UTF-8, U+2028 and U+2029 escaped; only a
float's exponent is spelled `1e20` where json.dumps writes `1e+20`); an answer asked for with an
indent (`Accept: application/json; indent=4`) is DRF's."""

from pydantic_core import to_json
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer

_LINE_SEPARATORS = (("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


class PlainJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if self.get_indent(accepted_media_type, renderer_context or {}) is not None:
            return super().render(data, accepted_media_type, renderer_context)
        body = to_json(data)
        if b"\xe2\x80" in body:  # the lead bytes of U+2028 and U+2029 in UTF-8
            for raw, escaped in _LINE_SEPARATORS:
                body = body.replace(raw, escaped)
        return body


class PlainJSONNegotiation(DefaultContentNegotiation):
    """For a view with the one renderer: a request that accepts anything or JSON (what the Delta
    clients send) is answered with it at once. DRF's negotiation reads the Accept header through
    `request.headers`, a mapping of every header built for it; any other Accept, and a format
    asked for in the query string, still go through it (406, `indent`)."""

    ANY = frozenset({"*/*", "application/json"})

    def select_renderer(self, request, renderers, format_suffix=None):
        if (len(renderers) == 1 and not format_suffix and request.META.get("HTTP_ACCEPT", "*/*") in self.ANY
                and "format=" not in request.META.get("QUERY_STRING", "")):
            return renderers[0], renderers[0].media_type
        return super().select_renderer(request, renderers, format_suffix)
