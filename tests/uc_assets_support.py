"""What the tests of volumes, functions, registered models, credentials and external locations
share: the SDK runner on catalog shop and schema shop.sales (`sdk`), a folder for external
locations (`external_root`), USE grants down to shop.sales, an external location on a
credential, and the check that something is gone.

A test module takes the fixtures with
`from tests.uc_assets_support import sdk, external_root  # noqa: F401 - fixtures`."""

from __future__ import annotations

import pytest
from unitycatalog.client import CredentialsApi, ExternalLocationsApi, SchemasApi
from unitycatalog.client.exceptions import NotFoundException
from unitycatalog.client.models import (
    AwsIamRoleRequest,
    CreateCredentialRequest,
    CreateExternalLocation,
    CreateSchema,
    Privilege,
    SecurableType,
)

from tests.helpers import grant


@pytest.fixture
def sdk(bootstrap, uc_sdk, storage_root):
    """The SDK runner, with catalog shop and schema shop.sales created by the admin."""
    from unitycatalog.client import CatalogsApi
    from unitycatalog.client.models import CreateCatalog

    uc_sdk.run(CatalogsApi, "admin", lambda api: api.create_catalog(CreateCatalog(name="shop")))
    uc_sdk.run(SchemasApi, "admin", lambda api: api.create_schema(CreateSchema(name="sales", catalog_name="shop")))
    return uc_sdk


def assert_missing(sdk, api_class, read, error_code: str) -> None:
    """`read` (a call of `api_class` as the admin) finds nothing: a 404 with `error_code`."""
    with pytest.raises(NotFoundException) as gone:
        sdk.run(api_class, "admin", read)
    assert error_code in gone.value.body


@pytest.fixture
def external_root(tmp_path):
    """A folder outside managed storage for external locations."""
    root = tmp_path / "external"
    root.mkdir()
    return root


def use_schema(sdk, principal, *extra):
    grant(principal, SecurableType.CATALOG, "shop", Privilege.USE_CATALOG)
    grant(principal, SecurableType.SCHEMA, "shop.sales", Privilege.USE_SCHEMA, *extra)


def make_location(sdk, root, name="landing", credential="files"):
    existing = {c.name for c in sdk.run(CredentialsApi, "admin", lambda api: api.list_credentials()).credentials}
    if credential not in existing:
        sdk.run(CredentialsApi, "admin", lambda api: api.create_credential(CreateCredentialRequest(
            name=credential, aws_iam_role=AwsIamRoleRequest(role_arn="arn:aws:iam::123456789012:role/files"))))
    return sdk.run(ExternalLocationsApi, "admin", lambda api: api.create_external_location(
        CreateExternalLocation(name=name, url=root.as_uri(), credential_name=credential)))
