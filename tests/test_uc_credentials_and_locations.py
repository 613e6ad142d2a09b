"""Credentials and external locations, driven by the official `unitycatalog-client` SDK against a
live server: their lifecycle and overlaps, who may create and see them, the external location
rule of the services underneath, temporary path credentials on file:// locations, and secrets
that neither the API nor the admin pages ever show."""

from __future__ import annotations

import json

import pytest
from unitycatalog.client import CredentialsApi, ExternalLocationsApi, TemporaryCredentialsApi
from unitycatalog.client.exceptions import (ApiException, BadRequestException, ForbiddenException,
                                            NotFoundException)
from unitycatalog.client.models import (AwsIamRoleRequest, CreateCredentialRequest, CreateExternalLocation,
                                        CredentialPurpose, GenerateTemporaryPathCredential, PathOperation,
                                        Privilege, SecurableType, UpdateCredentialRequest,
                                        UpdateExternalLocation)

from catalog.choices import Privilege as P
from catalog.models import AuditEvent, Credential, ExternalLocation, Grant, Principal
from catalog import locations
from catalog.services import principals, secrets
from ucweb.errors import InvalidParameter, PermissionDenied
from tests.helpers import UC, grant
from tests.uc_assets_support import assert_missing, make_location
from tests.uc_assets_support import external_root, sdk  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)


