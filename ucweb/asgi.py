"""The ASGI application that `make run` serves (gunicorn's asyncio worker, see
scripts/run_server.sh). Requests are read by the event loop: a client that sends its headers a
byte at a time holds a socket, never a thread. The views stay synchronous; Django runs each request
on a thread of its own, and the database connections come from a pool (UCWEB_DB_POOL_SIZE)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ucweb.settings")
application = get_asgi_application()
