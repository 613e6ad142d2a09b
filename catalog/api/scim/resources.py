"""SCIM wire shapes (RFC 7643): User, Group, ListResponse, and the discovery documents, built from
the pydantic models of scim2-models where they exist."""

from __future__ import annotations

from scim2_models import (
    AuthenticationScheme,
    Bulk,
    ChangePassword,
    ETag,
    Filter,
    Group,
    Patch,
    ResourceType,
    ServiceProviderConfig,
    Sort,
    User,
)

from catalog.services import scim
from ucweb.errors import SCIM_ROOT

LIST_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
SCIM_MEDIA_TYPE = "application/scim+json"


def _meta(request, resource_type: str, endpoint: str, row, last_modified) -> dict:
    return {"resourceType": resource_type, "created": row.created_at.isoformat(),
            "lastModified": last_modified.isoformat(),
            "location": request.build_absolute_uri(f"{SCIM_ROOT}{endpoint}/{row.id}")}


def user(request, principal) -> dict:
    body = {"schemas": [scim.USER_SCHEMA], "id": str(principal.id), "userName": principal.name,
            "active": principal.active, "groups": scim.groups_of_user(principal),
            "meta": _meta(request, "User", "Users", principal, principal.created_at)}
    if principal.display_name:
        body["displayName"] = principal.display_name
    if principal.external_id:
        body["externalId"] = principal.external_id
    if "@" in principal.name:  # Unity Catalog OSS's clients read a user's address from its primary e-mail
        body["emails"] = [{"value": principal.name, "primary": True}]
    return body


def group(request, row) -> dict:
    body = {"schemas": [scim.GROUP_SCHEMA], "id": str(row.id), "displayName": row.name,
            "members": scim.members_of(row), "meta": _meta(request, "Group", "Groups", row, row.updated_at)}
    if row.external_id:
        body["externalId"] = row.external_id
    return body


def list_response(page: scim.Page, resources: list[dict]) -> dict:
    return {"schemas": [LIST_SCHEMA], "totalResults": page.total, "itemsPerPage": len(resources),
            "startIndex": page.start_index, "Resources": resources}


def _dump(model) -> dict:
    return model.model_dump(mode="json", exclude_none=True, by_alias=True)


def service_provider_config() -> dict:
    config = ServiceProviderConfig(
        documentation_uri=None,
        patch=Patch(supported=True), bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=scim.MAX_COUNT), change_password=ChangePassword(supported=False),
        sort=Sort(supported=False), etag=ETag(supported=False),
        authentication_schemes=[AuthenticationScheme(
            type="oauthbearertoken", name="Bearer token", primary=True,
            description="Authorization: Bearer <token> of a principal (a metastore admin to write).")])
    return _dump(config)


def resource_types(request) -> dict:
    types = [_dump(ResourceType.from_resource(model)) | {
        "meta": {"resourceType": "ResourceType",
                 "location": request.build_absolute_uri(f"{SCIM_ROOT}ResourceTypes/{model.__name__}")}}
        for model in (User, Group)]
    return {"schemas": [LIST_SCHEMA], "totalResults": len(types), "itemsPerPage": len(types), "startIndex": 1,
            "Resources": types}


def schemas() -> dict:
    documents = [_dump(model.to_schema()) for model in (User, Group)]
    return {"schemas": [LIST_SCHEMA], "totalResults": len(documents), "itemsPerPage": len(documents),
            "startIndex": 1, "Resources": documents}
