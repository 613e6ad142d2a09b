"""Processes that keep their database connection between requests (the WSGI server's request
threads, Celery, management commands; CONN_MAX_AGE) check it before a request uses it again: a
connection the database ended meanwhile (a restart, pg_terminate_backend, an idle timeout) is
replaced, and the request answers as it would have."""

import pytest
import requests
from django.db import connection

from tests.helpers import UC, terminate_other_connections

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
