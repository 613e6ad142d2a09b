"""Shared fixtures. Tests run against PostgreSQL when DATABASE_URL points at it (`make test`
does), and every protocol test talks to a real HTTP server (`live_server`) with a real client."""

import asyncio

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from catalog.services import principals

UC = "/api/2.1/unity-catalog"


@pytest.fixture
def bootstrap(db):
    call_command("bootstrap", verbosity=0)


@pytest.fixture
def make_token(db):
    """make_token("bob") → a bearer token for principal bob (created if missing)."""

    def make(name: str, *, admin: bool = False) -> str:
        principal = principals.ensure_principal(name=name, admin=admin)
        return principals.issue_token(principal=principal)

    return make


@pytest.fixture
def make_client(make_token):
    """make_client("bob") → a DRF test client that sends bob's bearer token."""

    def make(name: str | None = None, *, admin: bool = False) -> APIClient:
        client = APIClient()
        if name is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token(name, admin=admin)}")
        return client

    return make


@pytest.fixture
def admin_client(bootstrap, make_client):
    return make_client("admin", admin=True)


@pytest.fixture
def uc_sdk(live_server, make_token):
    """uc_sdk(ApiClass, name) runs calls of the official `unitycatalog-client` SDK against the live
    server as principal `name`: `uc_sdk.run(CatalogsApi, "admin", lambda api: api.list_catalogs())`."""
    from unitycatalog.client import ApiClient, Configuration

    class SDK:
        host = f"{live_server.url}{UC}"

        def run(self, api_class, name, call, *, admin=None):
            token = make_token(name, admin=(name == "admin") if admin is None else admin)

            async def go():
                async with ApiClient(Configuration(host=self.host)) as client:
                    client.set_default_header("Authorization", f"Bearer {token}")
                    return await call(api_class(client))

            return asyncio.run(go())

    return SDK()
