"""Apache Iceberg REST catalog at /api/catalog/v1 (the warehouse, or prefix, is a catalog)."""

from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import FormParser
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog import selectors
from catalog.api.base import CatalogAPIView
from catalog.api.iceberg import idempotency
from catalog.services import iceberg, iceberg_credentials, iceberg_external, principals
from catalog.services.common import validate_optional_bool
from ucweb.parsers import LenientJSONParser
from ucweb.errors import InvalidParameter, Unauthenticated

TAGS = ["Iceberg REST"]
ICEBERG_ROOT = "/api/catalog/"
COMMIT_RULES = (
    "Requirements and updates as the Iceberg REST spec defines them. A commit with no requirement "
    "and no update is a 400. Ids are checked against the types the spec gives them (snapshot ids "
    "and sequence numbers long, field, schema, spec and sort-order ids int); sequence numbers, "
    "timestamps, ages and sizes are never negative; property values are strings. A malformed "
    "update is a 400 and writes no metadata. Setting or removing a `ucweb.maintenance.*` "
    "property needs the table's owner or a metastore admin (403 otherwise)."
)
JSON_OBJECT = OpenApiResponse(description="See the Apache Iceberg REST catalog specification.")
NO_CONTENT = OpenApiResponse(description="No content.")
PAGE = [
    OpenApiParameter("pageToken", str, description="Absent: every item; empty or a token: one page."),
    OpenApiParameter("pageSize", int),
]

ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/register-view",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/notifications",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/views/rename",
    # The Polaris-native API beside it (clients such as Polaris's Spark plugin look for these).
    "GET /polaris/v1/{prefix}/namespaces/{namespace}/generic-tables",
    "POST /polaris/v1/{prefix}/namespaces/{namespace}/generic-tables",
    "GET /polaris/v1/{prefix}/namespaces/{namespace}/generic-tables/{generic-table}",
    "DELETE /polaris/v1/{prefix}/namespaces/{namespace}/generic-tables/{generic-table}",
    "GET /polaris/v1/{prefix}/namespaces/{namespace}/policies",
    "POST /polaris/v1/{prefix}/namespaces/{namespace}/policies",
    "GET /polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy-name}",
    "PUT /polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy-name}",
    "DELETE /polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy-name}",
    "PUT /polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy-name}/mappings",
    "POST /polaris/v1/{prefix}/namespaces/{namespace}/policies/{policy-name}/mappings",
    "GET /polaris/v1/{prefix}/applicable-policies",
]


def _lifetime_iso() -> str:
    return f"PT{settings.UCWEB_IDEMPOTENCY_LIFETIME_SECONDS}S"


class IcebergView(CatalogAPIView):
    """Errors in the IcebergErrorResponse envelope (ucweb.errors picks it by path) and
    Idempotency-Key on every mutating request."""

    audit_securable_type = "table"

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self._idempotency = None
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            self._idempotency = idempotency.claim(request, request.user.name)

    def handle_exception(self, exc):
        if isinstance(exc, idempotency.Replay):
            record = exc.record
            response = Response(record.response, status=record.status)
            location = record.response.get("metadata-location") if isinstance(record.response, dict) else None
            if isinstance(location, str):
                response["ETag"] = iceberg.etag_for(location)
            return response
        try:
            return super().handle_exception(exc)
        except BaseException:
            # A server error has no final response to replay: free the key, so that the
            # client's retry with it runs for real instead of waiting for an answer forever.
            record, self._idempotency = getattr(self, "_idempotency", None), None
            if record is not None:
                idempotency.release(record)
            raise

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        record = getattr(self, "_idempotency", None)
        if record is not None:
            idempotency.settle(record, response)
        return response


def table_result(loaded: iceberg.Loaded, *, snapshots: str | None = None, status: int = 200) -> HttpResponse:
    """LoadTableResult, written from the stored metadata text without parsing it again."""
    metadata_json = loaded.metadata_json
    if snapshots == "refs":
        metadata_json = iceberg.only_referenced_snapshots(metadata_json)
    location = json.dumps(loaded.metadata_location)
    extra = ""
    if loaded.storage_credentials:
        extra = f',"storage-credentials":{json.dumps(loaded.storage_credentials)}'
    body = (f'{{"metadata-location":{location},"metadata":{metadata_json},"config":{json.dumps(loaded.config)}'
            f'{extra}}}')
    response = HttpResponse(body, content_type="application/json", status=status)
    if loaded.metadata_location:
        response["ETag"] = loaded.etag(snapshots)
    return response


