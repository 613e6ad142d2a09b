"""Processes that keep their database connection between requests (the WSGI server's request
threads, Celery, management commands; CONN_MAX_AGE) check it before a request uses it again: a
connection the database ended meanwhile (a restart, pg_terminate_backend, an idle timeout) is
replaced, and the request answers as it would have."""

import pytest
import requests
from django.db import connection

from tests.helpers import UC, terminate_other_connections, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_request_after_the_database_ended_the_kept_connection_answers(live_server, make_token):
    if connection.vendor != "postgresql":
        pytest.skip("ends connections with PostgreSQL's pg_terminate_backend")
    session = requests.Session()  # one HTTP connection: one server thread and its kept connection
    session.headers["Authorization"] = f"Bearer {make_token('admin', admin=True)}"
    catalogs = f"{live_server.url}{UC}/catalogs"
    assert session.get(catalogs).status_code == 200

    assert terminate_other_connections() >= 1, "the server thread's connection was kept"
    answer = session.get(catalogs)
    session.close()

    assert answer.status_code == 200, answer.text[:300]
    assert answer.json() == {"catalogs": []}


def _pool(check):
    from psycopg_pool import ConnectionPool

    params = connection.settings_dict
    conninfo = {"dbname": params["NAME"], "user": params["USER"], "host": params["HOST"] or "127.0.0.1",
                "port": params["PORT"] or 5432, "password": params["PASSWORD"] or None,
                "application_name": "ucweb-pool-check", "autocommit": True}
    return ConnectionPool(kwargs={k: v for k, v in conninfo.items() if v is not None}, min_size=1, max_size=1,
                          check=check, open=True)


def test_the_pool_asks_the_socket_then_the_database_only_when_it_has_something_to_say():
    """The servers' pool (ucweb.pool) hands out a connection without a round trip while its socket
    is quiet, and replaces one that the database ended meanwhile (its socket says so)."""
    if connection.vendor != "postgresql":
        pytest.skip("the connection pool exists only on PostgreSQL (DATABASE_URL)")
    from unittest import mock

    from psycopg_pool import ConnectionPool

    from ucweb.pool import check_connection

    with _pool(check_connection) as pool, mock.patch.object(
            ConnectionPool, "check_connection", wraps=ConnectionPool.check_connection) as asked:
        with pool.connection() as conn:
            first = conn.info.backend_pid
        with pool.connection() as conn:
            assert conn.info.backend_pid == first and conn.execute("SELECT 1").fetchone() == (1,)
        assert asked.call_count == 0, "a quiet connection was checked with a round trip"

        assert terminate_other_connections("ucweb-pool-check") == 1

        def ended() -> bool:
            """The terminated backend is gone (pg_terminate_backend only signals it)."""
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [first])
                return cursor.fetchone()[0] == 0

        wait_for(ended, timeout=10, interval=0.05)
        with pool.connection() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert conn.info.backend_pid != first
        assert asked.call_count >= 1


def test_the_servers_install_their_check_on_the_pool_django_makes(settings):
    """ucweb.wsgi and ucweb.asgi put ucweb.pool's check on the pool (Django passes psycopg_pool's
    own, which the pool keeps as `_check`)."""
    if connection.vendor != "postgresql":
        pytest.skip("the connection pool exists only on PostgreSQL (DATABASE_URL)")
    from django.db import connections
    from psycopg_pool import ConnectionPool

    from ucweb import pool
    from ucweb.pool import check_connection

    wrapper = connections["default"]
    options = wrapper.settings_dict.setdefault("OPTIONS", {})
    saved = (dict(options), wrapper.settings_dict.get("CONN_MAX_AGE"), wrapper.settings_dict.get("CONN_HEALTH_CHECKS"))
    options["pool"] = {"min_size": 1, "max_size": 1}
    wrapper.settings_dict.update(CONN_MAX_AGE=0, CONN_HEALTH_CHECKS=True)
    try:
        assert wrapper.pool._check is ConnectionPool.check_connection  # what Django made
        pool.install()
        assert wrapper.pool._check is check_connection
    finally:
        wrapper.close_pool()
        options.clear()
        options.update(saved[0])
        wrapper.settings_dict.update(CONN_MAX_AGE=saved[1], CONN_HEALTH_CHECKS=saved[2])
