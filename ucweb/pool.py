"""The check the database connection pool makes of each connection it hands out (settings.py),
installed by the servers (ucweb.wsgi, ucweb.asgi) on the pool Django makes.

psycopg_pool's own check sends an empty query: a round trip on every request, 9 % of a Delta
commit's time. A connection the database ended while it sat in the pool (a restart,
pg_terminate_backend, an idle timeout) has something to read: the server's last message (FATAL)
and the end of the stream. So the socket is asked first, which costs no round trip; only a
connection with something to read, or not idle, or already closed gets the real check, which
fails for a dead one (the pool then replaces it, tests/test_kept_connections.py). What this does
not see is a peer that vanished without a word (a network cut with no reset): the request that
gets such a connection fails, as it would have once the real check timed out."""

from __future__ import annotations

import select

from psycopg import pq
from psycopg_pool import ConnectionPool

_SOMETHING_TO_READ = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP


def check_connection(conn) -> None:
    """Returns quietly for a usable connection, else raises (as ConnectionPool.check_connection)."""
    try:
        idle = not conn.closed and conn.info.transaction_status == pq.TransactionStatus.IDLE
        if idle:
            poller = select.poll()
            poller.register(conn.pgconn.socket, _SOMETHING_TO_READ)
            if not poller.poll(0):
                return
    except Exception:  # noqa: BLE001 - the real check below says what is wrong
        pass
    ConnectionPool.check_connection(conn)


def install() -> None:
    """Makes the pool of the default database, when there is one, check connections with
    `check_connection` instead of psycopg_pool's own (which Django passes it; the pool's
    `_check`, psycopg-pool 3.3: requirements.txt pins it, tests/test_kept_connections.py checks it)."""
    from django.db import connections

    pool = getattr(connections["default"], "pool", None)  # a PostgreSQL connection with a pool
    if pool is not None and pool._check is ConnectionPool.check_connection:
        pool._check = check_connection