def delegation(request) -> iceberg_credentials.Delegation:
    """The access the client can use (`X-Iceberg-Access-Delegation`), and the catalog's base URI."""
    return iceberg_credentials.Delegation.parse(
        request.META.get("HTTP_X_ICEBERG_ACCESS_DELEGATION"), base_uri=request.build_absolute_uri(ICEBERG_ROOT))


DELEGATION = OpenApiParameter(
    "X-Iceberg-Access-Delegation", str, location=OpenApiParameter.HEADER,
    description="vended-credentials and/or remote-signing (comma-separated): S3 keys scoped to the table, "
                "or a signer endpoint, in config.")


def _none_match(header: str | None, etag: str) -> bool:
    """Whether an If-None-Match header (`*`, or a list of tags, weak or strong) names `etag`."""
    if not header:
        return False
    tags = [tag.strip() for tag in header.split(",")]
    return "*" in tags or etag in {tag[2:] if tag.startswith("W/") else tag for tag in tags}


def _page(request, queryset, key="name"):
    if "pageToken" not in request.query_params:
        return list(queryset.order_by(key)), None
    return selectors.paginate(queryset, max_results=request.query_params.get("pageSize"),
                              page_token=request.query_params.get("pageToken") or None, key=key)


class ConfigView(CatalogAPIView):
    @extend_schema(tags=TAGS, operation_id="getConfig", responses=JSON_OBJECT,
                   parameters=[OpenApiParameter("warehouse", str, description=(
                       "A catalog name; default: the default catalog. The answer is the same whether "
                       "the catalog exists or not, and whether the caller may see it or not: clients "
                       "connect before they are granted anything, and the answer tells nobody what "
                       "exists. The first request to a warehouse that does not exist for the caller "
                       "answers 404 NoSuchWarehouseException."))])
    def get(self, request):
        name = request.query_params.get("warehouse") or settings.UCWEB_DEFAULT_WAREHOUSE
        return Response({
            "defaults": {},
            "overrides": {"prefix": name},
            "endpoints": ENDPOINTS,
            "idempotency-key-lifetime": _lifetime_iso(),
        })


def _oauth_error(error: str, description: str, status: int = 400) -> Response:
    """OAuth 2.0's own error format (RFC 6749, section 5.2), not the Iceberg envelope."""
    return Response({"error": error, "error_description": description}, status=status)


class OAuthTokensView(APIView):
    """Client-credentials grant: a service principal's client id and secret for a bearer token
    that every API of ucweb accepts. Answers OAuth's own error format."""

    authentication_classes: list = []
    permission_classes: list = []
    parser_classes = [FormParser, LenientJSONParser]

    @extend_schema(
        tags=TAGS, operation_id="getToken", responses=JSON_OBJECT,
        request=inline_serializer("OAuthTokenRequest", {
            "grant_type": serializers.CharField(), "client_id": serializers.CharField(),
            "client_secret": serializers.CharField(), "scope": serializers.CharField(required=False)}),
    )
    def post(self, request):
        try:
            data = request.data
        except ParseError:
            data = None
        if not isinstance(data, dict):
            return _oauth_error("invalid_request", "The body must be a form (or a JSON object).")
        if data.get("grant_type") != "client_credentials":
            return _oauth_error("unsupported_grant_type", "Only grant_type=client_credentials is supported.")
        client_id, client_secret = data.get("client_id"), data.get("client_secret")
        if not client_id and request.META.get("HTTP_AUTHORIZATION", "").lower().startswith("basic "):
            import base64

            try:
                decoded = base64.b64decode(request.META["HTTP_AUTHORIZATION"][6:]).decode()
                client_id, _, client_secret = decoded.partition(":")
            except (ValueError, UnicodeDecodeError):
                client_id = None
        for value in (client_id, client_secret):
            if value is not None and (not isinstance(value, str) or "\x00" in value):
                return _oauth_error("invalid_request", "client_id and client_secret must be strings without NUL characters.")
        try:
            principal = principals.principal_for_client_credentials(client_id=client_id, client_secret=client_secret)
        except Unauthenticated:
            return _oauth_error("invalid_client", "Invalid client credentials.", status=401)
        lifetime = settings.UCWEB_OAUTH_TOKEN_SECONDS
        from datetime import timedelta

        token = principals.issue_token(principal=principal, lifetime=timedelta(seconds=lifetime),
                                       description="OAuth client credentials")
        return Response({
            "access_token": token, "token_type": "bearer", "expires_in": lifetime,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        })


