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


def page_response(plural: str, key: str, info: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The wire type `List<plural>Response` of one page of a list: the items under `key`."""
    return type(f"List{plural}Response", (serializers.Serializer,), {
        key: info(many=True), "next_page_token": serializers.CharField(required=False),
    })


def listed(request, queryset, key: str, serializer, *, paginate: Callable | None = None) -> Response:
    """One page of a Unity Catalog list, `key` naming the list in the answer. `paginate`: how its
    rows are paged; by name, at most the spec's maximum for that list, unless it says otherwise."""
    if paginate is None:
        paginate = partial(pagination.paginate, maximum=pagination.SPEC_MAXIMUM.get(key))
    items, token = paginate(queryset, max_results=query(request, "max_results"),
                            page_token=query(request, "page_token"))
    body = {key: serializer(items, many=True).data}
    if token:
        body["next_page_token"] = token
    return Response(body)


def _snake(noun: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", noun).lower()


@dataclass(frozen=True)
class Resource:
    """One securable's endpoints. `noun` ("RegisteredModel") names the views, the operations, the
    securable type of the audit (registered_model) and the list in a page (registered_models).

    `visible(caller=, **filters)`: the rows a list pages through, `filters` naming the query
    parameters it takes (a required one must be sent); `paginate`: how they are paged (see `listed`).
    `create(caller=, **body)` takes the fields `create_request` declares; `get`, `update` and
    `delete` take the name in the path as `name_argument`, `update` also the fields of
    `update_request` the client sent, `delete` also `force` when `force` is set. `deleted`: the
    documented answer of a delete."""

    noun: str
    tag: str
    info: type[serializers.Serializer]
    visible: Callable
    create: Callable
    create_request: type[serializers.Serializer]
    get: Callable
    delete: Callable
    filters: tuple[OpenApiParameter, ...] = ()
    paginate: Callable | None = None
    update: Callable | None = None
    update_request: type[serializers.Serializer] | None = None
    force: bool = False
    deleted: object = Empty
    name_argument: str = "full_name"

    @property
    def plural(self) -> str:
        return f"{self.noun}s"

    @property
    def key(self) -> str:
        return _snake(self.plural)


def views(resource: Resource) -> tuple[type[CatalogAPIView], type[CatalogAPIView]]:
    """The collection view and the item view of `resource`."""
    r = resource
    audit = {"audit_securable_type": _snake(r.noun)}

    def named(path: dict) -> dict:
        (name,) = path.values()
        return {r.name_argument: name}

    @extend_schema(operation_id=f"list{r.plural}", tags=[r.tag], parameters=[*r.filters, *PAGE_PARAMETERS],
                   responses=page_response(r.plural, r.key, r.info))
    def list_visible(self, request):
        filters = {p.name: (required_query if p.required else query)(request, p.name) for p in r.filters}
        return listed(request, r.visible(caller=request.user, **filters), r.key, r.info, paginate=r.paginate)

    @extend_schema(operation_id=f"create{r.noun}", tags=[r.tag], request=r.create_request, responses=r.info)
    def create(self, request):
        row = r.create(caller=request.user, **arguments(self.body(request), r.create_request))
        return Response(r.info(row).data)

    @extend_schema(operation_id=f"get{r.noun}", tags=[r.tag], responses=r.info)
    def get(self, request, **path):
        return Response(r.info(r.get(caller=request.user, **named(path))).data)

    @extend_schema(operation_id=f"update{r.noun}", tags=[r.tag], request=r.update_request, responses=r.info)
    def update(self, request, **path):
        row = r.update(caller=request.user, **named(path), fields=changes(self.body(request), r.update_request))
        return Response(r.info(row).data)

    @extend_schema(operation_id=f"delete{r.noun}", tags=[r.tag], parameters=[FORCE] if r.force else None,
                   responses=r.deleted)
    def delete(self, request, **path):
        extra = {"force": forced(request)} if r.force else {}
        r.delete(caller=request.user, **named(path), **extra)
        return Response({})

    item_methods = {"get": get, "delete": delete, **({"patch": update} if r.update is not None else {})}
    return (
        type(f"{r.plural}View", (CatalogAPIView,), {**audit, "get": list_visible, "post": create}),
        type(f"{r.noun}View", (CatalogAPIView,), {**audit, **item_methods}),
    )
