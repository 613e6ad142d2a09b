"""Managed and external volumes, driven by the official `unitycatalog-client` SDK against a live
server: their lifecycle, paging, who sees and may do what, their temporary (file://)
credentials, and the external locations an external volume needs."""

from __future__ import annotations

import pytest
from unitycatalog.client import GrantsApi, TemporaryCredentialsApi, VolumesApi
from unitycatalog.client.exceptions import (ApiException, BadRequestException, ForbiddenException,
                                            NotFoundException)
from unitycatalog.client.models import (CreateVolumeRequestContent, GenerateTemporaryVolumeCredential,
                                        Privilege, SecurableType, UpdateVolumeRequestContent, VolumeOperation,
                                        VolumeType)

from catalog.models import AuditEvent, Grant, Volume
from maintenance.models import PurgeRequest
from tests.helpers import grant
from tests.uc_assets_support import assert_missing, make_location, use_schema
from tests.uc_assets_support import external_root, sdk  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)


# == volumes =======================================================================================
def test_managed_volume_lifecycle(sdk, storage_root):
    created = sdk.run(VolumesApi, "admin", lambda api: api.create_volume(CreateVolumeRequestContent(
        catalog_name="shop", schema_name="sales", name="raw", volume_type=VolumeType.MANAGED, comment="landing")))
    assert created.full_name == "shop.sales.raw" and created.volume_type == VolumeType.MANAGED
    assert created.storage_location == f"{storage_root.as_uri()}/volumes/{created.volume_id}"
    assert created.owner == "admin" and created.created_at > 0 and created.updated_at >= created.created_at

    fetched = sdk.run(VolumesApi, "admin", lambda api: api.get_volume("shop.sales.raw"))
    assert fetched.volume_id == created.volume_id and fetched.comment == "landing"

    renamed = sdk.run(VolumesApi, "admin", lambda api: api.update_volume(
        "shop.sales.raw", UpdateVolumeRequestContent(new_name="bronze", comment="renamed")))
    assert renamed.full_name == "shop.sales.bronze" and renamed.comment == "renamed"
    assert_missing(sdk, VolumesApi, lambda api: api.get_volume("shop.sales.raw"), "VOLUME_DOES_NOT_EXIST")

    with pytest.raises(ApiException) as duplicate:
        sdk.run(VolumesApi, "admin", lambda api: api.create_volume(CreateVolumeRequestContent(
            catalog_name="shop", schema_name="sales", name="bronze", volume_type=VolumeType.MANAGED)))
    assert duplicate.value.status == 409 and "ALREADY_EXISTS" in duplicate.value.body

    credentials = sdk.run(TemporaryCredentialsApi, "admin", lambda api: api.generate_temporary_volume_credentials(
        GenerateTemporaryVolumeCredential(volume_id=created.volume_id, operation=VolumeOperation.WRITE_VOLUME)))
    assert credentials.url == created.storage_location and credentials.aws_temp_credentials is None
    assert credentials.expiration_time > 0

    sdk.run(VolumesApi, "admin", lambda api: api.delete_volume("shop.sales.bronze"))
    assert not Volume.objects.exists()
    purge = PurgeRequest.objects.get(url=created.storage_location)
    assert purge.done_at is not None  # Celery runs eagerly in tests
    assert AuditEvent.objects.filter(action="deleteVolume", securable_name="shop.sales.bronze").exists()