class NamespacesView(IcebergView):
    audit_securable_type = "schema"

    @extend_schema(tags=TAGS, operation_id="listNamespaces", responses=JSON_OBJECT,
                   parameters=[OpenApiParameter("parent", str), *PAGE])
    def get(self, request, prefix):
        items, token = _page(request, iceberg.list_namespaces(
            caller=request.user, prefix=prefix, parent=request.query_params.get("parent")))
        body = {"namespaces": [[schema.name] for schema in items]}
        if token:
            body["next-page-token"] = token
        return Response(body)

    @extend_schema(tags=TAGS, operation_id="createNamespace", responses=JSON_OBJECT, request=None)
    def post(self, request, prefix):
        body = self.body(request)
        schema = iceberg.create_namespace(caller=request.user, prefix=prefix, namespace=body.get("namespace"),
                                          properties=body.get("properties"))
        return Response({"namespace": [schema.name], "properties": schema.properties})


class NamespaceView(IcebergView):
    audit_securable_type = "schema"

    @extend_schema(tags=TAGS, operation_id="loadNamespaceMetadata", responses=JSON_OBJECT)
    def get(self, request, prefix, namespace):
        schema = iceberg.load_namespace(caller=request.user, prefix=prefix, namespace=namespace)
        return Response({"namespace": [schema.name], "properties": schema.properties})

    @extend_schema(tags=TAGS, operation_id="namespaceExists", responses={204: NO_CONTENT})
    def head(self, request, prefix, namespace):
        iceberg.load_namespace(caller=request.user, prefix=prefix, namespace=namespace)
        return Response(status=204)

    @extend_schema(tags=TAGS, operation_id="dropNamespace", responses={204: NO_CONTENT})
    def delete(self, request, prefix, namespace):
        iceberg.drop_namespace(caller=request.user, prefix=prefix, namespace=namespace)
        return Response(status=204)


class NamespacePropertiesView(IcebergView):
    audit_securable_type = "schema"

    @extend_schema(tags=TAGS, operation_id="updateProperties", responses=JSON_OBJECT, request=None)
    def post(self, request, prefix, namespace):
        body = self.body(request)
        result = iceberg.update_namespace_properties(
            caller=request.user, prefix=prefix, namespace=namespace,
            removals=body.get("removals"), updates=body.get("updates"))
        return Response(result)


def _identifiers(items) -> list[dict]:
    return [{"namespace": [table.schema.name], "name": table.name} for table in items]


class TablesView(IcebergView):
    view_objects = False

    @extend_schema(tags=TAGS, operation_id="listTables", responses=JSON_OBJECT, parameters=PAGE)
    def get(self, request, prefix, namespace):
        items, token = _page(request, iceberg.list_tables(caller=request.user, prefix=prefix, namespace=namespace,
                                                          view=self.view_objects))
        body = {"identifiers": _identifiers(items)}
        if token:
            body["next-page-token"] = token
        return Response(body)

    @extend_schema(tags=TAGS, operation_id="createTable", responses=JSON_OBJECT, request=None, parameters=[DELEGATION])
    def post(self, request, prefix, namespace):
        body = self.body(request)
        if self.view_objects:
            return table_result(iceberg.create_view(caller=request.user, prefix=prefix, namespace=namespace, body=body))
        return table_result(iceberg_credentials.create_table(caller=request.user, prefix=prefix, namespace=namespace,
                                                             body=body, delegation=delegation(request)))


class ViewsView(TablesView):
    view_objects = True


class TableView(IcebergView):
    view_objects = False

    @extend_schema(tags=TAGS, operation_id="loadTable", responses=JSON_OBJECT,
                   parameters=[OpenApiParameter("snapshots", str, enum=["all", "refs"]), DELEGATION])
    def get(self, request, prefix, namespace, table):
        snapshots = request.query_params.get("snapshots")
        if snapshots not in (None, "all", "refs"):
            raise InvalidParameter("snapshots must be all or refs.")
        loaded = iceberg_credentials.load_table(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                                                delegation=delegation(request), view=self.view_objects)
        etag = loaded.etag(snapshots)
        if _none_match(request.META.get("HTTP_IF_NONE_MATCH"), etag):
            response = HttpResponse(status=304)
            response["ETag"] = etag
            return response
        return table_result(loaded, snapshots=snapshots)

    @extend_schema(tags=TAGS, operation_id="tableExists", responses={204: NO_CONTENT})
    def head(self, request, prefix, namespace, table):
        iceberg.table_exists(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                             view=self.view_objects)
        return Response(status=204)

    @extend_schema(tags=TAGS, operation_id="updateTable", responses=JSON_OBJECT, request=None,
                   description=COMMIT_RULES)
    def post(self, request, prefix, namespace, table):
        body = self.body(request)
        if self.view_objects:
            return table_result(iceberg.replace_view(caller=request.user, prefix=prefix, namespace=namespace,
                                                     name=table, body=body))
        return table_result(iceberg.commit_table(caller=request.user, prefix=prefix, namespace=namespace,
                                                 name=table, body=body))

    @extend_schema(tags=TAGS, operation_id="dropTable", responses={204: NO_CONTENT},
                   parameters=[OpenApiParameter("purgeRequested", bool)])
    def delete(self, request, prefix, namespace, table):
        purge = validate_optional_bool(request.query_params.get("purgeRequested"), field="purgeRequested")
        iceberg.drop_table(caller=request.user, prefix=prefix, namespace=namespace, name=table, purge=purge,
                           view=self.view_objects)
        return Response(status=204)