# == credentials and external locations ===========================================================
def test_credentials(sdk, admin_client):
    created = sdk.run(CredentialsApi, "admin", lambda api: api.create_credential(CreateCredentialRequest(
        name="lake", comment="the lake", purpose=CredentialPurpose.STORAGE,
        aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::123456789012:role/lake"))))
    assert created.aws_iam_role.role_arn == "arn:aws:iam::123456789012:role/lake"
    assert created.aws_iam_role.external_id == created.id and created.full_name == "lake"
    assert created.purpose == CredentialPurpose.STORAGE and created.owner == "admin"

    # Static keys (beyond the spec, for S3-compatible servers) are stored encrypted, never shown.
    response = admin_client.post(f"{UC}/credentials", {
        "name": "minio", "aws_static_keys": {"access_key_id": "AKIAEXAMPLE", "secret_access_key": "s3cr3t-value"},
        "endpoint_url": "http://127.0.0.1:9000", "purpose": "SERVICE"}, format="json")
    assert response.status_code == 200, response.content
    assert "s3cr3t-value" not in response.content.decode()
    assert response.json()["aws_static_keys"] == {"access_key_id": "AKIAEXAMPLE"}
    row = Credential.objects.get(name="minio")
    assert "s3cr3t-value" not in row.aws_secret_access_key_encrypted
    assert secrets.decrypt(row.aws_secret_access_key_encrypted) == "s3cr3t-value"
    for path in (f"{UC}/credentials", f"{UC}/credentials/minio"):
        assert "s3cr3t-value" not in admin_client.get(path).content.decode()
    assert "s3cr3t-value" not in json.dumps(list(AuditEvent.objects.values_list("details", flat=True)))

    storage = sdk.run(CredentialsApi, "admin", lambda api: api.list_credentials(purpose=CredentialPurpose.STORAGE))
    assert [c.name for c in storage.credentials] == ["lake"]

    updated = sdk.run(CredentialsApi, "admin", lambda api: api.update_credential("lake", UpdateCredentialRequest(
        new_name="warehouse", comment="renamed", aws_iam_role=AwsIamRoleRequest(
            role_arn="arn:aws:iam::123456789012:role/warehouse"))))
    assert updated.name == "warehouse" and updated.aws_iam_role.role_arn.endswith("/warehouse")

    # Only those with CREATE STORAGE CREDENTIAL create them; only grantees see them.
    with pytest.raises(ForbiddenException):
        sdk.run(CredentialsApi, "bob", lambda api: api.create_credential(CreateCredentialRequest(
            name="bobs", aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::123456789012:role/b"))))
    grant("bob", SecurableType.METASTORE, "ucweb", Privilege.CREATE_STORAGE_CREDENTIAL)
    mine = sdk.run(CredentialsApi, "bob", lambda api: api.create_credential(CreateCredentialRequest(
        name="bobs", aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::123456789012:role/b"))))
    assert mine.owner == "bob"
    assert [c.name for c in sdk.run(CredentialsApi, "bob", lambda api: api.list_credentials()).credentials] == ["bobs"]
    with pytest.raises(NotFoundException):
        sdk.run(CredentialsApi, "bob", lambda api: api.get_credential("warehouse"))
    grant("bob", SecurableType.CREDENTIAL, "warehouse", Privilege.CREATE_EXTERNAL_LOCATION)
    assert sdk.run(CredentialsApi, "bob", lambda api: api.get_credential("warehouse")).name == "warehouse"
    with pytest.raises(ForbiddenException):
        sdk.run(CredentialsApi, "bob", lambda api: api.delete_credential("warehouse"))

    sdk.run(CredentialsApi, "admin", lambda api: api.delete_credential("warehouse"))
    assert_missing(sdk, CredentialsApi, lambda api: api.get_credential("warehouse"), "CREDENTIAL_DOES_NOT_EXIST")
    assert not Grant.objects.filter(securable_name="warehouse").exists()


def test_external_locations(sdk, external_root, storage_root):
    (external_root / "a").mkdir()
    location = make_location(sdk, external_root / "a")
    assert location.url == (external_root / "a").as_uri() and location.credential_name == "files"
    assert location.credential_id == str(Credential.objects.get(name="files").id)

    def create(name, url):
        return sdk.run(ExternalLocationsApi, "admin", lambda api: api.create_external_location(
            CreateExternalLocation(name=name, url=url, credential_name="files")))

    # No overlap: not the same URL, not above it, not below it, not managed storage.
    for url in ((external_root / "a").as_uri(), external_root.as_uri(), (external_root / "a" / "b").as_uri(),
                storage_root.as_uri(), (storage_root / "x").as_uri(), "file:///"):
        with pytest.raises(BadRequestException) as overlap:
            create("other", url)
        assert "overlaps" in overlap.value.body
    sibling = create("sibling", (external_root / "ab").as_uri())
    assert sibling.url.endswith("/ab")

    with pytest.raises(ApiException) as duplicate:
        create("sibling", (external_root / "c").as_uri())
    assert duplicate.value.status == 409

    listed = sdk.run(ExternalLocationsApi, "admin", lambda api: api.list_external_locations(max_results=1))
    assert [loc.name for loc in listed.external_locations] == ["landing"] and listed.next_page_token

    updated = sdk.run(ExternalLocationsApi, "admin", lambda api: api.update_external_location(
        "sibling", UpdateExternalLocation(new_name="archive", comment="cold", url=(external_root / "d").as_uri())))
    assert (updated.name, updated.comment) == ("archive", "cold") and updated.url.endswith("/d")

    # Creating one needs CREATE EXTERNAL LOCATION on the metastore and on the credential.
    use = CreateExternalLocation(name="bobs", url=(external_root / "e").as_uri(), credential_name="files")
    with pytest.raises(ForbiddenException):
        sdk.run(ExternalLocationsApi, "bob", lambda api: api.create_external_location(use))
    grant("bob", SecurableType.METASTORE, "ucweb", Privilege.CREATE_EXTERNAL_LOCATION)
    # A credential bob holds nothing on does not exist for him.
    with pytest.raises(NotFoundException) as on_credential:
        sdk.run(ExternalLocationsApi, "bob", lambda api: api.create_external_location(use))
    assert "CREDENTIAL_DOES_NOT_EXIST" in on_credential.value.body
    grant("bob", SecurableType.CREDENTIAL, "files", Privilege.CREATE_EXTERNAL_LOCATION)
    assert sdk.run(ExternalLocationsApi, "bob", lambda api: api.create_external_location(use)).owner == "bob"
    assert [loc.name for loc in sdk.run(ExternalLocationsApi, "bob",
                                        lambda api: api.list_external_locations()).external_locations] == ["bobs"]
    with pytest.raises(NotFoundException):
        sdk.run(ExternalLocationsApi, "bob", lambda api: api.get_external_location("landing"))

    # A credential in use stays unless forced; forced, its locations go with it.
    with pytest.raises(BadRequestException):
        sdk.run(CredentialsApi, "admin", lambda api: api.delete_credential("files"))
    sdk.run(ExternalLocationsApi, "admin", lambda api: api.delete_external_location("archive"))
    assert_missing(sdk, ExternalLocationsApi, lambda api: api.get_external_location("archive"),
                   "EXTERNAL_LOCATION_DOES_NOT_EXIST")
    sdk.run(CredentialsApi, "admin", lambda api: api.delete_credential("files", force=True))
    assert not ExternalLocation.objects.exists()


def test_require_external_location(sdk, external_root, storage_root):
    make_location(sdk, external_root)
    bob = principals.ensure_principal(name="bob")
    admin = Principal.objects.get(name="admin")
    inside = (external_root / "t" / "x").as_uri()
    with pytest.raises(PermissionDenied):
        locations.require_external_location(bob, inside, P.CREATE_EXTERNAL_TABLE)
    grant("bob", SecurableType.EXTERNAL_LOCATION, "landing", Privilege.CREATE_EXTERNAL_TABLE)
    assert locations.require_external_location(bob, inside, P.CREATE_EXTERNAL_TABLE).name == "landing"
    assert locations.require_external_location(bob, inside.replace("file:///", "/"),
                                                        P.CREATE_EXTERNAL_TABLE).name == "landing"
    with pytest.raises(PermissionDenied):
        locations.require_external_location(bob, inside, P.WRITE_FILES)
    with pytest.raises(PermissionDenied):
        locations.require_external_location(bob, "file:///elsewhere/t", P.CREATE_EXTERNAL_TABLE)
    # Admins may name paths outside every external location, but never managed storage.
    assert locations.require_external_location(admin, "file:///elsewhere/t", P.READ_FILES) is None
    with pytest.raises(InvalidParameter):
        locations.require_external_location(admin, (storage_root / "tables" / "x").as_uri(), P.READ_FILES)
    with pytest.raises(PermissionDenied):
        locations.require_external_location(bob, "gs://bucket/x", P.CREATE_EXTERNAL_TABLE)
    assert locations.require_external_location(admin, "gs://bucket/x", P.CREATE_EXTERNAL_TABLE) is None
    with pytest.raises(InvalidParameter):
        locations.require_external_location(bob, "not a url", P.READ_FILES)


def test_path_credentials_on_files(sdk, external_root):
    make_location(sdk, external_root)
    url = (external_root / "raw" / "2024").as_uri()
    body = GenerateTemporaryPathCredential(url=url, operation=PathOperation.PATH_READ)
    principals.ensure_principal(name="bob")
    with pytest.raises(ForbiddenException):
        sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_path_credentials(body))
    grant("bob", SecurableType.EXTERNAL_LOCATION, "landing", Privilege.READ_FILES)
    answer = sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_path_credentials(body))
    assert answer.url == url and answer.aws_temp_credentials is None and answer.expiration_time > 0
    with pytest.raises(ForbiddenException):
        sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_path_credentials(
            GenerateTemporaryPathCredential(url=url, operation=PathOperation.PATH_READ_WRITE)))
    assert AuditEvent.objects.filter(action="generateTemporaryPathCredentials", principal="bob",
                                    outcome="SUCCESS").count() == 1


def test_admin_pages_never_show_secrets(admin_client, bootstrap, client, django_user_model):
    from catalog.services import credentials

    admin = Principal.objects.get(name="admin")
    credentials.create_credential(caller=admin, name="minio", aws_static_keys={
        "access_key_id": "AKIAEXAMPLE", "secret_access_key": "very-secret-value"})
    user = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(user)
    credential = Credential.objects.get(name="minio")
    for url in ("/admin/catalog/credential/", f"/admin/catalog/credential/{credential.id}/change/",
                "/admin/catalog/credential/?q=minio"):
        page = client.get(url)
        assert page.status_code == 200, url
        text = page.content.decode()
        assert "very-secret-value" not in text and credential.aws_secret_access_key_encrypted not in text
    for url in ("/admin/catalog/volume/", "/admin/catalog/function/", "/admin/catalog/registeredmodel/",
                "/admin/catalog/modelversion/", "/admin/catalog/externallocation/?q=x"):
        assert client.get(url).status_code == 200, url
