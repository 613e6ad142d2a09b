"""Purge deletes only inside the dropped securable's own location, and never a location that
another live securable also holds. The catalog refuses overlapping locations when they enter
(tests/test_isolation_*.py); rows stored before that rule existed can still overlap, so those are
planted here directly, and dropped through the API as their owner would."""

from __future__ import annotations

import pytest
from django.utils import timezone

from catalog.models import Schema, Table
from commits.models import IcebergMetadata
from maintenance.models import PurgeRequest
from maintenance.purge import request_purge, run_purge
from tests.isolation import ICEBERG, STORES, UC, assert_quiet, snapshot, world_on

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=STORES)
def world(request, bootstrap, admin_client, tmp_path):
    return world_on(request, admin_client=admin_client, tmp_path=tmp_path)


def legacy_table(name: str, location: str, *, table_type="MANAGED", fmt="DELTA", iceberg_from=None) -> Table:
    """A row as an older server could have stored it: bob's, at `location`."""
    table = Table.objects.create(
        schema=Schema.objects.get(catalog__name="unity", name="default"), name=name, table_type=table_type,
        data_source_format=fmt, storage_location=location, owner="bob", created_by="bob",
        updated_at=timezone.now(), updated_by="bob",
    )
    if iceberg_from is not None:
        source = IcebergMetadata.objects.get(table__name=iceberg_from)
        IcebergMetadata.objects.create(table=table, metadata_location=source.metadata_location,
                                       metadata_json=source.metadata_json)
    return table


def test_dropping_a_table_that_overlaps_another_purges_nothing(world, make_client, caplog):
    bob = make_client("bob")
    cases = [
        ("the same folder as another table", world.victim),
        ("inside another table's folder", f"{world.victim}/data"),
        ("the managed tables area", f"{world.root}/tables"),
        ("the external location of another principal", world.carol),
        ("a folder holding the external locations", world.ext),
    ]
    for index, (what, location) in enumerate(cases):
        legacy_table(f"legacy{index}", location)
        before = world.tree()
        response = bob.delete(f"{UC}/tables/unity.default.legacy{index}")
        assert response.status_code == 200, (what, response.content)
        purge = PurgeRequest.objects.get(url=location)
        assert purge.done_at is not None and purge.files_deleted == 0, what
        assert purge.last_error.startswith("Refused:"), (what, purge.last_error)
        assert world.tree() == before, what
        assert_quiet(caplog)
    assert Table.objects.filter(name__in=["victim", "carol_t", "secret"]).count() == 3


def test_iceberg_drop_with_purge_of_an_overlapping_table(world, make_client, caplog):
    legacy_table("escaped", world.victim, table_type="EXTERNAL", fmt="ICEBERG", iceberg_from="victim")
    before = world.tree()
    response = make_client("bob").delete(f"{ICEBERG}/v1/unity/namespaces/default/tables/escaped?purgeRequested=true")
    assert response.status_code == 204, response.content
    assert world.tree() == before
    assert PurgeRequest.objects.get(url=world.victim).last_error.startswith("Refused:")
    assert_quiet(caplog)


def test_a_purge_never_reaches_around_a_live_securable(world):
    """Whatever asked for it: a purge of a prefix that holds a live table's files is refused."""
    before = world.tree()
    for url in (world.root, world.ext, world.carol_table, f"{world.carol_table}/data"):
        purge = request_purge(url=url, reason="test")
        run_purge(purge.id)
        purge.refresh_from_db()
        assert purge.files_deleted == 0 and purge.last_error.startswith("Refused:"), url
    assert world.tree() == before


def test_dropping_ones_own_table_purges_exactly_its_folder(world, make_client):
    bob = make_client("bob")
    own = world.fresh("own")
    neighbour = own + "-2"  # shares a name prefix, not a folder
    for name, location in (("own", own), ("neighbour", neighbour)):
        body = {"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": True}]}, "location": location}
        assert bob.post(f"{ICEBERG}/v1/unity/namespaces/default/tables", body,
                        format="json").status_code == 200
    kept = snapshot(neighbour, world.victim, world.carol)
    assert snapshot(own)
    response = bob.delete(f"{ICEBERG}/v1/unity/namespaces/default/tables/own?purgeRequested=true")
    assert response.status_code == 204
    purge = PurgeRequest.objects.get(url=own)
    assert purge.done_at is not None and purge.last_error == "" and purge.files_deleted >= 1
    assert [key for key in snapshot(own) if not key.endswith("/")] == []
    assert snapshot(neighbour, world.victim, world.carol) == kept
