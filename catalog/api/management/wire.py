"""Bodies of the Polaris management API (/api/management/v1), as in Polaris's management spec, for
the OpenAPI document, and the rendering of its answers. Components are prefixed Polaris so that
they do not collide with the Unity Catalog API's. Requests are parsed and checked by
catalog.services.polaris_management (clearer errors)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from catalog.models import Catalog, Group, Principal
from catalog.services import polaris_management
from catalog.services.polaris_grants import PolarisGrant
from ucweb.bodies import Body


class _Camel(Body):
    model_config = ConfigDict(alias_generator=to_camel)


def _millis(moment) -> int | None:
    return int(moment.timestamp() * 1000) if moment else None


class PolarisManagementErrorModel(Body):
    message: str
    type: str
    code: int


class PolarisManagementErrorResponse(Body):
    error: PolarisManagementErrorModel


class PolarisStorageConfigInfo(_Camel):
    storage_type: Literal["S3", "GCS", "AZURE", "FILE"]
    allowed_locations: list[str] = None


class _Entity(_Camel):
    create_timestamp: int = None
    last_update_timestamp: int = None
    entity_version: int = None


class PolarisCatalog(_Entity):
    type: Literal["INTERNAL", "EXTERNAL"]
    name: str
    properties: dict[str, str]
    storage_config_info: PolarisStorageConfigInfo


class PolarisCatalogs(Body):
    catalogs: list[PolarisCatalog]


class PolarisCreateCatalogRequest(Body):
    catalog: PolarisCatalog


class PolarisUpdateCatalogRequest(_Camel):
    current_entity_version: int = None
    properties: dict[str, str] = None
    storage_config_info: PolarisStorageConfigInfo


class _Named(_Entity):
    """What every Polaris entity a name addresses has: principals, principal roles, catalog roles."""

    name: str
    properties: dict[str, str] = None


class PolarisPrincipal(_Named):
    client_id: str = None


class PolarisPrincipals(Body):
    principals: list[PolarisPrincipal]


class PolarisCreatePrincipalRequest(_Camel):
    principal: PolarisPrincipal
    credential_rotation_required: bool = None


class PolarisPrincipalCredentials(_Camel):
    client_id: str
    client_secret: str


class PolarisPrincipalWithCredentials(Body):
    principal: PolarisPrincipal
    credentials: PolarisPrincipalCredentials


class PolarisPrincipalRole(_Named):
    federated: bool = None


class PolarisPrincipalRoles(Body):
    roles: list[PolarisPrincipalRole]


class PolarisPrincipalRoleRequest(_Camel):
    principal_role: PolarisPrincipalRole


class PolarisCatalogRole(_Named):
    pass


class PolarisCatalogRoles(Body):
    roles: list[PolarisCatalogRole]


class PolarisCatalogRoleRequest(_Camel):
    catalog_role: PolarisCatalogRole


class PolarisGrantResource(_Camel):
    type: Literal["catalog", "namespace", "table", "view", "policy"]
    privilege: str = Field(description="A Polaris privilege; see the README for those ucweb maps.")
    namespace: list[str] = None
    table_name: str = None


class PolarisGrantRequest(Body):
    grant: PolarisGrantResource


class PolarisGrantResources(Body):
    grants: list[PolarisGrantResource]


def catalog(row: Catalog) -> dict:
    location = row.storage_root or ""
    return {"type": "INTERNAL", "name": row.name,
            "properties": {**(row.properties or {}), polaris_management.DEFAULT_BASE_LOCATION: location},
            "storageConfigInfo": {"storageType": polaris_management.storage_type_of(location),
                                  "allowedLocations": [location] if location else []},
            "createTimestamp": _millis(row.created_at), "lastUpdateTimestamp": _millis(row.updated_at),
            "entityVersion": 1}


def catalogs(rows) -> dict:
    return {"catalogs": [catalog(row) for row in rows]}


def principal(row: Principal) -> dict:
    body = {"name": row.name, "properties": {}, "entityVersion": 1}
    if row.client_id:
        body["clientId"] = row.client_id
    created = getattr(row, "created_at", None)
    if created:
        body["createTimestamp"] = _millis(created)
    return body


def principals(rows) -> dict:
    return {"principals": [principal(row) for row in rows]}


def with_credentials(row: Principal, client_id: str, client_secret: str) -> dict:
    return {"principal": principal(row), "credentials": {"clientId": client_id, "clientSecret": client_secret}}


def role(row: Group) -> dict:
    name = polaris_management.catalog_role_name(row) if row.catalog_id else row.name
    body = {"name": name, "properties": row.properties or {}, "createTimestamp": _millis(row.created_at),
            "lastUpdateTimestamp": _millis(row.updated_at), "entityVersion": 1}
    if not row.catalog_id:
        body["federated"] = False
    return body


def roles(rows) -> dict:
    return {"roles": [role(row) for row in rows]}


def grant(item: PolarisGrant) -> dict:
    body = {"type": item.type, "privilege": item.privilege}
    securable = item.securable
    if item.type == "namespace":
        body["namespace"] = securable.levels
    elif item.type == "table":
        body["namespace"], body["tableName"] = securable.schema.levels, securable.name
    return body


def grants(items) -> dict:
    return {"grants": [grant(item) for item in items]}
