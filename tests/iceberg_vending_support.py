"""What the modules on Iceberg engines with no storage keys of their own share: a table schema and
rows of it, and the `lake` fixture: managed storage on SeaweedFS with STS and IAM
(tests/seaweedfs_sts.py; a test module that uses `lake` imports the module-scoped `sts_s3_server`
as well), principals with their grants, and clients that hold no S3 keys. When a test ends, it
checks that the server's own keys are in no response, no log record and no audit event."""

from __future__ import annotations

import logging
import uuid
from urllib.parse import urlsplit

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from catalog.models import AuditEvent, Catalog, Principal
from catalog.services import grants


ICEBERG = "/api/catalog"
WAREHOUSE = "unity"
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False))
ARROW = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])


def rows(*items):
    return pa.Table.from_pylist([{"id": i, "name": n} for i, n in items], schema=ARROW)


class Recorder:
    """Every response body the tests received, to search for the server's keys."""

    def __init__(self):
        self.bodies: list[str] = []

    def hook(self, response, *args, **kwargs):
        self.bodies.append(response.text)


@pytest.fixture
def lake(sts_s3_server, settings, live_server, bootstrap, make_token, caplog):
    """Managed storage on SeaweedFS with STS; principals admin, writer (SELECT and MODIFY) and
    reader (SELECT) on schema unity.default; clients that hold no S3 keys."""
    for name, value in sts_s3_server.env().items():
        setattr(settings, name, value)
    settings.UCWEB_STORAGE_ROOT = sts_s3_server.url(f"run-{uuid.uuid4().hex[:8]}")
    caplog.set_level(logging.DEBUG)
    recorder = Recorder()
    tokens = {"admin": make_token("admin", admin=True), "writer": make_token("writer"), "reader": make_token("reader")}
    admin = Principal.objects.get(name="admin")
    catalog = Catalog.objects.get(name="unity")
    for principal, privileges in (("writer", ["USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY", "CREATE TABLE"]),
                                  ("reader", ["USE CATALOG", "USE SCHEMA", "SELECT"])):
        grants.update_assignments(securable_type="catalog", securable=catalog, caller=admin, access=None,
                                  changes=[{"principal": principal, "add": privileges, "remove": []}])

    class Lake:
        server = sts_s3_server
        uri = f"{live_server.url}{ICEBERG}"

        def catalog(self, name="admin", **properties) -> RestCatalog:
            catalog = RestCatalog(f"ucweb-{name}", uri=self.uri, warehouse=WAREHOUSE, token=tokens[name],
                                  **properties)
            catalog._session.hooks["response"].append(recorder.hook)
            return catalog

        def http(self, method, path, name="admin", delegation="vended-credentials", **kwargs):
            headers = {"Authorization": f"Bearer {tokens[name]}"}
            if delegation:
                headers["X-Iceberg-Access-Delegation"] = delegation
            response = requests.request(method, f"{self.uri}/v1/{WAREHOUSE}{path}", headers=headers, timeout=60,
                                        **kwargs)
            recorder.hook(response)
            return response

        def s3(self, config):
            return sts_s3_server.client(access_key=config["s3.access-key-id"],
                                        secret_key=config["s3.secret-access-key"],
                                        session_token=config["s3.session-token"])

        def key(self, url):
            return urlsplit(url).path.lstrip("/")

        token = tokens

    yield Lake()
    # The server's own keys are in no response and no log record of the test.
    secrets = (sts_s3_server.secret_key, sts_s3_server.access_key)
    for body in recorder.bodies:
        assert not any(secret in body for secret in secrets)
    for record in caplog.records:
        assert not any(secret in record.getMessage() for secret in secrets), record.getMessage()
    for event in AuditEvent.objects.all():
        assert not any(secret in str(event.details) for secret in secrets)
