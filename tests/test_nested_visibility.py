"""Listings agree with the checks in nested namespaces: what is granted on a namespace holds in the
namespaces inside it, for what a caller may list as for what they may load.

Principal bob holds USE CATALOG on catalog `unity` and, on namespace `outer` only, USE SCHEMA,
SELECT, EXECUTE and APPLY POLICY. Namespace `outer.inner` holds an Iceberg table, a generic
table, a registered model and a policy; bob may load each of them, so each listing shows them
to him. Carol, with USE CATALOG alone, sees none of them.
"""

from __future__ import annotations

import pytest

from catalog.models import RegisteredModel, Schema
from tests.helpers import UC, grant

ICE = "/api/catalog/v1/unity"
POLARIS = "/api/catalog/polaris/v1/unity"
INNER = "outer%1Finner"
SCHEMA_JSON = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}


def _ok(response):
    assert response.status_code in (200, 204), response.content
    return response


@pytest.fixture
def nested(admin_client, make_client, storage_root, tmp_path):
    for levels in (["outer"], ["outer", "inner"]):
        _ok(admin_client.post(f"{ICE}/namespaces", {"namespace": levels}, format="json"))
    _ok(admin_client.post(f"{ICE}/namespaces/{INNER}/tables", {"name": "t", "schema": SCHEMA_JSON}, format="json"))
    _ok(admin_client.post(f"{POLARIS}/namespaces/{INNER}/generic-tables",
                          {"name": "g", "format": "lance", "base-location": f"file://{tmp_path}/landing/g"}, format="json"))
    # The Unity Catalog API creates models in one-level schemas only; the row stands for one
    # another API (or an earlier layout) put in the nested namespace.
    RegisteredModel.objects.create(schema=Schema.objects.get(path="outer.inner"), name="m", owner="admin",
                                   storage_location=f"file://{tmp_path}/models/m")
    _ok(admin_client.post(f"{POLARIS}/namespaces/{INNER}/policies", {
        "name": "expiry", "type": "system.snapshot-expiry", "content": '{"version": "2025-02-03", "enable": true}',
    }, format="json"))
    grant("bob", "catalog", "unity", "USE CATALOG")
    grant("bob", "schema", "unity.outer", "USE SCHEMA", "SELECT", "EXECUTE", "APPLY POLICY")
    grant("carol", "catalog", "unity", "USE CATALOG")
    return {"bob": make_client("bob"), "carol": make_client("carol")}


def _listings(client) -> dict:
    """What each listing of the nested namespace shows."""
    def names(response, key, field="name"):
        return sorted(item[field] for item in _ok(response).json()[key])

    return {
        "uc tables": names(client.get(f"{UC}/tables", {"catalog_name": "unity", "schema_name": "outer.inner"}),
                           "tables"),
        "uc schemas": names(client.get(f"{UC}/schemas", {"catalog_name": "unity"}), "schemas", "full_name"),
        "uc models": names(client.get(f"{UC}/models"), "registered_models", "full_name"),
        "iceberg tables": names(client.get(f"{ICE}/namespaces/{INNER}/tables"), "identifiers"),
        "iceberg namespaces": sorted(_ok(client.get(f"{ICE}/namespaces", {"parent": "outer"})).json()["namespaces"]),
        "generic tables": names(client.get(f"{POLARIS}/namespaces/{INNER}/generic-tables"), "identifiers"),
        "policies": names(client.get(f"{POLARIS}/namespaces/{INNER}/policies"), "identifiers"),
    }


def test_grants_on_an_outer_namespace_show_what_lies_in_the_inner_one(nested):
    bob = nested["bob"]
    # What bob may load...
    _ok(bob.get(f"{UC}/tables/unity.outer.inner.t"))
    _ok(bob.get(f"{ICE}/namespaces/{INNER}/tables/t"))
    _ok(bob.get(f"{POLARIS}/namespaces/{INNER}/generic-tables/g"))
    _ok(bob.get(f"{UC}/models/unity.outer.inner.m"))
    _ok(bob.get(f"{POLARIS}/namespaces/{INNER}/policies/expiry"))
    # ... every listing shows him.
    assert _listings(bob) == {
        "uc tables": ["g", "t"],
        "uc schemas": ["unity.outer", "unity.outer.inner"],
        "uc models": ["unity.outer.inner.m"],
        "iceberg tables": ["t"],
        "iceberg namespaces": [["outer", "inner"]],
        "generic tables": ["g"],
        "policies": ["expiry"],
    }


def test_use_catalog_alone_shows_nothing_inside_the_namespaces(nested):
    carol = nested["carol"]
    assert carol.get(f"{UC}/tables/unity.outer.inner.t").status_code == 404
    assert carol.get(f"{UC}/models/unity.outer.inner.m").status_code == 404
    assert _ok(carol.get(f"{UC}/models")).json().get("registered_models", []) == []
    assert _ok(carol.get(f"{UC}/schemas", {"catalog_name": "unity"})).json().get("schemas", []) == []
    assert carol.get(f"{ICE}/namespaces/{INNER}/tables").status_code == 404
    assert _ok(carol.get(f"{ICE}/namespaces", {"parent": ""})).json()["namespaces"] == []
