"""Shared fixtures. Tests run against PostgreSQL when DATABASE_URL points at it (`make test`
does), and every protocol test talks to a real HTTP server (`live_server`) with a real client."""

import asyncio

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from catalog.services import principals
from tests.helpers import UC


pytest_plugins = ["tests.s3_server"]


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


@pytest.fixture(autouse=True)
def fresh_token_cache():
    principals.forget_cached_tokens()


@pytest.fixture(autouse=True)
def celery_eager():
    """Tasks run inline in tests unless a test starts a real worker (see test_workers)."""
    from ucweb.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture
def storage_root(tmp_path, settings):
    """A fresh file:// storage root for managed tables."""
    root = tmp_path / "storage"
    root.mkdir()
    settings.UCWEB_STORAGE_ROOT = root.as_uri()
    return root


@pytest.fixture
def delta(live_server, bootstrap, make_token, storage_root):
    """A Delta client (tests/delta_client.py) acting as the metastore admin."""
    from tests.delta_client import DeltaClient

    return DeltaClient(f"{live_server.url}{UC}", make_token("admin", admin=True))


@pytest.fixture
def s3_storage_root(s3_server, settings):
    """Managed storage on the local S3-compatible server (a fresh prefix per test)."""
    import uuid

    for name, value in s3_server.env().items():
        setattr(settings, name, value)
    settings.UCWEB_STORAGE_ROOT = s3_server.url(f"root-{uuid.uuid4().hex[:8]}")
    return settings.UCWEB_STORAGE_ROOT


@pytest.fixture
def delta_s3(live_server, bootstrap, make_token, s3_storage_root):
    from tests.delta_client import DeltaClient

    return DeltaClient(f"{live_server.url}{UC}", make_token("admin", admin=True))
