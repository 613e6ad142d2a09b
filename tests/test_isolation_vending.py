"""Credential vending acts only on the securable's own location: a table or volume whose stored
location overlaps another live securable (a row from before the location rule) gets no
credentials, through the UC API or the Iceberg API; a table that is its own gets them."""

from __future__ import annotations

import pytest
from django.utils import timezone

from catalog.models import AuditEvent, Schema, Table, Volume
from commits.models import IcebergMetadata
from tests.isolation import ICEBERG, STORES, UC, assert_quiet, world_on

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=STORES)
def world(request, bootstrap, admin_client, tmp_path):
    return world_on(request, admin_client=admin_client, tmp_path=tmp_path)


def plant(world):
    schema = Schema.objects.get(catalog__name="unity", name="default")
    now = timezone.now()
    table = Table.objects.create(schema=schema, name="escaped", table_type="EXTERNAL", data_source_format="ICEBERG",
                                 storage_location=world.victim, owner="bob", created_by="bob", updated_at=now,
                                 updated_by="bob")
    source = IcebergMetadata.objects.get(table__name="victim")
    IcebergMetadata.objects.create(table=table, metadata_location=source.metadata_location,
                                   metadata_json=source.metadata_json)
    volume = Volume.objects.create(schema=schema, name="escaped_volume", volume_type="EXTERNAL",
                                   storage_location=f"{world.carol_table}/data", owner="bob", created_by="bob",
                                   updated_at=now, updated_by="bob")
    return table, volume


def test_no_credentials_for_a_location_that_is_not_the_securables_own(world, make_client, caplog):
    table, volume = plant(world)
    bob = make_client("bob")
    for operation in ("READ", "READ_WRITE"):
        response = bob.post(f"{UC}/temporary-table-credentials", {"table_id": str(table.id), "operation": operation},
                            format="json")
        assert response.status_code == 403 and response.json()["error_code"] == "PERMISSION_DENIED", response.content
        assert "aws_temp_credentials" not in response.json()
    for operation in ("READ_VOLUME", "WRITE_VOLUME"):
        response = bob.post(f"{UC}/temporary-volume-credentials",
                            {"volume_id": str(volume.id), "operation": operation}, format="json")
        assert response.status_code == 403 and response.json()["error_code"] == "PERMISSION_DENIED", response.content
    response = bob.get(f"{ICEBERG}/v1/unity/namespaces/default/tables/escaped/credentials")
    assert response.status_code == 403 and response.json()["error"]["type"] == "ForbiddenException"
    assert not AuditEvent.objects.filter(action__startswith="generateTemporary", securable_id=table.id).exists()
    assert_quiet(caplog, response.text)
    # loadTable with delegated access, and remote signing, ask the same vendor: no keys either.
    table_path = f"{ICEBERG}/v1/unity/namespaces/default/tables/escaped"
    for mode in ("vended-credentials", "remote-signing"):
        response = bob.get(table_path, HTTP_X_ICEBERG_ACCESS_DELEGATION=mode)
        assert response.status_code == 200, response.content
        config = response.json().get("config", {})
        assert "s3.access-key-id" not in config and not response.json().get("storage-credentials"), config
    signed = bob.post(f"{table_path}/sign", {"region": "us-east-1", "method": "GET", "headers": {},
                                             "uri": world.victim.replace("s3://", "https://s3.local/") + "/data/x"},
                      format="json")
    assert signed.status_code in (400, 403), signed.content
    assert "Authorization" not in signed.json().get("headers", {})
    # The Delta REST API's table credentials as well.
    response = bob.get(f"{UC}/delta/v1/catalogs/unity/schemas/default/tables/escaped/credentials",
                       {"operation": "READ"})
    assert response.status_code in (403, 404), response.content
    assert "aws_temp_credentials" not in response.content.decode()
    assert not AuditEvent.objects.filter(action__startswith="generateTemporary", securable_id=table.id).exists()


@pytest.mark.parametrize("world", ["file"], indirect=True)
def test_credentials_for_the_securables_own_location(world, make_client):
    bob = make_client("bob")
    own = world.fresh("own")
    body = {"name": "own", "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True}]}, "location": own}
    assert bob.post(f"{ICEBERG}/v1/unity/namespaces/default/tables", body, format="json").status_code == 200
    table = Table.objects.get(name="own")
    response = bob.post(f"{UC}/temporary-table-credentials", {"table_id": str(table.id), "operation": "READ_WRITE"},
                        format="json")
    assert response.status_code == 200 and response.json()["url"] == own
    response = bob.get(f"{ICEBERG}/v1/unity/namespaces/default/tables/own/credentials")
    assert response.status_code == 200
    assert response.json()["storage-credentials"][0]["prefix"] == own
    # The victim's managed table still gets credentials for its own folder.
    admin = make_client("admin", admin=True)
    victim = Table.objects.get(name="victim")
    response = admin.post(f"{UC}/temporary-table-credentials", {"table_id": str(victim.id), "operation": "READ"},
                          format="json")
    assert response.status_code == 200 and response.json()["url"] == world.victim
