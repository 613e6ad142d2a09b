"""Namespaces (a UC schema is an Iceberg namespace)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from catalog.choices import AuditAction
from catalog.api.iceberg import wire
from catalog.api.iceberg.base import CONFLICT, ERRORS, NO_CONTENT, PAGE, TAGS, IcebergView, page
from catalog.services import iceberg


class NamespaceAPIView(IcebergView):
    # A namespace is a UC schema: a refused request is audited as one. No docstring: the OpenAPI
    # document describes these operations with the nearest one, IcebergView's.
    audit_securable_type = "schema"


class NamespacesView(NamespaceAPIView):
    audit_actions = {"POST": AuditAction.CREATE_SCHEMA}

    @extend_schema(tags=TAGS, operation_id="listNamespaces",
                   responses={200: wire.IcebergListNamespacesResponse, **ERRORS},
                   parameters=[OpenApiParameter("parent", str), *PAGE])
    def get(self, request, prefix):
        items, token = page(request, iceberg.list_namespaces(
            caller=request.user, prefix=prefix, parent=request.query_params.get("parent")))
        body = {"namespaces": [schema.levels for schema in items]}
        if token:
            body["next-page-token"] = token
        return Response(body)

    @extend_schema(tags=TAGS, operation_id="createNamespace",
                   responses={200: wire.IcebergCreateNamespaceResponse, **CONFLICT}, request=wire.IcebergCreateNamespace)
    def post(self, request, prefix):
        body = self.body(request)
        schema = iceberg.create_namespace(caller=request.user, prefix=prefix, namespace=body.get("namespace"),
                                          properties=body.get("properties"))
        return Response({"namespace": schema.levels, "properties": schema.properties})


class NamespaceView(NamespaceAPIView):
    audit_actions = {"DELETE": AuditAction.DELETE_SCHEMA}

    @extend_schema(tags=TAGS, operation_id="loadNamespaceMetadata",
                   responses={200: wire.IcebergGetNamespaceResponse, **ERRORS})
    def get(self, request, prefix, namespace):
        schema = iceberg.load_namespace(caller=request.user, prefix=prefix, namespace=namespace)
        return Response({"namespace": schema.levels, "properties": schema.properties})

    @extend_schema(tags=TAGS, operation_id="namespaceExists", responses={204: NO_CONTENT})
    def head(self, request, prefix, namespace):
        iceberg.load_namespace(caller=request.user, prefix=prefix, namespace=namespace)
        return Response(status=204)

    @extend_schema(tags=TAGS, operation_id="dropNamespace", responses={204: NO_CONTENT})
    def delete(self, request, prefix, namespace):
        iceberg.drop_namespace(caller=request.user, prefix=prefix, namespace=namespace)
        return Response(status=204)


class NamespacePropertiesView(NamespaceAPIView):
    audit_actions = {"POST": AuditAction.UPDATE_NAMESPACE_PROPERTIES}

    @extend_schema(tags=TAGS, operation_id="updateProperties",
                   responses={200: wire.IcebergUpdateNamespacePropertiesResponse, **ERRORS},
                   request=wire.IcebergUpdateNamespaceProperties)
    def post(self, request, prefix, namespace):
        body = self.body(request)
        result = iceberg.update_namespace_properties(
            caller=request.user, prefix=prefix, namespace=namespace,
            removals=body.get("removals"), updates=body.get("updates"))
        return Response(result)
