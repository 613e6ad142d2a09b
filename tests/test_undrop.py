"""Dropped tables and volumes kept for UCWEB_DROP_RETENTION_SECONDS: missing for every protocol,
restored with their id, history and grants by their owner or an admin (a name taken meanwhile is
a 409), purged early on request or by the worker once the retention is over."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from pyiceberg.exceptions import NoSuchTableError
from unitycatalog.client import CreateVolumeRequestContent, TablesApi, VolumeType, VolumesApi
from unitycatalog.client.exceptions import NotFoundException

from catalog.choices import AuditAction, AuditOutcome
from catalog.models import AuditEvent, Grant, Table, Volume
from maintenance.models import PurgeRequest
from maintenance.purge import expire_dropped, run_pending_purges
from tests.delta_client import DeltaClient
from tests.helpers import UC, grant
from tests.pyiceberg_support import catalog, connect, error_of, file_only, http, new_table, rows, storage  # noqa: F401

RETENTION = 7 * 24 * 3600


@pytest.fixture
def retention(settings):
    settings.UCWEB_DROP_RETENTION_SECONDS = RETENTION
    return timedelta(seconds=RETENTION)


def _files(location: str) -> list[str]:
    from catalog.storage import storage_for

    return sorted(info.url for info in storage_for(location).list(location))


def _state() -> dict:
    """Every table and volume row, dropped or not, and every grant: what a refused request must
    leave as it was."""
    return {"tables": sorted(Table.with_dropped.values_list("id", "name", "dropped_at", "dropped_by", "owner")),
            "volumes": sorted(Volume.with_dropped.values_list("id", "name", "dropped_at", "dropped_by")),
            "grants": sorted(Grant.objects.values_list("securable_id", "principal", "privilege"))}


def _error(response) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body["error_code"], body["message"]


def test_a_dropped_delta_table_is_missing_then_restored_with_its_history_and_grants(
        delta, uc_sdk, admin_client, make_client, retention, storage_root, tmp_path):
    info = delta.create_table("unity", "default", "events")
    location = info.storage_location
    delta.append(info.table_id, location, 1, "part-1.parquet")
    grant("bob", "table", "unity.default.events", "SELECT")
    uc_sdk.run(TablesApi, "admin", lambda api: api.delete_table("unity.default.events"))

    # Missing for every request: get, list, commits, credentials; its files stay.
    with pytest.raises(NotFoundException):
        uc_sdk.run(TablesApi, "admin", lambda api: api.get_table("unity.default.events"))
    listed = uc_sdk.run(TablesApi, "admin", lambda api: api.list_tables("unity", "default"))
    assert [table.name for table in listed.tables or []] == []
    with pytest.raises(Exception) as refused:
        delta.append(info.table_id, location, 2, "part-2.parquet", publish=False)
    assert getattr(refused.value, "status", None) == 404
    response = admin_client.post(f"{UC}/temporary-table-credentials", {"table_id": info.table_id, "operation": "READ"},
                                 format="json")
    assert response.status_code == 404 and response.json()["error_code"] == "TABLE_DOES_NOT_EXIST"
    assert f"{location.rstrip('/')}/_delta_log/00000000000000000001.json" in _files(location)

    listed = admin_client.get(f"{UC}/dropped-tables", {"catalog_name": "unity", "schema_name": "default"}).json()
    assert [(t["table_id"], t["name"], t["dropped_by"]) for t in listed["tables"]] == [(info.table_id, "events", "admin")]
    assert make_client("bob").get(f"{UC}/dropped-tables", {"catalog_name": "unity", "schema_name": "default"}
                                  ).status_code == 404  # bob may not use the catalog: it is missing to him

    response = admin_client.post(f"{UC}/dropped-tables/{info.table_id}/undrop")
    assert response.status_code == 200, response.content
    assert response.json()["table_id"] == info.table_id
    restored = uc_sdk.run(TablesApi, "admin", lambda api: api.get_table("unity.default.events"))
    assert restored.table_id == info.table_id
    # Its history: version 2 follows version 1, and a reader sees both files.
    delta.append(info.table_id, location, 2, "part-2.parquet")
    version, files = delta.snapshot(info.table_id, location)
    assert version == 2 and len(files) == 2
    assert Grant.objects.filter(securable_id=info.table_id, principal="bob", privilege="SELECT").exists()
    assert AuditEvent.objects.filter(action=AuditAction.UNDROP_TABLE, securable_id=info.table_id,
                                     outcome=AuditOutcome.SUCCESS).count() == 1
    assert admin_client.get(f"{UC}/dropped-tables", {"catalog_name": "unity", "schema_name": "default"}
                            ).json()["tables"] == []


def test_a_name_taken_meanwhile_is_a_409_and_nothing_changes(delta, admin_client, retention, storage_root):
    first = delta.create_table("unity", "default", "orders")
    assert admin_client.delete(f"{UC}/tables/unity.default.orders").status_code == 200
    second = delta.create_table("unity", "default", "orders")  # the name is free at once
    before = _state()

    response = admin_client.post(f"{UC}/dropped-tables/{first.table_id}/undrop")

    assert response.status_code == 409 and response.json()["error_code"] == "ALREADY_EXISTS", response.content
    assert "unity.default.orders" in response.json()["message"]
    assert _state() == before
    # Once the other goes, the first comes back under its name.
    assert admin_client.delete(f"{UC}/tables/unity.default.orders").status_code == 200
    assert admin_client.post(f"{UC}/dropped-tables/{first.table_id}/undrop").status_code == 200
    assert admin_client.get(f"{UC}/tables/unity.default.orders").json()["table_id"] == first.table_id
    assert Table.with_dropped.get(id=second.table_id).dropped_at is not None


def test_only_the_owner_or_an_admin_restores_or_purges_others_get_the_missing_answer(
        delta, admin_client, make_client, make_token, retention, storage_root):
    info = delta.create_table("unity", "default", "ledger")
    grant("bob", "catalog", "unity", "USE CATALOG")
    grant("bob", "schema", "unity.default", "USE SCHEMA", "CREATE TABLE")
    grant("bob", "table", "unity.default.ledger", "SELECT", "MODIFY")
    assert admin_client.delete(f"{UC}/tables/unity.default.ledger").status_code == 200
    bob = make_client("bob")
    before = _state()
    gone = str(uuid.uuid4())
    last_event = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()

    for method, suffix in (("post", "/undrop"), ("delete", "")):
        hidden = getattr(bob, method)(f"{UC}/dropped-tables/{info.table_id}{suffix}")
        missing = getattr(bob, method)(f"{UC}/dropped-tables/{gone}{suffix}")
        assert _error(hidden)[:2] == _error(missing)[:2] == (404, "TABLE_DOES_NOT_EXIST")
        assert _error(hidden)[2].replace(info.table_id, "<id>") == _error(missing)[2].replace(gone, "<id>")
    assert bob.get(f"{UC}/dropped-tables", {"catalog_name": "unity", "schema_name": "default"}).json() == {"tables": []}
    assert _state() == before
    refusals = AuditEvent.objects.filter(id__gt=last_event, principal="bob").order_by("id")
    assert [(e.action, e.outcome) for e in refusals] == [
        (AuditAction.UNDROP_TABLE, AuditOutcome.DENIED), (AuditAction.UNDROP_TABLE, AuditOutcome.FAILED),
        (AuditAction.PURGE_DROPPED_TABLE, AuditOutcome.DENIED), (AuditAction.PURGE_DROPPED_TABLE, AuditOutcome.FAILED)]
    # A live table is no dropped one, for its owner too.
    live = delta.create_table("unity", "default", "live")
    assert _error(admin_client.post(f"{UC}/dropped-tables/{live.table_id}/undrop"))[:2] == (404, "TABLE_DOES_NOT_EXIST")
    assert _error(admin_client.post(f"{UC}/dropped-tables/not-an-id/undrop"))[:2] == (400, "INVALID_PARAMETER_VALUE")

    # What bob owns he restores and purges himself.
    as_bob = DeltaClient(delta.host, make_token("bob"))
    own = as_bob.create_table("unity", "default", "own").table_id
    as_bob.close()
    assert bob.delete(f"{UC}/tables/unity.default.own").status_code == 200
    assert [t["table_id"] for t in bob.get(f"{UC}/dropped-tables", {"catalog_name": "unity",
                                                                    "schema_name": "default"}).json()["tables"]] == [own]
    assert bob.post(f"{UC}/dropped-tables/{own}/undrop").status_code == 200
    assert bob.delete(f"{UC}/tables/unity.default.own").status_code == 200
    assert bob.delete(f"{UC}/dropped-tables/{own}").status_code == 200
    assert not Table.with_dropped.filter(id=own).exists()


def test_the_worker_purges_what_was_dropped_longer_ago_than_the_retention(
        delta, uc_sdk, admin_client, retention, storage_root):
    info = delta.create_table("unity", "default", "old")
    delta.append(info.table_id, info.storage_location, 1, "part-1.parquet")
    volume = uc_sdk.run(VolumesApi, "admin", lambda api: api.create_volume(CreateVolumeRequestContent(
        catalog_name="unity", schema_name="default", name="files", volume_type=VolumeType.MANAGED)))
    from catalog.storage import storage_for

    storage_for(volume.storage_location).put(f"{volume.storage_location}/a.txt", b"a")
    assert admin_client.delete(f"{UC}/tables/unity.default.old").status_code == 200
    assert admin_client.delete(f"{UC}/volumes/unity.default.files").status_code == 200
    assert _files(info.storage_location) and _files(volume.storage_location)

    assert expire_dropped(now=timezone.now() + retention - timedelta(minutes=1)) == 0
    run_pending_purges()
    assert _files(info.storage_location) and _files(volume.storage_location)
    assert Table.with_dropped.filter(id=info.table_id).exists()

    assert expire_dropped(now=timezone.now() + retention + timedelta(minutes=1)) == 2
    run_pending_purges()
    assert not Table.with_dropped.filter(id=info.table_id).exists()
    assert not Volume.with_dropped.filter(id=volume.volume_id).exists()
    assert _files(info.storage_location) == [] and _files(volume.storage_location) == []
    assert set(PurgeRequest.objects.values_list("url", flat=True)) >= {info.storage_location.rstrip("/"),
                                                                         volume.storage_location}


def test_an_early_purge_deletes_the_files_now(delta, admin_client, retention, storage_root):
    info = delta.create_table("unity", "default", "scratch")
    assert admin_client.delete(f"{UC}/tables/unity.default.scratch").status_code == 200
    assert _files(info.storage_location)

    response = admin_client.delete(f"{UC}/dropped-tables/{info.table_id}")

    assert response.status_code == 200 and response.json() == {}
    run_pending_purges()
    assert not Table.with_dropped.filter(id=info.table_id).exists() and _files(info.storage_location) == []
    assert AuditEvent.objects.filter(action=AuditAction.PURGE_DROPPED_TABLE, securable_id=info.table_id).exists()


def test_without_retention_a_drop_deletes_at_once(delta, admin_client, settings, storage_root):
    settings.UCWEB_DROP_RETENTION_SECONDS = 0
    info = delta.create_table("unity", "default", "once")
    assert admin_client.delete(f"{UC}/tables/unity.default.once").status_code == 200
    run_pending_purges()
    assert not Table.with_dropped.filter(id=info.table_id).exists() and _files(info.storage_location) == []


def test_a_dropped_volume_restores(uc_sdk, admin_client, retention, storage_root):
    volume = uc_sdk.run(VolumesApi, "admin", lambda api: api.create_volume(CreateVolumeRequestContent(
        catalog_name="unity", schema_name="default", name="landing", volume_type=VolumeType.MANAGED)))
    assert admin_client.delete(f"{UC}/volumes/unity.default.landing").status_code == 200
    with pytest.raises(NotFoundException):
        uc_sdk.run(VolumesApi, "admin", lambda api: api.get_volume("unity.default.landing"))
    listed = admin_client.get(f"{UC}/dropped-volumes", {"catalog_name": "unity", "schema_name": "default"}).json()
    assert [v["volume_id"] for v in listed["volumes"]] == [volume.volume_id]

    response = admin_client.post(f"{UC}/dropped-volumes/{volume.volume_id}/undrop")

    assert response.status_code == 200, response.content
    assert uc_sdk.run(VolumesApi, "admin", lambda api: api.get_volume("unity.default.landing")).volume_id == \
        volume.volume_id


@file_only
def test_iceberg_drop_keeps_and_purge_requested_purges(catalog, admin_client, retention, storage):
    kept = new_table(catalog, "kept")
    kept.append(rows((1, "2024-01-01T00:00:00", "a", 1.0)))
    table_id = str(Table.objects.get(name="kept").id)
    policies = "/api/catalog/polaris/v1/unity/namespaces/default/policies"
    assert admin_client.post(policies, {"name": "expiry", "type": "system.snapshot-expiry",
                                        "content": '{"enable": true}'}, format="json").status_code == 200
    assert admin_client.put(f"{policies}/expiry/mappings", {"target": {"type": "table-like", "path": [
        "default", "kept"]}}, format="json").status_code == 204
    catalog.drop_table(("default", "kept"))  # purgeRequested=false

    with pytest.raises(NoSuchTableError):
        catalog.load_table(("default", "kept"))
    assert not catalog.table_exists(("default", "kept"))
    assert ("default", "kept") not in catalog.list_tables("default")
    other = new_table(catalog, "kept")  # the name is free
    other_location = other.metadata.location
    catalog.purge_table(("default", "kept"))  # purgeRequested=true: gone now, files with it
    run_pending_purges()
    assert Table.with_dropped.filter(name="kept").count() == 1
    assert _files(other_location) == []

    response = admin_client.post(f"{UC}/dropped-tables/{table_id}/undrop")
    assert response.status_code == 200, response.content
    restored = catalog.load_table(("default", "kept"))
    assert str(restored.metadata.table_uuid) == table_id
    assert restored.scan().to_arrow().num_rows == 1
    applicable = admin_client.get("/api/catalog/polaris/v1/unity/applicable-policies",
                                  {"namespace": "default", "target-name": "kept"}).json()
    assert [p["name"] for p in applicable["applicable-policies"]] == ["expiry"]
    restored.append(rows((2, "2024-01-02T00:00:00", "b", 2.0)))
    assert catalog.load_table(("default", "kept")).scan().to_arrow().num_rows == 2


@file_only
def test_iceberg_undrop_by_name(catalog, http, retention, storage):
    table = new_table(catalog, "clicks")
    table.append(rows((1, "2024-01-01T00:00:00", "a", 1.0)))
    table_id = str(table.metadata.table_uuid)
    grant("bob", "catalog", "unity", "USE CATALOG")
    grant("bob", "schema", "unity.default", "USE SCHEMA")
    grant("bob", "table", "unity.default.clicks", "SELECT", "MODIFY")
    catalog.drop_table(("default", "clicks"))
    newer = new_table(catalog, "clicks")
    before = _state()

    taken = http("POST", "/namespaces/default/tables/clicks/undrop")
    assert error_of(taken) == (409, "AlreadyExistsException")
    bob = http.as_("bob")
    hidden, missing = bob("POST", "/namespaces/default/tables/clicks/undrop"), bob(
        "POST", "/namespaces/default/tables/never/undrop")
    assert error_of(hidden) == error_of(missing) == (404, "NoSuchTableException")
    assert hidden.json()["error"]["message"].replace("clicks", "<name>") == \
        missing.json()["error"]["message"].replace("never", "<name>")
    assert _state() == before

    catalog.purge_table(("default", "clicks"))
    assert str(newer.metadata.table_uuid) not in {str(i) for i in Table.with_dropped.values_list("id", flat=True)}
    response = http("POST", "/namespaces/default/tables/clicks/undrop")
    assert response.status_code == 204, response.content
    restored = catalog.load_table(("default", "clicks"))
    assert str(restored.metadata.table_uuid) == table_id and restored.scan().to_arrow().num_rows == 1
    assert error_of(http("POST", "/namespaces/default/tables/clicks/undrop")) == (404, "NoSuchTableException")


@pytest.mark.django_db(transaction=True)
def test_the_console_lists_restores_and_purges_through_the_services(bootstrap, retention, storage_root):
    from django.contrib.auth import get_user_model
    from django.test import Client

    from catalog.models import Principal
    from catalog.services import principals, tables

    admin = Principal.objects.get(name="admin")
    columns = [{"name": "id", "type_name": "LONG"}]
    for name in ("kept", "doomed"):
        tables.create_table(caller=admin, name=name, catalog_name="unity", schema_name="default", table_type="VIEW",
                            view_definition="select 1", columns=columns)
        tables.delete_table(caller=admin, full_name=f"unity.default.{name}")
    kept, doomed = (Table.with_dropped.get(name=name) for name in ("kept", "doomed"))
    get_user_model().objects.create_superuser("admin", "admin@example.com", "pw")
    console = Client()
    console.force_login(get_user_model().objects.get(username="admin"))

    page = console.get("/admin/catalog/table/dropped/").content.decode()
    assert "unity.default.kept" in page and "unity.default.doomed" in page
    assert "/admin/catalog/table/dropped/" in console.get("/admin/").content.decode()

    console.post(f"/admin/catalog/table/dropped/table/{kept.id}/restore/")
    assert Table.objects.get(id=kept.id).name == "kept"
    console.post(f"/admin/catalog/table/dropped/table/{doomed.id}/purge/", {"confirm": "nope"})
    assert Table.with_dropped.filter(id=doomed.id).exists()  # not confirmed by its name
    console.post(f"/admin/catalog/table/dropped/table/{doomed.id}/purge/", {"confirm": "unity.default.doomed"})
    assert not Table.with_dropped.filter(id=doomed.id).exists()
    assert list(AuditEvent.objects.filter(principal="admin", action__in=[
        AuditAction.UNDROP_TABLE, AuditAction.PURGE_DROPPED_TABLE]).order_by("id").values_list(
            "action", "securable_id")) == [
        (AuditAction.UNDROP_TABLE, kept.id), (AuditAction.PURGE_DROPPED_TABLE, doomed.id)]

    # Another staff user's principal, who owns neither: the list is empty, the pages are missing.
    tables.delete_table(caller=admin, full_name="unity.default.kept")
    principals.ensure_principal(name="carol")
    get_user_model().objects.create_user("carol", "carol@example.com", "pw", is_staff=True, is_superuser=True)
    carol = Client()
    carol.force_login(get_user_model().objects.get(username="carol"))
    assert "unity.default.kept" not in carol.get("/admin/catalog/table/dropped/").content.decode()
    assert carol.post(f"/admin/catalog/table/dropped/table/{kept.id}/restore/").status_code == 404
    assert carol.post(f"/admin/catalog/table/dropped/table/{uuid.uuid4()}/restore/").status_code == 404
    assert Table.with_dropped.get(id=kept.id).dropped_at is not None


def test_a_dropped_generic_table_restores(admin_client, retention, storage_root):
    generic = "/api/catalog/polaris/v1/unity/namespaces/default/generic-tables"
    created = admin_client.post(generic, {"name": "lance_rows", "format": "lance"}, format="json")
    assert created.status_code == 200, created.content
    table_id = str(Table.objects.get(name="lance_rows").id)
    assert admin_client.delete(f"{generic}/lance_rows").status_code == 204
    assert admin_client.get(f"{generic}/lance_rows").status_code == 404

    assert admin_client.post(f"{UC}/dropped-tables/{table_id}/undrop").status_code == 200
    loaded = admin_client.get(f"{generic}/lance_rows")
    assert loaded.status_code == 200 and loaded.json()["table"]["format"] == "lance"


def test_a_dropped_tables_maintenance_waits_for_its_restore(delta, admin_client, retention, storage_root):
    from maintenance import runs

    info = delta.create_table("unity", "default", "tended")
    plan = runs.request_run(table=Table.objects.get(id=info.table_id), operation="CHECKPOINT", reason="test")
    assert admin_client.delete(f"{UC}/tables/unity.default.tended").status_code == 200
    assert plan.id not in set(runs.due().values_list("id", flat=True))
    assert admin_client.post(f"{UC}/dropped-tables/{info.table_id}/undrop").status_code == 200
    assert plan.id in set(runs.due().values_list("id", flat=True))


def test_dropping_the_schema_ends_the_retention_of_what_was_dropped_in_it(delta, admin_client, retention,
                                                                         storage_root):
    assert admin_client.post(f"{UC}/schemas", {"name": "scratch", "catalog_name": "unity"},
                             format="json").status_code == 200
    info = delta.create_table("unity", "scratch", "tmp")
    assert admin_client.delete(f"{UC}/tables/unity.scratch.tmp").status_code == 200

    assert admin_client.delete(f"{UC}/schemas/unity.scratch").status_code == 200  # nothing live in it

    run_pending_purges()
    assert not Table.with_dropped.filter(id=info.table_id).exists() and _files(info.storage_location) == []
