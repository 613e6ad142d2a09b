"""The audit trail answers "who was refused what": one vocabulary (AuditAction) for a change and
its refusal, through every protocol, the refusal on the trail of the securable it was refused on,
and reads of data credentials (vending, remote signing) recorded like changes.

bob holds USE CATALOG and USE SCHEMA on `lake.s` and SELECT on its tables `t` (external) and `ice`
(Iceberg); carol holds only the USE privileges, so the tables are hidden from her. Each case sends
a request as the refused principal, then the same request as the admin, and compares the two
audit events."""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ImproperlyConfigured

from catalog.api.base import MUTATING, CatalogAPIView
from catalog.choices import AuditAction, AuditOutcome
from catalog.models import AuditEvent, Schema, Table
from catalog.services import audit
from tests.conftest import bearer_client, token_for
from tests.helpers import UC, api_routes, external_table_body, grant

ICE = "/api/catalog/v1"
DELTA = f"{UC}/delta/v1"
POLARIS = "/api/catalog/polaris/v1"
# The routes that hand out access to data (not the storage credentials securables of /credentials).
DATA_CREDENTIALS = re.compile(r"(tables/[^/]+/credentials|temporary-[a-z-]+-credentials)$")
SCHEMA_JSON = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}


def test_every_change_and_every_credentials_read_names_its_action():
    views = [(route, view) for route, view in api_routes() if issubclass(view, CatalogAPIView)]
    assert len(views) > 50
    for route, view in views:
        for method in MUTATING:
            if hasattr(view, method):
                assert method.upper() in view.audit_actions or view.audit_action is not CatalogAPIView.audit_action, (
                    route, method)
        if DATA_CREDENTIALS.search(route) and hasattr(view, "get"):
            assert AuditAction(view.audit_actions["GET"]), route


def test_a_name_outside_the_vocabulary_is_a_bug(db):
    before = AuditEvent.objects.count()
    with pytest.raises(ValueError):
        audit.record(principal="bob", action="postTables")
    with pytest.raises(ImproperlyConfigured, match="names no audit action for POST"):
        type("UnnamedView", (CatalogAPIView,), {"post": lambda self, request: None})
    assert AuditEvent.objects.count() == before


@pytest.fixture
def lake(db, bootstrap, storage_root, tmp_path):
    admin = bearer_client(token_for("admin", admin=True))
    landing = (tmp_path / "landing").as_uri()
    for path, body in ((f"{UC}/catalogs", {"name": "lake"}), (f"{UC}/schemas", {"name": "s", "catalog_name": "lake"}),
                       (f"{UC}/credentials", {"name": "cred", "purpose": "STORAGE",
                                              "aws_iam_role": {"role_arn": "arn:aws:iam::123456789012:role/lake"}}),
                       (f"{UC}/external-locations", {"name": "landing", "url": landing, "credential_name": "cred"})):
        assert admin.post(path, body, format="json").status_code == 200
    location = f"{landing}/t"
    response = admin.post(f"{UC}/tables", external_table_body("t", location, catalog="lake", schema="s"), format="json")
    assert response.status_code == 200, response.content
    response = admin.post(f"{ICE}/lake/namespaces/s/tables", {"name": "ice", "schema": SCHEMA_JSON}, format="json")
    assert response.status_code == 200, response.content
    response = admin.post(f"{POLARIS}/lake/namespaces/s/generic-tables", {"name": "gen", "format": "delta"},
                          format="json")
    assert response.status_code == 200, response.content
    for name in ("bob", "carol"):
        grant(name, "catalog", "lake", "USE CATALOG")
        grant(name, "schema", "lake.s", "USE SCHEMA")
    grant("bob", "table", "lake.s.t", "SELECT")
    grant("bob", "table", "lake.s.ice", "SELECT")
    return {"admin": admin, "bob": bearer_client(token_for("bob")), "carol": bearer_client(token_for("carol"))}


def _table(name):
    return Table.objects.get(schema__catalog__name="lake", schema__name="s", name=name).id


def _schema(_name=None):
    return Schema.objects.get(catalog__name="lake", name="s").id


COMMIT = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "b"}}]}
CASES = [
    # (refused principal, method, path, body, action, refused status, the securable refused on)
    ("bob", "delete", f"{UC}/tables/lake.s.t", None, AuditAction.DELETE_TABLE, 403, lambda: _table("t")),
    ("bob", "post", f"{UC}/tables", external_table_body("t2", "file:///nowhere/t2", catalog="lake", schema="s"),
     AuditAction.CREATE_TABLE, 403, _schema),
    ("bob", "patch", f"{UC}/permissions/table/lake.s.t", {"changes": [{"principal": "bob", "add": ["MODIFY"]}]},
     AuditAction.UPDATE_PERMISSIONS, 403, lambda: _table("t")),
    ("carol", "post", f"{UC}/temporary-table-credentials", {"table_id": "t", "operation": "READ"},
     AuditAction.GENERATE_TEMPORARY_TABLE_CREDENTIALS, 404, lambda: _table("t")),
    ("carol", "get", f"{DELTA}/catalogs/lake/schemas/s/tables/t/credentials?operation=READ", None,
     AuditAction.GENERATE_TEMPORARY_TABLE_CREDENTIALS, 404, lambda: _table("t")),
    ("bob", "delete", f"{DELTA}/catalogs/lake/schemas/s/tables/t", None, AuditAction.DELETE_TABLE, 403,
     lambda: _table("t")),
    ("bob", "post", f"{ICE}/lake/namespaces/s/tables/ice", COMMIT, AuditAction.COMMIT_ICEBERG_TABLE, 403,
     lambda: _table("ice")),
    ("bob", "delete", f"{ICE}/lake/namespaces/s/tables/ice", None, AuditAction.DROP_ICEBERG_TABLE, 403,
     lambda: _table("ice")),
    ("bob", "post", f"{ICE}/lake/namespaces/s/tables", {"name": "ice2", "schema": SCHEMA_JSON},
     AuditAction.CREATE_ICEBERG_TABLE, 403, _schema),
    ("bob", "delete", f"{POLARIS}/lake/namespaces/s/generic-tables/gen", None, AuditAction.DROP_GENERIC_TABLE, 404,
     lambda: _table("gen")),
]


@pytest.mark.parametrize("who, method, path, body, action, status, refused_on", CASES,
                         ids=[f"{case[1].upper()} {case[2]}" for case in CASES])
def test_a_refusal_and_the_success_are_one_action(lake, who, method, path, body, action, status, refused_on):
    if body is not None and body.get("table_id") == "t":
        body = {**body, "table_id": str(_table("t"))}
    securable_id = refused_on()
    send = getattr(lake[who], method)
    response = send(path, body, format="json") if body is not None else send(path)
    assert response.status_code == status, response.content
    refusal = AuditEvent.objects.filter(principal=who).latest("id")
    assert (refusal.action, refusal.securable_id) == (action, securable_id)
    assert refusal.outcome == AuditOutcome.DENIED

    send = getattr(lake["admin"], method)
    response = send(path, body, format="json") if body is not None else send(path)
    assert response.status_code in (200, 204), response.content
    success = AuditEvent.objects.filter(principal="admin").latest("id")
    assert (success.action, success.outcome) == (action, AuditOutcome.SUCCESS)
    if refused_on is not _schema:  # a create is refused on the schema, and succeeds as the new table
        assert success.securable_id == securable_id
