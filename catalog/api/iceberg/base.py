"""What every Iceberg REST endpoint shares: the view base (error envelope, Idempotency-Key), the
LoadTableResult renderer, access delegation, paging and the OpenAPI pieces."""

from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework.response import Response

from catalog import pagination
from catalog.api.base import CatalogAPIView
from catalog.api.iceberg import idempotency, wire
from catalog.services import iceberg, iceberg_credentials
from catalog.names import namespace_levels_of
from commits.formats import iceberg as formats
from ucweb.mounts import ICEBERG_ROOT, iceberg_root_of
from ucweb.openapi import ICEBERG_TAG

TAGS = [ICEBERG_TAG]
COMMIT_RULES = (
    "Requirements and updates as the Iceberg REST spec defines them. A commit with no requirement "
    "and no update is a 400. Ids are checked against the types the spec gives them (snapshot ids "
    "and sequence numbers long, field, schema, spec and sort-order ids int); sequence numbers, "
    "timestamps, ages and sizes are never negative; property values are strings. A malformed "
    "update is a 400 and writes no metadata. Setting or removing a `ucweb.maintenance.*` "
    "property needs the table's owner or a metastore admin (403 otherwise)."
)
JSON_OBJECT = OpenApiResponse(description="See the Apache Iceberg REST catalog specification.")
# The error answers every operation may give, in the IcebergErrorResponse envelope.
ERRORS = {code: wire.IcebergErrorResponse for code in (400, 401, 403, 404)}
CONFLICT = {**ERRORS, 409: wire.IcebergErrorResponse}
NO_CONTENT = OpenApiResponse(description="No content.")
PAGE = [
    OpenApiParameter("pageToken", str, description="Absent: every item; empty or a token: one page."),
    OpenApiParameter("pageSize", int),
]


def lifetime_iso() -> str:
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
        metadata_json = formats.only_referenced_snapshots(metadata_json)
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
    """The access the client can use (`X-Iceberg-Access-Delegation`), and the catalog's base URI:
    the root the request came in through, so that the signer endpoint lies under the one the
    client was configured with."""
    root = iceberg_root_of(request.path) or ICEBERG_ROOT
    return iceberg_credentials.Delegation.parse(
        request.META.get("HTTP_X_ICEBERG_ACCESS_DELEGATION"), base_uri=request.build_absolute_uri(root))


DELEGATION = OpenApiParameter(
    "X-Iceberg-Access-Delegation", str, location=OpenApiParameter.HEADER,
    description="vended-credentials and/or remote-signing (comma-separated): S3 keys scoped to the table, "
                "or a signer endpoint, in config.")


def none_match(header: str | None, etag: str) -> bool:
    """Whether an If-None-Match header (`*`, or a list of tags, weak or strong) names `etag`."""
    if not header:
        return False
    tags = [tag.strip() for tag in header.split(",")]
    return "*" in tags or etag in {tag[2:] if tag.startswith("W/") else tag for tag in tags}


def page(request, queryset, key="name"):
    return pagination.page_if_asked(queryset, request.query_params, key=key)


def identifiers(request, queryset) -> Response:
    """A listing of tables, views or policies, named by namespace and name: every item, or one
    page when the request asks for pages (Iceberg REST and Polaris alike). Only the two columns
    are read: a model instance per row, and one of its schema, cost most of a listing's time."""
    items, token = page(request, queryset.values("name", "schema__path"))
    levels = {path: namespace_levels_of(path) for path in {item["schema__path"] for item in items}}
    body = {"identifiers": [{"namespace": levels[item["schema__path"]], "name": item["name"]} for item in items]}
    if token:
        body["next-page-token"] = token
    return Response(body)
