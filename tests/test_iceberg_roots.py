"""The Iceberg REST catalog at the roots other catalogs serve theirs at (ucweb.mounts): Unity
Catalog OSS's /api/2.1/unity-catalog/iceberg and Databricks' /api/2.1/unity-catalog/iceberg-rest.
pyiceberg's RestCatalog with either root as its `uri` gets a token from the OAuth endpoint under
it, lists, creates, appends and reads; a principal without grants is refused exactly as under
/api/catalog; the remote signer it is handed lies under the root it came in through; DuckDB
attaches one of them. Unknown paths under the roots answer the Iceberg envelope, and the Unity
Catalog API around them is unchanged."""

from __future__ import annotations

import boto3
import pytest
import requests
from botocore import UNSIGNED
from botocore.config import Config
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, NoSuchNamespaceError, NoSuchTableError
from pyiceberg.io.fsspec import S3V4RestSigner

from catalog.services import principals
from tests.duckdb_sessions import iceberg_duckdb
from tests.helpers import UC, grant
from tests.pyiceberg_support import ICEBERG, SCHEMA, WAREHOUSE, error_of, ids, rows

pytestmark = pytest.mark.django_db(transaction=True)

ROOTS = [f"{UC}/iceberg", f"{UC}/iceberg-rest"]


def _catalog(uri: str, name: str, **properties) -> RestCatalog:
    return RestCatalog(name, uri=uri, warehouse=WAREHOUSE, **properties)


@pytest.mark.parametrize("root", ROOTS)
def test_pyiceberg_through_the_root(root, live_server, bootstrap, storage_root, make_token):
    uri = f"{live_server.url}{root}"
    _, client_id, client_secret = principals.create_service_principal(name="etl", admin=True)
    etl = _catalog(uri, "etl", credential=f"{client_id}:{client_secret}",
                   **{"oauth2-server-uri": f"{uri}/v1/oauth/tokens"})
    assert ("default",) in etl.list_namespaces()
    table = etl.create_table(("default", "events"), schema=SCHEMA)
    table.append(rows((1, "2024-01-01T10:00", "a", 1.5), (2, "2024-01-02T10:00", "b", 2.5)))
    assert ids(etl.load_table(("default", "events"))) == [1, 2]
    own_root = _catalog(f"{live_server.url}{ICEBERG}", "own", token=make_token("admin", admin=True))
    assert ids(own_root.load_table(("default", "events"))) == [1, 2]

    stranger = _catalog(uri, "stranger", token=make_token("stranger"))
    with pytest.raises(NoSuchNamespaceError):
        stranger.list_namespaces()
    with pytest.raises(NoSuchTableError):
        stranger.load_table(("default", "events"))
    # The refusal is the one /api/catalog answers, byte for byte.
    headers = {"Authorization": f"Bearer {make_token('stranger')}"}
    answers = [requests.get(f"{live_server.url}{base}/v1/{WAREHOUSE}/namespaces/default/tables/events",
                            headers=headers, timeout=30) for base in (root, ICEBERG)]
    assert (answers[0].status_code, answers[0].content) == (answers[1].status_code, answers[1].content)
    assert error_of(answers[0]) == (404, "NoSuchWarehouseException")

    for securable, name, privilege in [("catalog", "unity", "USE CATALOG"), ("schema", "unity.default", "USE SCHEMA"),
                                       ("table", "unity.default.events", "SELECT")]:
        grant("reader", securable, name, privilege)
    readable = _catalog(uri, "reader", token=make_token("reader")).load_table(("default", "events"))
    assert ids(readable) == [1, 2]
    with pytest.raises(ForbiddenError):
        readable.append(rows((3, "2024-01-03T10:00", "c", 3.5)))
    assert ids(etl.load_table(("default", "events"))) == [1, 2]


