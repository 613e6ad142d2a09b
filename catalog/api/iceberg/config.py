"""Catalog configuration and the OAuth token endpoint (client credentials, and the exchange of an
OpenID provider's token)."""

from __future__ import annotations

import base64
from datetime import timedelta

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ParseError
from rest_framework.parsers import FormParser
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog.api.base import CatalogAPIView
from catalog.api.iceberg import wire
from catalog.api.iceberg.base import TAGS, lifetime_iso
from catalog.services import oidc, principals
from ucweb.errors import Unauthenticated
from ucweb.parsers import LenientJSONParser

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
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
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


class ConfigView(CatalogAPIView):
    @extend_schema(tags=TAGS, operation_id="getConfig", responses=wire.IcebergCatalogConfig,
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
            "idempotency-key-lifetime": lifetime_iso(),
        })


def _oauth_error(error: str, description: str, status: int = 400) -> Response:
    """OAuth 2.0's own error format (RFC 6749, section 5.2), not the Iceberg envelope."""
    return Response({"error": error, "error_description": description}, status=status)


TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
# The subject token types an OpenID provider's token is sent as (RFC 8693, section 3).
SUBJECT_TOKEN_TYPES = {"urn:ietf:params:oauth:token-type:access_token", "urn:ietf:params:oauth:token-type:id_token",
                       "urn:ietf:params:oauth:token-type:jwt"}


class OAuthTokensView(APIView):
    """A bearer token that every API of ucweb accepts: for a service principal's client id and
    secret (client credentials), or for a token of a configured OpenID provider (token exchange,
    RFC 8693, as Unity Catalog and Polaris clients send it). Answers OAuth's own error format."""

    authentication_classes: list = []
    permission_classes: list = []
    parser_classes = [FormParser, LenientJSONParser]

    @extend_schema(
        tags=TAGS, operation_id="getToken", responses=wire.IcebergOAuthTokenResponse,
        request=wire.OAuthTokenRequest,
    )
    def post(self, request):
        try:
            data = request.data
        except ParseError:
            data = None
        if not isinstance(data, dict):
            return _oauth_error("invalid_request", "The body must be a form (or a JSON object).")
        if data.get("grant_type") == TOKEN_EXCHANGE and settings.UCWEB_OIDC_PROVIDERS:
            return self.exchange(data)
        if data.get("grant_type") != "client_credentials":
            supported = "client_credentials" + (f" and {TOKEN_EXCHANGE}" if settings.UCWEB_OIDC_PROVIDERS else "")
            return _oauth_error("unsupported_grant_type", f"Supported grant types: {supported}.")
        client_id, client_secret = data.get("client_id"), data.get("client_secret")
        if not client_id and request.META.get("HTTP_AUTHORIZATION", "").lower().startswith("basic "):
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
        token = principals.issue_token(principal=principal, lifetime=timedelta(seconds=lifetime),
                                       description="OAuth client credentials")
        return Response({
            "access_token": token, "token_type": "bearer", "expires_in": lifetime,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        })

    def exchange(self, data) -> Response:
        subject_token, subject_token_type = data.get("subject_token"), data.get("subject_token_type")
        if not isinstance(subject_token, str) or not subject_token or "\x00" in subject_token:
            return _oauth_error("invalid_request", "subject_token is required.")
        if subject_token_type not in SUBJECT_TOKEN_TYPES:
            return _oauth_error("invalid_request",
                                f"subject_token_type must be one of {', '.join(sorted(SUBJECT_TOKEN_TYPES))}.")
        try:
            token, lifetime = oidc.exchange_token(subject_token)
        except Unauthenticated as exc:
            # RFC 8693 (section 2.2.2): an invalid subject token is an invalid_grant.
            return _oauth_error("invalid_grant", exc.message)
        return Response({
            "access_token": token, "token_type": "bearer", "expires_in": lifetime,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        })
