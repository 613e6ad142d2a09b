"""Wire types of the Polaris management API (/api/management/v1), as in Polaris's management
spec. Components are prefixed Polaris so that they do not collide with the Unity Catalog API's.
Requests are parsed and checked by catalog.services.polaris_management (clearer errors)."""

from __future__ import annotations

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from catalog.models import Catalog, Group, Principal
from catalog.services import polaris_management
from catalog.services.polaris_management import PolarisGrant


def _strings(required: bool = False):
    return serializers.DictField(child=serializers.CharField(), required=required)


def _millis(moment) -> int | None:
    return int(moment.timestamp() * 1000) if moment else None


ErrorResponse = inline_serializer("PolarisManagementErrorResponse", {"error": inline_serializer(
    "PolarisManagementErrorModel", {"message": serializers.CharField(), "type": serializers.CharField(),
                                    "code": serializers.IntegerField()})})

StorageConfigInfo = inline_serializer("PolarisStorageConfigInfo", {
    "storageType": serializers.ChoiceField(choices=["S3", "GCS", "AZURE", "FILE"]),
    "allowedLocations": serializers.ListField(child=serializers.CharField(), required=False)})
CatalogBody = inline_serializer("PolarisCatalog", {
    "type": serializers.ChoiceField(choices=["INTERNAL", "EXTERNAL"]), "name": serializers.CharField(),
    "properties": _strings(required=True), "storageConfigInfo": StorageConfigInfo,
    "createTimestamp": serializers.IntegerField(required=False),
    "lastUpdateTimestamp": serializers.IntegerField(required=False),
    "entityVersion": serializers.IntegerField(required=False)})
Catalogs = inline_serializer("PolarisCatalogs", {"catalogs": serializers.ListField(child=CatalogBody)})
CreateCatalogRequest = inline_serializer("PolarisCreateCatalogRequest", {"catalog": CatalogBody})
UpdateCatalogRequest = inline_serializer("PolarisUpdateCatalogRequest", {
    "currentEntityVersion": serializers.IntegerField(required=False), "properties": _strings(),
    "storageConfigInfo": StorageConfigInfo})

PrincipalBody = inline_serializer("PolarisPrincipal", {
    "name": serializers.CharField(), "clientId": serializers.CharField(required=False), "properties": _strings(),
    "createTimestamp": serializers.IntegerField(required=False),
    "lastUpdateTimestamp": serializers.IntegerField(required=False),
    "entityVersion": serializers.IntegerField(required=False)})
Principals = inline_serializer("PolarisPrincipals", {"principals": serializers.ListField(child=PrincipalBody)})
CreatePrincipalRequest = inline_serializer("PolarisCreatePrincipalRequest", {
    "principal": PrincipalBody, "credentialRotationRequired": serializers.BooleanField(required=False)})
PrincipalWithCredentials = inline_serializer("PolarisPrincipalWithCredentials", {
    "principal": PrincipalBody, "credentials": inline_serializer("PolarisPrincipalCredentials", {
        "clientId": serializers.CharField(), "clientSecret": serializers.CharField()})})

RoleBody = inline_serializer("PolarisPrincipalRole", {
    "name": serializers.CharField(), "federated": serializers.BooleanField(required=False),
    "properties": _strings(), "createTimestamp": serializers.IntegerField(required=False),
    "lastUpdateTimestamp": serializers.IntegerField(required=False),
    "entityVersion": serializers.IntegerField(required=False)})
PrincipalRoles = inline_serializer("PolarisPrincipalRoles", {"roles": serializers.ListField(child=RoleBody)})
PrincipalRoleRequest = inline_serializer("PolarisPrincipalRoleRequest", {"principalRole": RoleBody})
CatalogRoleBody = inline_serializer("PolarisCatalogRole", {
    "name": serializers.CharField(), "properties": _strings(),
    "createTimestamp": serializers.IntegerField(required=False),
    "lastUpdateTimestamp": serializers.IntegerField(required=False),
    "entityVersion": serializers.IntegerField(required=False)})
CatalogRoles = inline_serializer("PolarisCatalogRoles", {"roles": serializers.ListField(child=CatalogRoleBody)})
CatalogRoleRequest = inline_serializer("PolarisCatalogRoleRequest", {"catalogRole": CatalogRoleBody})

GrantBody = inline_serializer("PolarisGrantResource", {
    "type": serializers.ChoiceField(choices=["catalog", "namespace", "table", "view", "policy"]),
    "privilege": serializers.CharField(help_text="A Polaris privilege; see the README for those ucweb maps."),
    "namespace": serializers.ListField(child=serializers.CharField(), required=False),
    "tableName": serializers.CharField(required=False)})
GrantRequest = inline_serializer("PolarisGrantRequest", {"grant": GrantBody})
GrantResources = inline_serializer("PolarisGrantResources", {"grants": serializers.ListField(child=GrantBody)})


def catalog(row: Catalog) -> dict:
    location = row.storage_root or ""
    return {"type": "INTERNAL", "name": row.name,
            "properties": {**(row.properties or {}), polaris_management.DEFAULT_BASE_LOCATION: location},
            "storageConfigInfo": {"storageType": polaris_management.storage_type_of(location),
                                  "allowedLocations": [location] if location else []},
            "createTimestamp": _millis(row.created_at), "lastUpdateTimestamp": _millis(row.updated_at),
            "entityVersion": 1}


def principal(row: Principal) -> dict:
    body = {"name": row.name, "properties": {}, "entityVersion": 1}
    if row.client_id:
        body["clientId"] = row.client_id
    created = getattr(row, "created_at", None)
    if created:
        body["createTimestamp"] = _millis(created)
    return body


def with_credentials(row: Principal, client_id: str, client_secret: str) -> dict:
    return {"principal": principal(row), "credentials": {"clientId": client_id, "clientSecret": client_secret}}


def role(row: Group) -> dict:
    name = polaris_management.catalog_role_name(row) if row.catalog_id else row.name
    body = {"name": name, "properties": row.properties or {}, "createTimestamp": _millis(row.created_at),
            "lastUpdateTimestamp": _millis(row.updated_at), "entityVersion": 1}
    if not row.catalog_id:
        body["federated"] = False
    return body


def grant(item: PolarisGrant) -> dict:
    body = {"type": item.type, "privilege": item.privilege}
    securable = item.securable
    if item.type == "namespace":
        body["namespace"] = securable.levels
    elif item.type == "table":
        body["namespace"], body["tableName"] = securable.schema.levels, securable.name
    return body
