"""What the modules that drive the Polaris-native API (/api/catalog/polaris/v1) share: the
policy types and their content, the Apache Polaris Python client's generic-table and policy APIs
as one principal, the check of a refused call's Iceberg error envelope, and fixtures for that
client, pyiceberg and the Unity Catalog API against the live server."""

from __future__ import annotations

import json

import pytest
import requests
from apache_polaris.sdk.catalog import ApiClient, Configuration
from apache_polaris.sdk.catalog.api.generic_table_api import GenericTableAPI
from apache_polaris.sdk.catalog.api.policy_api import PolicyAPI
from apache_polaris.sdk.catalog.exceptions import ApiException
from apache_polaris.sdk.catalog.models import (
    AttachPolicyRequest,
    CreatePolicyRequest,
    DetachPolicyRequest,
    PolicyAttachmentTarget,
)
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from tests.helpers import UC


CATALOG = "unity"
COMPACTION = "system.data-compaction"
EXPIRY = "system.snapshot-expiry"
ORPHANS = "system.orphan-file-removal"


def content(**fields) -> str:
    return json.dumps({"version": "2025-02-03", "enable": True, **fields})


class Polaris:
    """The Polaris client's generic-table and policy APIs as one principal."""

    def __init__(self, base_url: str, token: str | None):
        self.client = ApiClient(Configuration(host=f"{base_url}/api/catalog"))
        if token:
            self.client.set_default_header("Authorization", f"Bearer {token}")
        self.tables = GenericTableAPI(self.client)
        self.policies = PolicyAPI(self.client)

    def create_policy(self, namespace, name, policy_type=EXPIRY, body=None, description=None):
        request = CreatePolicyRequest(name=name, type=policy_type, content=body or content(),
                                      description=description)
        return self.policies.create_policy(CATALOG, namespace, request).policy

    def attach(self, namespace, name, kind, path=None, parameters=None):
        target = PolicyAttachmentTarget(type=kind, path=path)
        self.policies.attach_policy(CATALOG, namespace, name,
                                    AttachPolicyRequest(target=target, parameters=parameters))

    def detach(self, namespace, name, kind, path=None):
        self.policies.detach_policy(CATALOG, namespace, name,
                                    DetachPolicyRequest(target=PolicyAttachmentTarget(type=kind, path=path)))

    def applicable(self, namespace=None, target=None, policy_type=None) -> dict:
        result = self.policies.get_applicable_policies(CATALOG, namespace=namespace, target_name=target,
                                                       policy_type=policy_type)
        return {item.policy_type: (item.name, item.inherited, item.namespace)
                for item in result.applicable_policies}


def error_of(call) -> tuple[int, str]:
    """The status and the Iceberg error type of a refused call (the envelope is checked too)."""
    with pytest.raises(ApiException) as raised:
        call()
    body = json.loads(raised.value.body)
    assert set(body) == {"error"}, body
    assert body["error"]["code"] == raised.value.status, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
    return raised.value.status, body["error"]["type"]


@pytest.fixture
def connect(live_server, bootstrap, make_token, storage_root):
    def connect(name: str | None = "admin", *, admin: bool | None = None) -> Polaris:
        token = None if name is None else make_token(name, admin=(name == "admin") if admin is None else admin)
        return Polaris(live_server.url, token)

    return connect


@pytest.fixture
def polaris(connect) -> Polaris:
    return connect()


@pytest.fixture
def iceberg(live_server, bootstrap, make_token, storage_root) -> RestCatalog:
    return RestCatalog("ucweb", uri=f"{live_server.url}/api/catalog", warehouse=CATALOG,
                       token=make_token("admin", admin=True))


@pytest.fixture
def uc(live_server, make_token):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {make_token('admin', admin=True)}"

    def call(method, path, **kwargs):
        return session.request(method, f"{live_server.url}{UC}{path}", **kwargs)

    return call


ICEBERG_SCHEMA = Schema(NestedField(1, "id", LongType(), required=True))
