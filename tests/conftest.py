"""Shared fixtures. Tests run against PostgreSQL when DATABASE_URL points at it (`make test`
does), and every protocol test talks to a real HTTP server (`live_server`) with a real client."""

import socket
import threading

import pytest
from django.core.management import call_command
from django.core.servers.basehttp import WSGIRequestHandler
from django.db import transaction
from django.test import override_settings
from rest_framework.test import APIClient

from catalog.services import principals
from tests.helpers import UC, terminate_other_connections


pytest_plugins = ["tests.s3_server", "tests.change_events_support"]

LONG_RUNNING = ("slow", "spark")


def _uses_the_test_database(item) -> bool:
    fixtures = getattr(item, "fixturenames", ())
    return bool(item.get_closest_marker("django_db")) or any(
        name in fixtures for name in ("db", "transactional_db", "live_server"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Long-running modules that never touch the test database (the ones that start `make run`)
    first, each kept whole and in its order, the rest as pytest-django ordered them (which puts
    tests without the database last): pytest-xdist hands out its groups in this order, and a
    long group handed out last is the whole run's tail."""
    long_modules = {item.module.__name__ for item in items
                    if any(item.get_closest_marker(name) for name in LONG_RUNNING)}
    without_database = {item.module.__name__ for item in items if item.module.__name__ in long_modules}
    without_database -= {item.module.__name__ for item in items if _uses_the_test_database(item)}
    items.sort(key=lambda item: item.module.__name__ not in without_database)


def token_for(name: str, *, admin: bool = False) -> str:
    """A bearer token for principal `name` (created if missing)."""
    principal = principals.ensure_principal(name=name, admin=admin)
    return principals.issue_token(principal=principal)


def bearer_client(token: str | None) -> APIClient:
    """A DRF test client that sends `token` (none: an anonymous client)."""
    client = APIClient()
    if token is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


@pytest.fixture
def bootstrap(db):
    call_command("bootstrap", verbosity=0)


@pytest.fixture
def make_token(db):
    """make_token("bob") → a bearer token for principal bob (created if missing)."""
    return token_for


@pytest.fixture
def make_client(make_token):
    """make_client("bob") → a DRF test client that sends bob's bearer token."""

    def make(name: str | None = None, *, admin: bool = False) -> APIClient:
        return bearer_client(None if name is None else token_for(name, admin=admin))

    return make


def _runs_in_transactions(item: pytest.Item) -> bool:
    """Whether pytest-django runs `item` inside a transaction it rolls back (its `db`), as opposed
    to committing for real and flushing afterwards (`transactional_db`, `live_server`)."""
    marker = item.get_closest_marker("django_db")
    if marker is not None and (marker.kwargs.get("transaction") or marker.args[:1] == (True,)):
        return False
    return not {"transactional_db", "live_server"} & set(getattr(item, "fixturenames", ()))


@pytest.fixture(scope="module")
def module_db(request, django_db_setup, django_db_blocker):
    """An outer transaction for data that every test of a module shares. A module-scoped fixture
    that asks for it builds the data once, inside `with django_db_blocker.unblock():`; each test
    then runs in a savepoint within it (pytest-django's `db`), so what a test changes is undone
    after it, and the shared data is rolled back when the module is done.

    Data that a test commits for real cannot be shared this way: a module that has such tests
    (`transaction=True`, `live_server`) is refused."""
    module = request.node
    committing = [item.name for item in request.session.items
                  if item.getparent(pytest.Module) is module and not _runs_in_transactions(item)]
    if committing:
        raise pytest.UsageError(f"module_db in {module.name}, whose tests {committing[:3]} commit for real")
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
    yield
    with django_db_blocker.unblock():
        transaction.set_rollback(True)
        outer.__exit__(None, None, None)


@pytest.fixture
def admin_client(bootstrap, make_client):
    return make_client("admin", admin=True)


@pytest.fixture
def uc_sdk(live_server, make_token):
    """uc_sdk(ApiClass, name) runs calls of the official `unitycatalog-client` SDK against the live
    server as principal `name`: `uc_sdk.run(CatalogsApi, "admin", lambda api: api.list_catalogs())`.
    One SDK client serves every call (tests/sdk_loop.py), one call at a time, each with a fresh
    token of its principal."""
    from tests.sdk_loop import KeptSDK

    kept = KeptSDK(f"{live_server.url}{UC}", name="uc-sdk")
    one_at_a_time = threading.Lock()

    class SDK:
        def run(self, api_class, name, call, *, admin=None):
            token = make_token(name, admin=(name == "admin") if admin is None else admin)

            async def go():
                kept.client.set_default_header("Authorization", f"Bearer {token}")
                return await call(api_class(kept.client))

            with one_at_a_time:
                return kept.run(go())

    yield SDK()
    kept.close()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The live server's request threads keep their database connection for as long as their client
    keeps its HTTP connection open (CONN_MAX_AGE), and some clients of the tests are never closed:
    those sessions are ended before the test database is dropped, which they would refuse."""
    yield
    from django.db import connection

    if connection.vendor == "postgresql":
        with django_db_blocker.unblock():
            terminate_other_connections()


@pytest.fixture(autouse=True, scope="session")
def live_server_without_nagle():
    """Django's test server sends a response's headers and its body in two writes. On a connection
    the client keeps open, Nagle's algorithm holds the body back until the client acknowledges the
    headers, and the client delays that acknowledgement: every request of a client that keeps its
    connection (urllib3, requests, aiohttp, the JVM) waited for it, 1.6 ms became 66 ms. The
    deployed server (uvicorn, on asyncio) sets TCP_NODELAY on every connection; so does the test
    server here."""
    setup = WSGIRequestHandler.setup

    def setup_without_nagle(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        setup(self)

    WSGIRequestHandler.setup = setup_without_nagle
    yield
    WSGIRequestHandler.setup = setup


@pytest.fixture(autouse=True, scope="session")
def static_files_found_per_request():
    """Every Django test client loads the middleware anew, and WhiteNoise's lists every static file
    when it is made (14 ms): the tests make thousands of clients, a server makes it once. In
    autorefresh mode WhiteNoise finds a file when it is asked for, which serves the same files."""
    with override_settings(WHITENOISE_AUTOREFRESH=True):
        yield


@pytest.fixture(autouse=True)
def fresh_token_cache():
    principals.forget_cached_tokens()


# Rows that post_migrate creates again right after every flush: kept, so it finds them all.
_KEPT_BY_FLUSH = frozenset({"django_content_type", "auth_permission"})


@pytest.fixture(autouse=True, scope="session")
def flush_by_delete():
    """After each test that commits (`transaction=True`, `live_server`), Django empties the
    database with one TRUNCATE of every table, which PostgreSQL makes slow even for a few rows
    (each table gets new files); then post_migrate recreates every content type and permission.
    DELETE empties the same tables in a fraction of that time, and the content types and
    permissions stay as post_migrate made them, so flush has no need to send it again (migrate
    still does). Django declares its foreign keys DEFERRABLE INITIALLY DEFERRED and flush runs in
    one transaction, so the order of the DELETEs does not matter. Flushes that reset sequences or
    cascade to tables outside the list keep TRUNCATE (and post_migrate)."""
    from django.core.management.commands import flush
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush
    post_migrate = flush.emit_post_migrate_signal
    kept = set()  # the aliases whose last flush kept the content types and permissions

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or allow_cascade:
            kept.discard(self.connection.alias)
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        kept.add(self.connection.alias)
        emptied = [table for table in tables if table not in _KEPT_BY_FLUSH]
        # One statement for all: a round trip per table would cost more than the DELETEs.
        return [" ".join(f"DELETE FROM {self.quote_name(table)};" for table in emptied)] if emptied else []

    def emit_post_migrate_signal(verbosity, interactive, database, **kwargs):
        if database not in kept:
            post_migrate(verbosity, interactive, database, **kwargs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DatabaseOperations, "sql_flush", sql_flush)
        patch.setattr(flush, "emit_post_migrate_signal", emit_post_migrate_signal)
        yield


@pytest.fixture(autouse=True)
def celery_eager():
    """Tasks run inline in tests unless a test starts a real worker (see test_workers); set again
    for every test, so a test that turned it off cannot leave it off for the tests after it."""
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


@pytest.fixture(scope="module")
def module_storage_root(tmp_path_factory):
    """storage_root for data that a module's tests share (see module_db)."""
    root = tmp_path_factory.mktemp("storage")
    with override_settings(UCWEB_STORAGE_ROOT=root.as_uri()):
        yield root


@pytest.fixture
def delta(live_server, bootstrap, make_token, storage_root):
    """A Delta client (tests/delta_client.py) acting as the metastore admin."""
    from tests.delta_client import DeltaClient

    client = DeltaClient(f"{live_server.url}{UC}", make_token("admin", admin=True))
    yield client
    client.close()


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

    client = DeltaClient(f"{live_server.url}{UC}", make_token("admin", admin=True))
    yield client
    client.close()
