"""The endpoints every securable of the Unity Catalog API has, declared once per securable.

A `Resource` names a securable's services and wire types; `views(resource)` makes its two views:

    <Noun>sView   GET: one page of what the caller may see (listing filters, then max_results and
                  page_token); POST: create
    <Noun>View    GET, PATCH (when it has an update) and DELETE of the securable named in the path

Each method parses, calls the one service and renders its answer: the services authorize, validate
and audit. The views' names are those of the securable (`postVolumes` in a refused request's audit
row), and so are the operation ids (listVolumes, createVolume, getVolume, updateVolume, deleteVolume).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from catalog.choices import AuditAction
from catalog import pagination
from catalog.api.base import CatalogAPIView
from catalog.api.uc.serializers import Empty, arguments, changes
from catalog.services.common import validate_optional_bool
from ucweb.errors import InvalidParameter

PAGE_PARAMETERS = [
    OpenApiParameter("max_results", int, description="Page size; 0 or absent: the server default."),
    OpenApiParameter("page_token", str, description="Token from the previous page's next_page_token."),
]
CATALOG_AND_SCHEMA = (
    OpenApiParameter("catalog_name", str, required=True),
    OpenApiParameter("schema_name", str, required=True),
)
FORCE = OpenApiParameter("force", bool, description="Delete everything inside too.")
# The deletes of catalogs, schemas and tables document their answer as the Unity Catalog spec does:
# 200 with an empty JSON object.
DELETED = {200: OpenApiResponse(OpenApiTypes.OBJECT, description="An empty object.")}


def query(request, name: str):
    return request.query_params.get(name)


def required_query(request, name: str) -> str:
    value = query(request, name)
    if not value:
        raise InvalidParameter(f"Query parameter {name} is required.")
    return value


def forced(request) -> bool:
    """The `force` query parameter of a delete."""
    return validate_optional_bool(query(request, "force"), field="force")


def page_response(plural: str, key: str, info_type: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The wire type `List<plural>Response` of one page of a list: the items under `key`."""
    return type(f"List{plural}Response", (serializers.Serializer,), {
        key: info_type(many=True), "next_page_token": serializers.CharField(required=False),
    })


def listed(request, queryset, key: str, serializer, *, paginate: Callable | None = None,
           render: Callable | None = None) -> Response:
    """One page of a Unity Catalog list, `key` naming the list in the answer. `paginate`: how its
    rows are paged; by name, at most the spec's maximum for that list, unless it says otherwise.
    `render`: a row's item as a dict, when not by `serializer` (which it must answer as)."""
    if paginate is None:
        paginate = partial(pagination.paginate, maximum=pagination.SPEC_MAXIMUM[key])
    items, token = paginate(queryset, max_results=query(request, "max_results"),
                            page_token=query(request, "page_token"))
    body = {key: [render(item) for item in items] if render else serializer(items, many=True).data}
    if token:
        body["next_page_token"] = token
    return Response(body)


