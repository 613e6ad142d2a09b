"""Who may use the Iceberg REST catalog (/api/catalog) through pyiceberg's RestCatalog against a
live server on file:// storage: a service principal with OAuth client credentials
(/v1/oauth/tokens, whose errors are in OAuth's own format), and a principal granted SELECT only,
who reads a table but cannot commit to it."""

from __future__ import annotations

import io

import pytest
import requests
from django.core.management import call_command
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, NoSuchNamespaceError, NoSuchTableError, OAuthError

from catalog.models import Table
from catalog.services import principals
from tests.helpers import UC
from tests.pyiceberg_support import ICEBERG, WAREHOUSE, error_of, file_only, ids, new_table, rows
from tests.pyiceberg_support import catalog, connect, http, storage  # noqa: F401 - the fixtures

pytestmark = pytest.mark.django_db(transaction=True)


@file_only
def test_oauth_client_credentials(live_server, bootstrap, catalog, http):
    out = io.StringIO()
    call_command("issue_token", "etl", "--admin", "--service-principal", stdout=out)
    lines = out.getvalue().splitlines()
    client_id = next(line.split(": ", 1)[1] for line in lines if line.startswith("client_id: "))
    client_secret = next(line.split(": ", 1)[1] for line in lines if line.startswith("client_secret: "))

    uri = f"{live_server.url}{ICEBERG}"
    oauth = {"oauth2-server-uri": f"{uri}/v1/oauth/tokens"}
    etl = RestCatalog("etl", uri=uri, warehouse=WAREHOUSE, credential=f"{client_id}:{client_secret}", **oauth)
    assert ("default",) in etl.list_namespaces()
    new_table(etl, "loaded_by_etl")
    assert Table.objects.get(name="loaded_by_etl").owner == "etl"

    _, other_id, other_secret = principals.create_service_principal(name="reporting")
    reporting = RestCatalog("reporting", uri=uri, warehouse=WAREHOUSE, credential=f"{other_id}:{other_secret}",
                            **oauth)
    # Authenticated, but granted nothing: the warehouse does not exist for it (no existence
    # oracle), and pyiceberg reports the 404 of listing as a missing namespace.
    with pytest.raises(NoSuchNamespaceError):
        reporting.list_namespaces()

    with pytest.raises(OAuthError):
        RestCatalog("bad", uri=uri, warehouse=WAREHOUSE, credential=f"{client_id}:wrong", **oauth)
    bad = requests.post(f"{uri}/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": client_id, "client_secret": "wrong"})
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
    unknown = requests.post(f"{uri}/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": "nobody", "client_secret": client_secret})
    assert unknown.status_code == 401 and unknown.json()["error"] == "invalid_client"
    grant = requests.post(f"{uri}/v1/oauth/tokens", timeout=30, data={"grant_type": "password"})
    assert grant.status_code == 400 and grant.json()["error"] == "unsupported_grant_type"
    # Malformed requests get OAuth's own error format too, never a server error.
    for body in (["client_credentials"], "client_credentials",
                 {"grant_type": "client_credentials", "client_id": client_id, "client_secret": 12345},
                 {"grant_type": "client_credentials", "client_id": [client_id], "client_secret": client_secret},
                 {"grant_type": "client_credentials", "client_id": "a\u0000b", "client_secret": client_secret}):
        malformed = requests.post(f"{uri}/v1/oauth/tokens", json=body, timeout=30)
        assert (malformed.status_code, malformed.json()["error"]) == (400, "invalid_request"), body
    not_json = requests.post(f"{uri}/v1/oauth/tokens", data=b"{", timeout=30,
                             headers={"Content-Type": "application/json"})
    assert (not_json.status_code, not_json.json()["error"]) == (400, "invalid_request")
    good = requests.post(f"{uri}/v1/oauth/tokens", timeout=30, data={
        "grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret,
        "scope": "catalog"})
    token = good.json()
    assert good.status_code == 200 and token["token_type"] == "bearer" and token["expires_in"] > 0
    listed = requests.get(f"{uri}/v1/{WAREHOUSE}/namespaces", timeout=30,
                          headers={"Authorization": f"Bearer {token['access_token']}"})
    assert listed.status_code == 200 and ["default"] in listed.json()["namespaces"]


@file_only
def test_select_only_principal_reads_but_cannot_commit(connect, catalog, http, admin_client):
    table = new_table(catalog)
    table.append(rows((1, "2024-01-01T00:00", "a", 1.0)))
    reader = connect("reader")
    for securable, name, privilege in [("catalog", "unity", "USE CATALOG"), ("schema", "unity.default", "USE SCHEMA"),
                                       ("table", "unity.default.events", "SELECT")]:
        response = admin_client.patch(f"{UC}/permissions/{securable}/{name}",
                                      {"changes": [{"principal": "reader", "add": [privilege]}]}, format="json")
        assert response.status_code == 200, response.content

    assert reader.list_tables("default") == [("default", "events")]
    readable = reader.load_table(("default", "events"))
    assert ids(readable) == [1]
    with pytest.raises(ForbiddenError):
        readable.append(rows((2, "2024-01-01T00:00", "b", 2.0)))
    with pytest.raises(ForbiddenError):
        reader.drop_table(("default", "events"))
    with pytest.raises(ForbiddenError):
        new_table(reader, "mine")
    forbidden = http.as_("reader")("POST", "/namespaces/default/tables/events", {
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    assert error_of(forbidden) == (403, "ForbiddenException")
    assert ids(catalog.load_table(("default", "events"))) == [1]

    stranger = connect("stranger")
    with pytest.raises((ForbiddenError, NoSuchTableError)):
        stranger.load_table(("default", "events"))
