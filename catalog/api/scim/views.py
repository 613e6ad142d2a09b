"""SCIM 2.0 (RFC 7644) at /api/1.0/unity-control/scim2, where Unity Catalog OSS serves its SCIM
API: Users and Me as there, Groups and the discovery endpoints beside them. Writes need a metastore
admin (catalog.services.scim); errors are in the SCIM envelope (ucweb.errors.scim_body)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
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


# A SCIM collection: GET answers one page of what `filter` selects, POST creates one (201, with
# its Location). Subclasses name the services and `render` (a row → its SCIM resource); the
# operations and audit actions are named by each view (a docstring here would be published as
# theirs).
class Collection:
    render = list_service = create_service = None

    def get(self, request):
        page = self.list_service(filter_text=request.query_params.get("filter"),
                                 start_index=request.query_params.get("startIndex"),
                                 count=request.query_params.get("count"))
        return Response(resources.list_response(page, [self.render(request, row) for row in page.resources]))

    def post(self, request):
        body = self.render(request, self.create_service(caller=request.user, body=self.body(request)))
        return Response(body, status=201, headers={"Location": body["meta"]["location"]})


# One SCIM resource, named by the id in the path (`user_id`, `group_id`: the keyword the
# services take too).
class Resource:
    render = get_service = replace_service = patch_service = delete_service = None

    def get(self, request, **path):
        (resource_id,) = path.values()
        return Response(self.render(request, self.get_service(resource_id)))

    def put(self, request, **path):
        return Response(self.render(request, self.replace_service(caller=request.user, **path,
                                                                  body=self.body(request))))

    def patch(self, request, **path):
        return Response(self.render(request, self.patch_service(caller=request.user, **path,
                                                                body=self.body(request))))

    def delete(self, request, **path):
        self.delete_service(caller=request.user, **path)
        return Response(status=204)


@extend_schema_view(
    get=_documented("scimListUsers", parameters=LIST_PARAMETERS, summary="List users (principals)"),
    post=_documented("scimCreateUser", request=OpenApiTypes.OBJECT, status=201, summary="Create a user (admin)"),
)
class UsersView(Collection, ScimView):
    audit_securable_type = "principal"
    audit_actions = {"POST": AuditAction.CREATE_PRINCIPAL}
    render = staticmethod(resources.user)
    list_service, create_service = staticmethod(scim.list_users), staticmethod(scim.create_user)


@extend_schema_view(
    get=_documented("scimGetUser", summary="Get a user"),
    put=_documented("scimReplaceUser", request=OpenApiTypes.OBJECT, summary="Replace a user (admin)"),
    patch=_documented("scimPatchUser", request=OpenApiTypes.OBJECT,
                      summary="Change active, displayName or externalId (admin)"),
    delete=_documented("scimDeleteUser", status=204, summary="Delete a user and revoke its grants (admin)"),
)
class UserView(Resource, ScimView):
    audit_securable_type = "principal"
    audit_actions = {"PUT": AuditAction.UPDATE_PRINCIPAL, "PATCH": AuditAction.UPDATE_PRINCIPAL,
                     "DELETE": AuditAction.DELETE_PRINCIPAL}
    render, get_service = staticmethod(resources.user), staticmethod(scim.get_user)
    replace_service, patch_service = staticmethod(scim.replace_user), staticmethod(scim.patch_user)
    delete_service = staticmethod(scim.delete_user)


class MeView(ScimView):
    @_documented("scimGetMe", summary="The caller's own user")
    def get(self, request):
        return Response(resources.user(request, scim.get_user(request.user.id)))


@extend_schema_view(
    get=_documented("scimListGroups", parameters=LIST_PARAMETERS, summary="List groups"),
    post=_documented("scimCreateGroup", request=OpenApiTypes.OBJECT, status=201, summary="Create a group (admin)"),
)
class GroupsView(Collection, ScimView):
    audit_securable_type = "group"
    audit_actions = {"POST": AuditAction.CREATE_GROUP}
    render = staticmethod(resources.group)
    list_service, create_service = staticmethod(scim.list_groups), staticmethod(scim.create_group)


@extend_schema_view(
    get=_documented("scimGetGroup", summary="Get a group"),
    put=_documented("scimReplaceGroup", request=OpenApiTypes.OBJECT, summary="Replace a group (admin)"),
    patch=_documented("scimPatchGroup", request=OpenApiTypes.OBJECT, summary="Change members, displayName (admin)"),
    delete=_documented("scimDeleteGroup", status=204, summary="Delete a group and revoke its grants (admin)"),
)
class GroupView(Resource, ScimView):
    audit_securable_type = "group"
    audit_actions = {"PUT": AuditAction.UPDATE_GROUP, "PATCH": AuditAction.UPDATE_GROUP,
                     "DELETE": AuditAction.DELETE_GROUP}
    render, get_service = staticmethod(resources.group), staticmethod(scim.get_group)
    replace_service, patch_service = staticmethod(scim.replace_group), staticmethod(scim.patch_group)
    delete_service = staticmethod(scim.delete_group)


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