def _snake(noun: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", noun).lower()


@dataclass(frozen=True)
class Resource:
    """One securable's endpoints. `noun` ("RegisteredModel") names the views, the operations and
    the securable type of the audit (registered_model); `plural` ("RegisteredModels", by default
    the noun and an s) names the collection view, the list operation and the list in a page
    (registered_models), which must have a documented maximum in pagination.SPEC_MAXIMUM.

    `visible(caller=, **filters)`: the rows a list pages through, `filters` naming the query
    parameters it takes (a required one must be sent); `paginate`: how they are paged (see `listed`).
    `create(caller=, **body)` takes the fields `create_request` declares; `get`, `update` and
    `delete` take the name in the path as the keyword `name_argument`, `update` also the fields of
    `update_request` the client sent, `delete` also `force` when `delete_takes_force`.
    `info_type`: the wire type of one securable; `render`: the same answer of a row as a plain
    dict, where the serializer's cost matters; `delete_response`: the documented answer of a
    delete."""

    noun: str
    tag: str
    info_type: type[serializers.Serializer]
    visible: Callable
    create: Callable
    create_request: type[serializers.Serializer]
    get: Callable
    delete: Callable
    plural: str = ""
    filters: tuple[OpenApiParameter, ...] = ()
    paginate: Callable | None = None
    update: Callable | None = None
    update_request: type[serializers.Serializer] | None = None
    delete_takes_force: bool = False
    delete_response: object = Empty
    render: Callable | None = None
    # The URL calls the one path parameter as the Unity Catalog spec does (volumes/{name} holds a
    # full name), the service by what it holds: this is the service's keyword for it.
    name_argument: str = "full_name"

    def __post_init__(self):
        if not self.plural:
            object.__setattr__(self, "plural", f"{self.noun}s")
        if self.key not in pagination.SPEC_MAXIMUM:
            raise ValueError(f"The list {self.key!r} of {self.noun} has no documented maximum in "
                             "pagination.SPEC_MAXIMUM (or its plural is misspelled).")

    @property
    def key(self) -> str:
        return _snake(self.plural)


def views(resource: Resource, *, module: str) -> tuple[type[CatalogAPIView], type[CatalogAPIView]]:
    """The collection view and the item view of `resource`, as classes of `module` (the declaring
    module's __name__, so that their names and tracebacks lead there). They carry no docstring:
    drf-spectacular would publish it as the description of every operation."""
    attributes = {"audit_securable_type": _snake(resource.noun), "__module__": module}
    actions = {"POST": AuditAction(f"create{resource.noun}"), "DELETE": AuditAction(f"delete{resource.noun}"),
               **({"PATCH": AuditAction(f"update{resource.noun}")} if resource.update is not None else {})}

    def service_name(path: dict) -> dict:
        """The securable's name, from the path parameter of the URL to the service's keyword."""
        (name,) = path.values()
        return {resource.name_argument: name}

    def show(row):
        return resource.render(row) if resource.render else resource.info_type(row).data

    @extend_schema(operation_id=f"list{resource.plural}", tags=[resource.tag],
                   parameters=[*resource.filters, *PAGE_PARAMETERS],
                   responses=page_response(resource.plural, resource.key, resource.info_type))
    def list_visible(self, request):
        filters = {p.name: (required_query if p.required else query)(request, p.name) for p in resource.filters}
        return listed(request, resource.visible(caller=request.user, **filters), resource.key, resource.info_type,
                      paginate=resource.paginate, render=resource.render)

    @extend_schema(operation_id=f"create{resource.noun}", tags=[resource.tag], request=resource.create_request,
                   responses=resource.info_type)
    def create(self, request):
        row = resource.create(caller=request.user, **arguments(self.body(request), resource.create_request))
        return Response(show(row))

    @extend_schema(operation_id=f"get{resource.noun}", tags=[resource.tag], responses=resource.info_type)
    def get(self, request, **path):
        return Response(show(resource.get(caller=request.user, **service_name(path))))

    @extend_schema(operation_id=f"update{resource.noun}", tags=[resource.tag], request=resource.update_request,
                   responses=resource.info_type)
    def update(self, request, **path):
        row = resource.update(caller=request.user, **service_name(path),
                              fields=changes(self.body(request), resource.update_request))
        return Response(show(row))

    @extend_schema(operation_id=f"delete{resource.noun}", tags=[resource.tag],
                   parameters=[FORCE] if resource.delete_takes_force else None, responses=resource.delete_response)
    def delete(self, request, **path):
        force = {"force": forced(request)} if resource.delete_takes_force else {}
        resource.delete(caller=request.user, **service_name(path), **force)
        return Response({})

    item_methods = {"get": get, "delete": delete, **({"patch": update} if resource.update is not None else {})}
    return (
        type(f"{resource.plural}View", (CatalogAPIView,),
             {**attributes, "audit_actions": actions, "get": list_visible, "post": create}),
        type(f"{resource.noun}View", (CatalogAPIView,), {**attributes, "audit_actions": actions, **item_methods}),
    )
