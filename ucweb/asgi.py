"""An ASGI application of ucweb, for an ASGI server. `make run` serves the WSGI application instead
(ucweb.wsgi under granian, which costs half the CPU per request: docs/benchmarks.md); this one is
kept for an ASGI deployment and as the baseline bench/servers.py measures the server choice
against (gunicorn's asyncio worker, uvicorn, granian's ASGI interface). Requests are read by the
event loop: a client that sends its headers or its body a byte at a time holds a socket, never a
thread. The views stay synchronous, and the database connections come from a pool
(UCWEB_DB_POOL_SIZE).

Once its body has arrived, a request goes to a thread once: the middleware chain, the view and the
rendering run there as under WSGI. Django's own ASGI handler runs the chain asynchronously, and
each synchronous piece of it (every middleware hook, the view, the rendering) then moves to the
thread and back: a dozen hand-offs per request, which cost more CPU than a commit's SQL.

Every synchronous step of a request (request_started, the chain, request_finished) runs on one
thread, so its database connection and thread-local state are the request's own. Django starts a
new thread for each request for that, and ends it with the request: about a quarter of the CPU of
a small request went to starting threads. Here the threads are kept (`Lanes`): a request takes an
idle one, and gives it back when it is done.

A body larger than DATA_UPLOAD_MAX_MEMORY_SIZE is refused while it is being received: Django's
handler buffers the whole body (spilling to a temporary file) before the limit is checked, and the
server sets no limit of its own, so a huge upload would fill the disk before its 413.

An answer to HEAD leaves without its body (`headers_only`): views answer HEAD as GET (Django's
View does so for every view without a head()), and errors carry their envelope, while HTTP says a
HEAD answer has none. Some servers drop such bytes themselves, but log a warning for each answer."""

import os
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

import django
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.exceptions import RequestAborted
from django.db import close_old_connections

from ucweb import pool
from ucweb.request_body import BodyTooLarge, declared_length, too_large_response

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ucweb.settings")


def header(scope, name: bytes) -> bytes | None:
    return next((value for key, value in scope.get("headers", ()) if key.lower() == name), None)


def headers_only(send):
    """`send` for an answer to HEAD: the status and headers (Content-Length included) as the view
    made them, and an empty body."""

    async def send_without_body(message):
        if message["type"] == "http.response.body":
            if message.get("more_body", False):
                return
            message = {"type": "http.response.body", "body": b"", "more_body": False}
        await send(message)

    return send_without_body


class Lanes:
    """Threads that run requests, each one request at a time (single-thread executors). At most
    `kept` idle ones are kept; past that, as many requests at once as there are get a thread of
    their own that ends with them, as under Django's handler: nothing ever waits for a thread."""

    def __init__(self, kept: int):
        self.kept = kept
        self.idle: list[ThreadPoolExecutor] = []
        self.lock = threading.Lock()

    def take(self) -> ThreadPoolExecutor:
        with self.lock:
            if self.idle:
                return self.idle.pop()
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="ucweb-request")

    def give_back(self, lane: ThreadPoolExecutor) -> None:
        with self.lock:
            if len(self.idle) < self.kept:
                self.idle.append(lane)
                return
        lane.shutdown(wait=False)


class Received:
    """The receive channel of a request whose body has been read (`body_file`)."""

    def __init__(self, body_file, receive):
        self.body_file = body_file
        self.receive = receive

    async def __call__(self):
        return await self.receive()


class SynchronousChainASGIHandler(ASGIHandler):
    # More idle threads than requests in flight at a busy moment buy nothing: the database pool
    # (UCWEB_DB_POOL_SIZE per worker) is what bounds the requests that make progress.
    KEPT_THREADS = 32

    def __init__(self):
        super().__init__()
        self.lanes = Lanes(self.KEPT_THREADS)

    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        if scope.get("method") == "HEAD":
            send = headers_only(send)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and (declared_length(header(scope, b"content-length")) or 0) > limit:
            await self.refuse_too_large(scope, send)
            return
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        except BodyTooLarge:
            await self.refuse_too_large(scope, send)
            return
        lane = self.lanes.take()
        handled = False
        try:
            # Every thread-sensitive step of the request (Django's signals, the chain, closing the
            # response) runs on `lane`, which outlives the context.
            async with ThreadSensitiveContext(executor=lane):
                await self.handle(scope, Received(body_file, receive), send)
            handled = True
        finally:
            if handled:
                self.lanes.give_back(lane)  # every step has run: the thread is idle
            else:
                # Cancelled (the server gave up on a client that left) or failed: the view may
                # still be running on the lane, and request_finished may never have run. The lane
                # goes back once it is idle, its connections closed as request_finished would.
                lane.submit(close_old_connections).add_done_callback(lambda _: self.lanes.give_back(lane))

    async def refuse_too_large(self, scope, send):
        response = too_large_response(scope.get("path", ""))
        await self.send_response(response, send)

    async def read_body(self, receive):
        """As Django's, but stops receiving once the body exceeds DATA_UPLOAD_MAX_MEMORY_SIZE; a
        body read already (`Received`) is returned as it is."""
        if isinstance(receive, Received):
            return receive.body_file
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
pool.install()  # the connection pool's check of a connection it hands out: its socket first
