"""The ASGI application that `make run` serves (gunicorn's asyncio worker, see
scripts/run_server.sh). Requests are read by the event loop: a client that sends its headers a
byte at a time holds a socket, never a thread. The views stay synchronous; Django runs each request
on a thread of its own, and the database connections come from a pool (UCWEB_DB_POOL_SIZE).

The request goes to that thread once: the middleware chain, the view and the rendering run there
as under WSGI. Django's own ASGI handler runs the chain asynchronously, and each synchronous piece
of it (every middleware hook, the view, the rendering) then moves to the thread and back: a dozen
hand-offs per request, which cost more CPU than a commit's SQL. The view's thread is the request's
thread in both cases, so database connections and the request's thread-local state are the same.

A body larger than DATA_UPLOAD_MAX_MEMORY_SIZE is refused while it is being received: Django's
handler buffers the whole body (spilling to a temporary file) before the limit is checked, and the
server sets no limit of its own, so a huge upload would fill the disk before its 413."""

import os
import tempfile

import django
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.exceptions import RequestAborted

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ucweb.settings")


class BodyTooLarge(Exception):
    """The request body exceeds DATA_UPLOAD_MAX_MEMORY_SIZE; what was received is discarded."""


def declared_length(scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # Django answers a malformed header itself
    return None


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


class SynchronousChainASGIHandler(ASGIHandler):
    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)

    async def handle(self, scope, receive, send):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and (declared_length(scope) or 0) > limit:
            await self.refuse_too_large(scope, send)
            return
        try:
            await super().handle(scope, receive, send)
        except BodyTooLarge:
            await self.refuse_too_large(scope, send)

    async def refuse_too_large(self, scope, send):
        response = too_large_response(scope.get("path", ""))
        await self.send_response(response, send)

    async def read_body(self, receive):
        """As Django's, but stops receiving once the body exceeds DATA_UPLOAD_MAX_MEMORY_SIZE."""
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body_file = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE, mode="w+b")
        received = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                body_file.close()
                raise RequestAborted()
            chunk = message.get("body", b"")
            received += len(chunk)
            if limit is not None and received > limit:
                body_file.close()
                raise BodyTooLarge()
            body_file.write(chunk)
            if not message.get("more_body", False):
                break
        body_file.seek(0)
        return body_file


django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application
application = SynchronousChainASGIHandler()
