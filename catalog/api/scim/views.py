"""SCIM 2.0 (RFC 7644) at /api/1.0/unity-control/scim2, where Unity Catalog OSS serves its SCIM
API: Users and Me as there, Groups and the discovery endpoints beside them. Writes need a metastore
admin (catalog.services.scim); errors are in the SCIM envelope (ucweb.errors.scim_body)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from catalog.api.base import CatalogAPIView
from catalog.api.scim import resources
from catalog.choices import AuditAction
from catalog.services import scim
from ucweb.errors import scim_exception_handler

TAGS = ["SCIM"]
LIST_PARAMETERS = [
    OpenApiParameter("filter", str, description='One comparison: `userName eq "x"`, `displayName eq "x"`, '
                                                '`externalId eq "x"` or `id eq "x"` (Groups: no userName).'),
    OpenApiParameter("startIndex", int, description="1-based index of the first result (default 1)."),
    OpenApiParameter("count", int, description=f"Results per page (default {scim.DEFAULT_COUNT}, "
                                               f"at most {scim.MAX_COUNT})."),
]
ERRORS = {status: OpenApiTypes.OBJECT for status in (400, 401, 403, 404, 409)}


class ScimJSONRenderer(JSONRenderer):
    media_type = resources.SCIM_MEDIA_TYPE


class ScimView(CatalogAPIView):
    renderer_classes = [ScimJSONRenderer, JSONRenderer]

    def get_exception_handler(self):
        return scim_exception_handler


def _documented(operation_id: str, *, request=None, status: int = 200, parameters=None, summary: str = ""):
    return extend_schema(operation_id=operation_id, tags=TAGS, request=request, parameters=parameters,
                         summary=summary, responses={status: OpenApiTypes.OBJECT, **ERRORS})


class UsersView(ScimView):
    audit_securable_type = "principal"
    audit_actions = {"POST": AuditAction.CREATE_PRINCIPAL}

    @_documented("scimListUsers", parameters=LIST_PARAMETERS, summary="List users (principals)")
    def get(self, request):
        page = scim.list_users(filter_text=request.query_params.get("filter"),
                               start_index=request.query_params.get("startIndex"),
                               count=request.query_params.get("count"))
        return Response(resources.list_response(page, [resources.user(request, row) for row in page.resources]))

    @_documented("scimCreateUser", request=OpenApiTypes.OBJECT, status=201, summary="Create a user (admin)")
    def post(self, request):
        user = scim.create_user(caller=request.user, body=self.body(request))
        body = resources.user(request, user)
        return Response(body, status=201, headers={"Location": body["meta"]["location"]})


class UserView(ScimView):
    audit_securable_type = "principal"
    audit_actions = {"PUT": AuditAction.UPDATE_PRINCIPAL, "PATCH": AuditAction.UPDATE_PRINCIPAL,
                     "DELETE": AuditAction.DELETE_PRINCIPAL}

    @_documented("scimGetUser", summary="Get a user")
    def get(self, request, user_id):
        return Response(resources.user(request, scim.get_user(user_id)))

    @_documented("scimReplaceUser", request=OpenApiTypes.OBJECT, summary="Replace a user (admin)")
    def put(self, request, user_id):
        return Response(resources.user(request, scim.replace_user(caller=request.user, user_id=user_id,
                                                                  body=self.body(request))))

    @_documented("scimPatchUser", request=OpenApiTypes.OBJECT,
                 summary="Change active, displayName or externalId (admin)")
    def patch(self, request, user_id):
        return Response(resources.user(request, scim.patch_user(caller=request.user, user_id=user_id,
                                                                body=self.body(request))))

    @_documented("scimDeleteUser", status=204, summary="Delete a user and revoke its grants (admin)")
    def delete(self, request, user_id):
        scim.delete_user(caller=request.user, user_id=user_id)
        return Response(status=204)


class MeView(ScimView):
    @_documented("scimGetMe", summary="The caller's own user")
    def get(self, request):
        return Response(resources.user(request, scim.get_user(request.user.id)))


class GroupsView(ScimView):
    audit_securable_type = "group"
    audit_actions = {"POST": AuditAction.CREATE_GROUP}

    @_documented("scimListGroups", parameters=LIST_PARAMETERS, summary="List groups")
    def get(self, request):
        page = scim.list_groups(filter_text=request.query_params.get("filter"),
                                start_index=request.query_params.get("startIndex"),
                                count=request.query_params.get("count"))
        return Response(resources.list_response(page, [resources.group(request, row) for row in page.resources]))

    @_documented("scimCreateGroup", request=OpenApiTypes.OBJECT, status=201, summary="Create a group (admin)")
    def post(self, request):
        group = scim.create_group(caller=request.user, body=self.body(request))
        body = resources.group(request, group)
        return Response(body, status=201, headers={"Location": body["meta"]["location"]})


class GroupView(ScimView):
    audit_securable_type = "group"
    audit_actions = {"PUT": AuditAction.UPDATE_GROUP, "PATCH": AuditAction.UPDATE_GROUP,
                     "DELETE": AuditAction.DELETE_GROUP}

    @_documented("scimGetGroup", summary="Get a group")
    def get(self, request, group_id):
        return Response(resources.group(request, scim.get_group(group_id)))

    @_documented("scimReplaceGroup", request=OpenApiTypes.OBJECT, summary="Replace a group (admin)")
    def put(self, request, group_id):
        return Response(resources.group(request, scim.replace_group(caller=request.user, group_id=group_id,
                                                                    body=self.body(request))))

    @_documented("scimPatchGroup", request=OpenApiTypes.OBJECT, summary="Change members, displayName (admin)")
    def patch(self, request, group_id):
        return Response(resources.group(request, scim.patch_group(caller=request.user, group_id=group_id,
                                                                  body=self.body(request))))

    @_documented("scimDeleteGroup", status=204, summary="Delete a group and revoke its grants (admin)")
    def delete(self, request, group_id):
        scim.delete_group(caller=request.user, group_id=group_id)
        return Response(status=204)


class ServiceProviderConfigView(ScimView):
    @_documented("scimServiceProviderConfig", summary="What this SCIM service supports")
    def get(self, request):
        return Response(resources.service_provider_config())


class ResourceTypesView(ScimView):
    @_documented("scimResourceTypes", summary="User and Group")
    def get(self, request):
        return Response(resources.resource_types(request))


class SchemasView(ScimView):
    @_documented("scimSchemas", summary="The User and Group schemas")
    def get(self, request):
        return Response(resources.schemas())