def test_volume_pagination_and_visibility(sdk):
    for index in range(5):
        sdk.run(VolumesApi, "admin", lambda api, i=index: api.create_volume(CreateVolumeRequestContent(
            catalog_name="shop", schema_name="sales", name=f"v{i}", volume_type=VolumeType.MANAGED)))
    seen, token = [], None
    while True:
        page = sdk.run(VolumesApi, "admin", lambda api: api.list_volumes(
            catalog_name="shop", schema_name="sales", max_results=2, page_token=token))
        assert len(page.volumes) <= 2
        seen += [v.name for v in page.volumes]
        token = page.next_page_token
        if not token:
            break
    assert seen == [f"v{i}" for i in range(5)]

    # What bob may not see does not exist for him (no existence oracle).
    with pytest.raises(NotFoundException):
        sdk.run(VolumesApi, "bob", lambda api: api.list_volumes(catalog_name="shop", schema_name="sales"))
    use_schema(sdk, "bob")
    assert sdk.run(VolumesApi, "bob", lambda api: api.list_volumes(catalog_name="shop", schema_name="sales")).volumes == []
    with pytest.raises(NotFoundException):
        sdk.run(VolumesApi, "bob", lambda api: api.get_volume("shop.sales.v1"))
    grant("bob", SecurableType.VOLUME, "shop.sales.v1", Privilege.READ_VOLUME)
    listed = sdk.run(VolumesApi, "bob", lambda api: api.list_volumes(catalog_name="shop", schema_name="sales"))
    assert [v.name for v in listed.volumes] == ["v1"]
    assert sdk.run(VolumesApi, "bob", lambda api: api.get_volume("shop.sales.v1")).name == "v1"
    permissions = sdk.run(GrantsApi, "admin", lambda api: api.get(SecurableType.VOLUME, "shop.sales.v1"))
    assert [(a.principal, a.privileges) for a in permissions.privilege_assignments] == [
        ("bob", [Privilege.READ_VOLUME])]

    # Reading is not owning: bob may not rename, write or delete it.
    with pytest.raises(ForbiddenException):
        sdk.run(VolumesApi, "bob", lambda api: api.update_volume("shop.sales.v1", UpdateVolumeRequestContent(
            new_name="mine")))
    volume_id = Volume.objects.get(name="v1").id
    with pytest.raises(ForbiddenException):
        sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_volume_credentials(
            GenerateTemporaryVolumeCredential(volume_id=str(volume_id), operation=VolumeOperation.WRITE_VOLUME)))
    read = sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_volume_credentials(
        GenerateTemporaryVolumeCredential(volume_id=str(volume_id), operation=VolumeOperation.READ_VOLUME)))
    assert read.url.endswith(f"/volumes/{volume_id}")
    with pytest.raises(ForbiddenException):
        sdk.run(VolumesApi, "bob", lambda api: api.delete_volume("shop.sales.v1"))

    # With CREATE VOLUME bob creates his own, which he owns.
    grant("bob", SecurableType.SCHEMA, "shop.sales", Privilege.CREATE_VOLUME)
    mine = sdk.run(VolumesApi, "bob", lambda api: api.create_volume(CreateVolumeRequestContent(
        catalog_name="shop", schema_name="sales", name="bobs", volume_type=VolumeType.MANAGED)))
    assert mine.owner == "bob"
    sdk.run(VolumesApi, "bob", lambda api: api.delete_volume("shop.sales.bobs"))
    # The grant on v1 goes with the volume.
    sdk.run(VolumesApi, "admin", lambda api: api.delete_volume("shop.sales.v1"))
    assert not Grant.objects.filter(securable_id=volume_id).exists()


def test_external_volume_needs_an_external_location(sdk, external_root, storage_root):
    path = (external_root / "drop").as_uri()
    body = CreateVolumeRequestContent(catalog_name="shop", schema_name="sales", name="drop",
                                      volume_type=VolumeType.EXTERNAL, storage_location=path)
    use_schema(sdk, "bob", Privilege.CREATE_VOLUME)
    with pytest.raises(ForbiddenException) as uncovered:
        sdk.run(VolumesApi, "bob", lambda api: api.create_volume(body))
    assert "No external location contains" in uncovered.value.body

    make_location(sdk, external_root)
    with pytest.raises(ForbiddenException) as missing:
        sdk.run(VolumesApi, "bob", lambda api: api.create_volume(body))
    assert "CREATE EXTERNAL VOLUME" in missing.value.body
    grant("bob", SecurableType.EXTERNAL_LOCATION, "landing", Privilege.CREATE_EXTERNAL_VOLUME)
    volume = sdk.run(VolumesApi, "bob", lambda api: api.create_volume(body))
    assert volume.volume_type == VolumeType.EXTERNAL and volume.storage_location == path

    # Nothing else may share its files, and managed storage is never external.
    for location in (path, f"{path}/inner", external_root.as_uri()):
        with pytest.raises(BadRequestException):
            sdk.run(VolumesApi, "admin", lambda api, url=location: api.create_volume(CreateVolumeRequestContent(
                catalog_name="shop", schema_name="sales", name="other", volume_type=VolumeType.EXTERNAL,
                storage_location=url)))
    with pytest.raises(BadRequestException) as managed:
        sdk.run(VolumesApi, "admin", lambda api: api.create_volume(CreateVolumeRequestContent(
            catalog_name="shop", schema_name="sales", name="other", volume_type=VolumeType.EXTERNAL,
            storage_location=(storage_root / "x").as_uri())))
    assert "managed storage" in managed.value.body

    # An external volume's files stay when it is dropped.
    sdk.run(VolumesApi, "bob", lambda api: api.delete_volume("shop.sales.drop"))
    assert not PurgeRequest.objects.filter(url=path).exists()
