"""The WSGI application `make run` serves (granian's WSGI interface, see scripts/run_server.sh):
granian's own I/O (Rust) reads requests, so a client that sends its headers a byte at a time holds
a socket, never a Python thread; each request's body is then received whole before Django runs
(ucweb.request_body)."""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ucweb.settings")

from ucweb import pool  # noqa: E402  (after the settings module is named)
from ucweb.request_body import BodyReadFirst  # noqa: E402

application = BodyReadFirst(get_wsgi_application())
pool.install()  # the connection pool's check of a connection it hands out: its socket first

# Import every view now, while the worker starts, rather than in its first request: that request
# would otherwise wait seconds (longer than a client's timeout on a busy machine), and a worker
# started again after a crash would answer slowly just when it is needed.
get_resolver().url_patterns
