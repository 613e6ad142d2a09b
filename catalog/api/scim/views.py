"""SCIM 2.0 (RFC 7644) at /api/1.0/unity-control/scim2, where Unity Catalog OSS serves its SCIM
API: Users and Me as there, Groups and the discovery endpoints beside them. Writes need a metastore
admin (catalog.services.scim); errors are in the SCIM envelope (ucweb.errors.scim_body)."""

from collections.abc import Callable
from dataclasses import dataclass

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from catalog.api.base import CatalogAPIView
from catalog.api.scim import resources
from catalog.choices import AuditAction
from catalog.services import scim, scim_groups
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


@dataclass(frozen=True)
class Kind:
    """A kind of SCIM resource (User, Group): its services (`list(filter_text=, start_index=,
    count=)`, `create(caller=, body=)`, `get(id)`, `replace` and `patch` (caller=, <id>=, body=),
    `delete(caller=, <id>=)`, where <id> is the path parameter, `user_id` or `group_id`), how a
    row is rendered (`render(request, row)`), the securable type of its audit rows, and the
    summaries that say what only this kind's list and patch do."""

    noun: str
    securable_type: str
    render: Callable
    list: Callable
    create: Callable
    get: Callable
    replace: Callable
    patch: Callable
    delete: Callable
    list_summary: str
    patch_summary: str


def views(kind: Kind) -> tuple[type[ScimView], type[ScimView]]:
    """The collection view (GET: one page of what `filter` selects; POST: create, 201 with the
    new resource's Location) and the resource view (GET, PUT, PATCH, DELETE by id) of `kind`.
    Like the Unity Catalog API's views, they carry no docstring (it would be published)."""
    noun, article = kind.noun, f"a {kind.noun.lower()}"
    audited = kind.securable_type.capitalize()
    update = AuditAction(f"update{audited}")

    @_documented(f"scimList{noun}s", parameters=LIST_PARAMETERS, summary=kind.list_summary)
    def list_selected(self, request):
        page = kind.list(filter_text=request.query_params.get("filter"),
                         start_index=request.query_params.get("startIndex"),
                         count=request.query_params.get("count"))
        return Response(resources.list_response(page, [kind.render(request, row) for row in page.resources]))

    @_documented(f"scimCreate{noun}", request=OpenApiTypes.OBJECT, status=201, summary=f"Create {article} (admin)")
    def create(self, request):
        body = kind.render(request, kind.create(caller=request.user, body=self.body(request)))
        return Response(body, status=201, headers={"Location": body["meta"]["location"]})

    @_documented(f"scimGet{noun}", summary=f"Get {article}")
    def get(self, request, **path):
        (resource_id,) = path.values()
        return Response(kind.render(request, kind.get(resource_id)))

    @_documented(f"scimReplace{noun}", request=OpenApiTypes.OBJECT, summary=f"Replace {article} (admin)")
    def replace(self, request, **path):
        return Response(kind.render(request, kind.replace(caller=request.user, **path, body=self.body(request))))

    @_documented(f"scimPatch{noun}", request=OpenApiTypes.OBJECT, summary=kind.patch_summary)
    def patch(self, request, **path):
        return Response(kind.render(request, kind.patch(caller=request.user, **path, body=self.body(request))))

    @_documented(f"scimDelete{noun}", status=204, summary=f"Delete {article} and revoke its grants (admin)")
    def delete(self, request, **path):
        kind.delete(caller=request.user, **path)
        return Response(status=204)

    attributes = {"audit_securable_type": kind.securable_type, "__module__": __name__}
    return (
        type(f"{noun}sView", (ScimView,), {
            **attributes, "audit_actions": {"POST": AuditAction(f"create{audited}")},
            "get": list_selected, "post": create,
        }),
        type(f"{noun}View", (ScimView,), {
            **attributes,
            "audit_actions": {"PUT": update, "PATCH": update, "DELETE": AuditAction(f"delete{audited}")},
            "get": get, "put": replace, "patch": patch, "delete": delete,
        }),
    )


UsersView, UserView = views(Kind(
    noun="User", securable_type="principal", render=resources.user, list=scim.list_users, create=scim.create_user,
    get=scim.get_user, replace=scim.replace_user, patch=scim.patch_user, delete=scim.delete_user,
    list_summary="List users (principals)", patch_summary="Change active, displayName or externalId (admin)",
))
GroupsView, GroupView = views(Kind(
    noun="Group", securable_type="group", render=resources.group, list=scim.list_groups, get=scim.get_group,
    create=scim_groups.create_group, replace=scim_groups.replace_group, patch=scim_groups.patch_group,
    delete=scim_groups.delete_group,
    list_summary="List groups", patch_summary="Change members, displayName (admin)",
))


class MeView(ScimView):
    @_documented("scimGetMe", summary="The caller's own user")
    def get(self, request):
        return Response(resources.user(request, scim.get_user(request.user.id)))


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
