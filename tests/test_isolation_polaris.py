"""The one location rule through Polaris's additions, as bob (CREATE TABLE on unity.default, CREATE
EXTERNAL TABLE on his own external location) against a table he cannot see that lies inside his
own external location: a generic table may not be put on it, a notification may not read its
metadata file, and neither answer names it; a notification for the hidden table answers as for a
missing one. Each refusal leaves rows and storage as they were."""

from __future__ import annotations

import json

import pytest
import requests

from catalog.models import AuditEvent, Table
from tests.isolation import ICEBERG, iceberg_table_body, world_on

pytestmark = pytest.mark.django_db(transaction=True)
POLARIS = "/api/catalog/polaris/v1/unity/namespaces/default/generic-tables"


@pytest.fixture(params=["file"])
def world(request, live_server, bootstrap, admin_client, tmp_path):
    world = world_on(request, admin_client=admin_client, tmp_path=tmp_path)
    world.extra["url"] = live_server.url
    hidden = admin_client.post(f"{ICEBERG}/v1/unity/namespaces/default/tables",
                               iceberg_table_body("hidden", f"{world.bob}/area"), format="json")
    assert hidden.status_code == 200, hidden.content
    world.extra["hidden"] = hidden.json()
    return world


@pytest.fixture
def bob(world, make_token):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {make_token('bob')}"
    return lambda method, path, body=None: session.request(method, world.extra["url"] + path, json=body, timeout=30)


def unchanged(world):
    """What must stay as it is: the rows and the storage trees."""
    return sorted(Table.objects.values_list("id", "name", "storage_location")), world.tree()


def assert_names_nothing_hidden(world, text: str):
    """Neither the hidden table's name nor its id appears in `text`."""
    for secret in ("hidden", world.extra["hidden"]["metadata"]["table-uuid"]):
        assert secret not in text, text


@pytest.mark.parametrize("where", ["equal", "inside"])
def test_a_generic_table_may_not_lie_on_a_hidden_table(world, bob, where):
    location = world.extra["hidden"]["metadata"]["location"] + ("/data" if where == "inside" else "")
    before = unchanged(world)
    response = bob("POST", POLARIS, {"name": "squatter", "format": "delta", "base-location": location})
    assert response.status_code == 400, response.text
    assert "overlaps the location of another securable" in response.json()["error"]["message"]
    assert_names_nothing_hidden(world, response.text)
    assert unchanged(world) == before
    # The same place of his own, free, is his.
    fresh = bob("POST", POLARIS, {"name": "own", "format": "delta", "base-location": world.fresh("own")})
    assert fresh.status_code == 200, fresh.text


def notification(kind, table_uuid, location, timestamp=100, name="squatter"):
    return {"notification-type": kind, "payload": {"table-name": name, "timestamp": timestamp,
                                                    "table-uuid": table_uuid, "metadata-location": location}}


def test_a_notification_may_not_read_a_hidden_tables_metadata(world, bob):
    hidden = world.extra["hidden"]
    before = unchanged(world)
    response = bob("POST", f"{ICEBERG}/v1/unity/namespaces/default/tables/squatter/notifications",
                   notification("CREATE", hidden["metadata"]["table-uuid"], hidden["metadata-location"]))
    assert response.status_code == 400, response.text
    assert "belongs to the location of another securable" in response.json()["error"]["message"]
    assert_names_nothing_hidden(world, response.text)
    assert unchanged(world) == before
    assert not AuditEvent.objects.filter(action="createTableByNotification", outcome="SUCCESS").exists()


@pytest.mark.parametrize("kind", ["DROP", "UPDATE"])
def test_a_notification_for_a_hidden_table_answers_as_for_a_missing_one(world, bob, kind):
    hidden = world.extra["hidden"]
    before = unchanged(world)

    def send(name):
        body = notification(kind, hidden["metadata"]["table-uuid"], hidden["metadata-location"], timestamp=1,
                            name=name)
        return bob("POST", f"{ICEBERG}/v1/unity/namespaces/default/tables/{name}/notifications", body)

    answer = send("hidden")
    if kind == "DROP":
        missing = send("hidden_nowhere")
        assert (answer.status_code, answer.content.replace(b"hidden", b"X")) == (
            missing.status_code, missing.content.replace(b"hidden_nowhere", b"X")), (answer.text, missing.text)
        assert answer.status_code == 404
    else:
        # The name is taken (as any create would find), nothing about the table is said: not its
        # id, not what kind of table it is, not the timestamps it has admitted.
        assert answer.status_code == 409, answer.text
        assert json.loads(answer.content)["error"]["message"] == "Table default.hidden already exists."
    assert_names_nothing_hidden(world, answer.text.replace("default.hidden", "the name it was sent"))
    assert unchanged(world) == before
