"""A create that races with the drop of its container: the database refuses the create at commit
(the container's row is gone), and the client gets a 409 that changed nothing, not a 500."""

from __future__ import annotations

import threading

import psycopg
import pytest
import requests
from django.db import connection

from catalog.models import Catalog, Schema
from tests.helpers import UC, wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _dsn() -> str:
    database = connection.settings_dict
    return (f"postgres://{database.get('USER') or 'postgres'}@{database.get('HOST') or '127.0.0.1'}:"
            f"{database.get('PORT') or 5432}/{database['NAME']}")


def test_a_schema_created_in_a_catalog_being_dropped_answers_409(live_server, bootstrap, make_token, storage_root):
    if connection.vendor != "postgresql":
        pytest.skip("the race needs a second connection to the same PostgreSQL database")
    headers = {"Authorization": f"Bearer {make_token('admin', admin=True)}"}
    created = requests.post(f"{live_server.url}{UC}/catalogs", json={"name": "doomed"}, headers=headers, timeout=60)
    assert created.status_code == 200, created.text
    catalog_id = Catalog.objects.get(name="doomed").id

    dropper = psycopg.connect(_dsn())  # the drop, left uncommitted while the create runs
    dropper.execute("DELETE FROM catalog_catalog WHERE id = %s", [catalog_id])
    answer: dict = {}

    def create_schema():
        answer["response"] = requests.post(f"{live_server.url}{UC}/schemas",
                                           json={"name": "late", "catalog_name": "doomed"}, headers=headers,
                                           timeout=60)

    creator = threading.Thread(target=create_schema)
    creator.start()
    try:
        def the_create_waits_for_the_drop():
            with connection.cursor() as cursor:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                               "AND datname = current_database()")
                return cursor.fetchone()[0] > 0

        wait_for(the_create_waits_for_the_drop)
        dropper.commit()
    finally:
        dropper.close()
        creator.join(timeout=60)

    response = answer["response"]
    assert response.status_code == 409, response.text
    assert response.json()["error_code"] == "ABORTED"
    assert not Catalog.objects.filter(name="doomed").exists()
    assert not Schema.objects.filter(name="late").exists()