def test_config_and_errors_are_those_of_the_iceberg_catalog(live_server, bootstrap, make_token):
    headers = {"Authorization": f"Bearer {make_token('admin', admin=True)}"}

    def get(path, **kwargs):
        return requests.get(f"{live_server.url}{path}", timeout=30, **kwargs)

    config = get(f"{ICEBERG}/v1/config", headers=headers, params={"warehouse": WAREHOUSE}).json()
    for root in ROOTS:
        assert get(f"{root}/v1/config", headers=headers, params={"warehouse": WAREHOUSE}).json() == config
        assert error_of(get(f"{root}/v1/{WAREHOUSE}/namespaces/nope", headers=headers)) == (
            404, "NoSuchNamespaceException")
        assert error_of(get(f"{root}/v1/{WAREHOUSE}/namespaces")) == (401, "NotAuthorizedException")
        for unknown in (f"{root}/v1/nothing/here/at/all", f"{root}/v2/config", f"{root}/", root):
            assert error_of(get(unknown, headers=headers)) == (404, "NotFoundException"), unknown
        token = requests.post(f"{live_server.url}{root}/v1/oauth/tokens", data={"grant_type": "password"}, timeout=30)
        assert (token.status_code, token.json()["error"]) == (400, "unsupported_grant_type")
        policies = get(f"{root}/polaris/v1/{WAREHOUSE}/namespaces/default/policies", headers=headers)
        assert policies.status_code == 200 and policies.json()["identifiers"] == []

    # The Unity Catalog API around the roots answers as before, in its own envelope.
    catalogs = get(f"{UC}/catalogs", headers=headers)
    assert catalogs.status_code == 200 and "unity" in [c["name"] for c in catalogs.json()["catalogs"]]
    for missing in (f"{UC}/tables/unity.default.iceberg", f"{UC}/icebergs", f"{UC}/iceberg-restful/v1/config"):
        body = get(missing, headers=headers)
        assert body.status_code == 404 and set(body.json()) == {"error_code", "message", "details"}, missing


@pytest.mark.s3
def test_the_remote_signer_lies_under_the_root_the_client_came_in_through(
        live_server, bootstrap, make_token, s3_server, s3_storage_root):
    token = make_token("admin", admin=True)
    root = ROOTS[0]
    uri = f"{live_server.url}{root}"
    writer = _catalog(uri, "writer", token=token, **{
        "s3.access-key-id": s3_server.access_key, "s3.secret-access-key": s3_server.secret_key})
    table = writer.create_table(("default", "signed"), schema=SCHEMA)
    table.append(rows((1, "2024-01-01T10:00", "a", 1.5)))

    loaded = requests.get(f"{uri}/v1/{WAREHOUSE}/namespaces/default/tables/signed", timeout=30, headers={
        "Authorization": f"Bearer {token}", "X-Iceberg-Access-Delegation": "remote-signing"}).json()
    config = loaded["config"]
    assert config["s3.signer.uri"] == uri and not config["s3.signer.endpoint"].startswith("/")
    # pyiceberg's own signer, configured from that answer alone, signs a read of the table's metadata.
    signer = S3V4RestSigner({"uri": uri, "token": token, **config})
    client = boto3.session.Session().client(
        "s3", endpoint_url=config["s3.endpoint"], region_name=config["s3.region"],
        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    client.meta.events.register("before-sign.s3", signer)
    key = loaded["metadata-location"].removeprefix(f"s3://{s3_server.bucket}/")
    assert client.get_object(Bucket=s3_server.bucket, Key=key)["Body"].read().startswith(b"{")


def test_duckdb_attaches_the_unity_catalog_root(live_server, bootstrap, storage_root, make_token):
    con = iceberg_duckdb(f"{live_server.url}{ROOTS[0]}", make_token("admin", admin=True))
    con.execute("CREATE TABLE lake.default.trips AS SELECT range AS id FROM range(5)")
    assert con.sql("SELECT count(*), sum(id) FROM lake.default.trips").fetchone() == (5, 10)
    con.close()
    reread = iceberg_duckdb(f"{live_server.url}{ROOTS[1]}", make_token("admin", admin=True))
    assert reread.sql("SELECT max(id) FROM lake.default.trips").fetchone() == (4,)
