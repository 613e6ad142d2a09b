"""What the bad-input tests of the Unity Catalog namespace API share: the data they run against,
built once per module (`admin_token`, `world`), the bodies they start from, sending a request,
and the check that a refusal is a 4xx in the UC envelope ({"error_code", "message", "details"})
that changed nothing.

A test module takes the fixtures with
`from tests.uc_bad_input_support import admin_token, world  # noqa: F401 - fixtures`: each module
then builds the data once for itself (see `module_db` in tests/conftest.py)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.management import call_command

from catalog.choices import AuditOutcome
from catalog.models import AuditEvent, Catalog, Column, Grant, Metastore, Principal, Schema, Table
from tests.conftest import bearer_client, token_for
from tests.helpers import UC, external_table_body, rows


def admin_world(requests, *, principals=()) -> str:
    """Bootstraps, creates `principals`, then sends `requests` ((method, path, body) under the UC
    prefix) as the metastore admin, each answered 200; returns the admin's token. A module-scoped
    fixture calls it once, inside `django_db_blocker.unblock()` (see `module_db`)."""
    call_command("bootstrap", verbosity=0)
    token = token_for("admin", admin=True)
    admin_client = bearer_client(token)
    for name in principals:
        token_for(name)
    for method, path, body in requests:
        response = getattr(admin_client, method)(f"{UC}{path}", body, format="json")
        assert response.status_code == 200, (path, response.content)
    return token


@pytest.fixture(scope="module")
def admin_token(module_db, django_db_blocker):
    """unity.default (bootstrap), catalog shop, schema shop.sales, table shop.sales.trips (two
    columns), principal bob with USE CATALOG on shop: built once for the module."""
    with django_db_blocker.unblock():
        return admin_world([
            ("post", "/catalogs", {"name": "shop", "comment": "original", "properties": {"k": "v"}}),
            ("post", "/schemas", {"name": "sales", "catalog_name": "shop", "comment": "original"}),
            ("post", "/tables", table_body()),
            ("patch", "/permissions/catalog/shop", {"changes": [{"principal": "bob", "add": ["USE CATALOG"]}]}),
        ], principals=["bob"])


@pytest.fixture
def world(db, admin_token):
    """The admin's client on the module's shared catalog shop (see admin_token)."""
    return bearer_client(admin_token)


def table_body(**overrides) -> dict:
    """An EXTERNAL table; each body gets a folder of its own, since no two tables may share one."""
    fields = {"name": "trips", "comment": "trips", "properties": {"k": "v"}, **overrides}
    return external_table_body(fields.pop("name"), f"file:///tmp/ucweb-tests/{uuid.uuid4().hex}", **fields)


def column(**overrides) -> dict:
    return {"name": "c", "type_name": "INT", "type_text": "int", "position": 0, **overrides}


def snapshot() -> dict:
    counts = {m.__name__: m.objects.count() for m in (Catalog, Schema, Table, Column, Grant)}
    # A refused request may be audited as FAILED or DENIED, never as a success.
    successes = AuditEvent.objects.filter(outcome=AuditOutcome.SUCCESS).count()
    return {"counts": counts, "rows": rows(Metastore, Principal, Catalog, Schema, Table, Column, Grant),
            "audited successes": successes}


def send(client, method: str, path: str, body=None, *, raw: bytes | str | None = None,
         content_type: str = "application/json"):
    url = f"{UC}{path}"
    if raw is not None:
        return getattr(client, method)(url, data=raw, content_type=content_type)
    if body is None:
        return getattr(client, method)(url)
    return getattr(client, method)(url, data=json.dumps(body), content_type=content_type)


def assert_refused(response, before, status=400, error_code=None):
    assert 400 <= response.status_code < 500, (response.status_code, response.content)
    if status is not None:
        assert response.status_code == status, (response.status_code, response.content)
    body = response.json()
    assert set(body) == {"error_code", "message", "details"}, body
    assert isinstance(body["error_code"], str) and body["error_code"]
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["details"], list)
    if error_code is not None:
        assert body["error_code"] == error_code, body
    assert snapshot() == before, "a refused request changed the database"


def _case_id(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} chars)"
