"""The ASGI application that `make run` serves (gunicorn's asyncio worker, see
scripts/run_server.sh). Requests are read by the event loop: a client that sends its headers a
byte at a time holds a socket, never a thread. The views stay synchronous; Django runs each request
on a thread of its own, and the database connections come from a pool (UCWEB_DB_POOL_SIZE).

The request goes to that thread once: the middleware chain, the view and the rendering run there
as under WSGI. Django's own ASGI handler runs the chain asynchronously, and each synchronous piece
of it (every middleware hook, the view, the rendering) then moves to the thread and back: a dozen
hand-offs per request, which cost more CPU than a commit's SQL. The view's thread is the request's
thread in both cases, so database connections and the request's thread-local state are the same."""

import os

import django
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ucweb.settings")


class SynchronousChainASGIHandler(ASGIHandler):
    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)


django.setup(set_prefix=False)  # as django.core.asgi.get_asgi_application
application = SynchronousChainASGIHandler()
