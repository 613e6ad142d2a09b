"""A request's body is received whole before the application sees the request, and one larger
than DATA_UPLOAD_MAX_MEMORY_SIZE is refused while it is being received (a 413 in the envelope of
the API its path is under), never buffered first.

Under the WSGI server (`BodyReadFirst`) the body is read on the request's thread before Django
runs: a client that sends its body slowly then holds a thread of the server, but never a database
connection (authentication takes one before a view reads the body), and a body sent in chunks,
without a length, reaches Django whole (its WSGI request reads CONTENT_LENGTH bytes, else none)."""

from __future__ import annotations

import io

from django.conf import settings

CHUNK = 64 * 1024


def too_large_response(path: str):
    """The 413 the API under `path` answers for RequestDataTooBig, in that API's envelope."""
    from django.http import JsonResponse

    from catalog.api.delta import errors as delta_errors
    from ucweb import errors

    error = errors.RequestTooLarge("Request body is too large.")
    if path.startswith(delta_errors.PATH_PREFIX):
        kind, status = delta_errors.classify(error, error)
        return JsonResponse(delta_errors.body(kind, status, error.message), status=status)
    if errors.is_iceberg_path(path):
        return JsonResponse(errors.iceberg_body(error), status=errors.iceberg_status(error))
    return JsonResponse(errors.uc_body(error), status=error.status)


class BodyTooLarge(Exception):
    """The request body exceeds DATA_UPLOAD_MAX_MEMORY_SIZE; what was received is discarded."""


def declared_length(value: str | bytes | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None  # Django answers a malformed header itself


def read_body(stream, length: int | None, limit: int | None) -> bytes:
    """`length` bytes of `stream` (or up to its end when no length was declared), refusing more
    than `limit` as soon as they arrive."""
    if limit is not None and (length or 0) > limit:
        raise BodyTooLarge()
    parts, received = [], 0
    while length is None or received < length:
        chunk = stream.read(CHUNK if length is None else min(CHUNK, length - received))
        if not chunk:
            break
        received += len(chunk)
        if limit is not None and received > limit:
            raise BodyTooLarge()
        parts.append(chunk)
    return b"".join(parts)


class BodyReadFirst:
    """The WSGI application `application`, called once the request's body has been received."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        length = declared_length(environ.get("CONTENT_LENGTH"))
        if length is not None or "HTTP_TRANSFER_ENCODING" in environ:
            try:
                body = read_body(environ["wsgi.input"], length, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
            except BodyTooLarge:
                response = too_large_response(environ.get("PATH_INFO", ""))
                start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
                return [response.content]
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return self.application(environ, start_response)