class ViewView(TableView):
    view_objects = True


class RegisterTableView(IcebergView):
    @extend_schema(tags=TAGS, operation_id="registerTable", responses=JSON_OBJECT, request=None,
                   parameters=[DELEGATION])
    def post(self, request, prefix, namespace):
        return table_result(iceberg_credentials.register_table(caller=request.user, prefix=prefix, namespace=namespace,
                                                               body=self.body(request), delegation=delegation(request)))


class RegisterViewView(IcebergView):
    @extend_schema(tags=TAGS, operation_id="registerView", responses=JSON_OBJECT,
                   request=inline_serializer("RegisterViewRequest", {
                       "name": serializers.CharField(), "metadata-location": serializers.CharField()}))
    def post(self, request, prefix, namespace):
        return table_result(iceberg_external.register_view(caller=request.user, prefix=prefix, namespace=namespace,
                                                           body=self.body(request)))


class NotificationsView(IcebergView):
    @extend_schema(
        tags=TAGS, operation_id="sendNotification", responses={204: NO_CONTENT},
        request=inline_serializer("NotificationRequest", {
            "notification-type": serializers.ChoiceField(choices=["CREATE", "UPDATE", "DROP", "VALIDATE"]),
            "payload": inline_serializer("TableUpdateNotification", {
                "table-name": serializers.CharField(), "timestamp": serializers.IntegerField(),
                "table-uuid": serializers.CharField(), "metadata-location": serializers.CharField()})}))
    def post(self, request, prefix, namespace, table):
        iceberg_external.send_notification(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                                           body=self.body(request))
        return Response(status=204)


class RenameTableView(IcebergView):
    view_objects = False

    @extend_schema(tags=TAGS, operation_id="renameTable", responses={204: NO_CONTENT}, request=None)
    def post(self, request, prefix):
        iceberg.rename(caller=request.user, prefix=prefix, body=self.body(request), view=self.view_objects)
        return Response(status=204)


class RenameViewView(RenameTableView):
    view_objects = True


class TransactionsView(IcebergView):
    @extend_schema(tags=TAGS, operation_id="commitTransaction", responses={204: NO_CONTENT}, request=None,
                   description=COMMIT_RULES)
    def post(self, request, prefix):
        iceberg.commit_transaction(caller=request.user, prefix=prefix, body=self.body(request))
        return Response(status=204)


class CredentialsView(IcebergView):
    @extend_schema(tags=TAGS, operation_id="loadCredentials", responses=JSON_OBJECT)
    def get(self, request, prefix, namespace, table):
        return Response(iceberg_credentials.load_credentials(caller=request.user, prefix=prefix, namespace=namespace,
                                                             name=table))


class SignView(IcebergView):
    """The S3 signer of remote signing: signs one S3 request for objects of this table."""

    @extend_schema(
        tags=TAGS, operation_id="signRequest", responses=JSON_OBJECT,
        request=inline_serializer("RemoteSignRequest", {
            "region": serializers.CharField(), "uri": serializers.CharField(),
            "method": serializers.ChoiceField(["PUT", "GET", "HEAD", "POST", "DELETE", "PATCH", "OPTIONS"]),
            "headers": serializers.DictField(child=serializers.ListField(child=serializers.CharField())),
            "body": serializers.CharField(required=False), "provider": serializers.CharField(required=False)}),
    )
    def post(self, request, prefix, namespace, table, staged=None):
        signed = iceberg_credentials.sign_request(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                                                  body=self.body(request), staged=staged)
        response = Response(signed)
        response["Cache-Control"] = "no-cache"
        return response


@extend_schema_view(post=extend_schema(operation_id="signStagedRequest"))
class StagedSignView(SignView):
    """The signer endpoint handed out by stage-create: objects of a table not yet committed."""


class MetricsView(IcebergView):
    @extend_schema(tags=TAGS, operation_id="reportMetrics", responses={204: NO_CONTENT}, request=None)
    def post(self, request, prefix, namespace, table):
        iceberg.record_metrics(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                               body=self.body(request))
        return Response(status=204)

