"""The one error map. Every error a view raises is a `CatalogError` subclass; the exception
handler renders it in the envelope of the API the request came to (Unity Catalog or Iceberg).

Unity Catalog envelope: {"error_code": "TABLE_DOES_NOT_EXIST", "message": "...", "details": []}
Iceberg envelope:       {"error": {"message": "...", "type": "NoSuchTableException", "code": 404}}

One row per error, with a status per protocol, as Unity Catalog OSS's ErrorCode.java has them:
`status` is the Unity Catalog API's (/api/2.1/unity-catalog, seed 000's Delta commits included),
`delta_status` the Delta REST API's (/delta/v1, managed tables spec 1.0) and `iceberg_status` the
Iceberg REST API's; None means "as the Unity Catalog API". `status_table()` lists them;
docs/clients.md shows that list ("Errors: one status per protocol"), and a test keeps the two the same.

"Already exists", decided per securable so that every client that sends it is satisfied:
- schemas: 409 everywhere. Sail implements CREATE SCHEMA IF NOT EXISTS by creating and taking a
  409 as "exists" (Unity Catalog OSS answers 409).
- tables: 400 TABLE_ALREADY_EXISTS in the Unity Catalog API (seed 000 fixes it), 409 in the Delta
  and Iceberg APIs.
- catalogs: 400 CATALOG_ALREADY_EXISTS in the Unity Catalog API (what the UC SDK tests expect; no
  client needs another), 409 in the Delta and Iceberg APIs.
- volumes, functions, registered models, credentials, external locations: 409 ALREADY_EXISTS
  (MLflow's registry client knows ALREADY_EXISTS by name).
"""

from __future__ import annotations

import logging
import re

from django.core.exceptions import RequestDataTooBig
from django.db import DataError, IntegrityError
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from ucweb.mounts import iceberg_root_of

logger = logging.getLogger(__name__)


class CatalogError(Exception):
    status = 400
    error_code = "INVALID_PARAMETER_VALUE"
    iceberg_type = "BadRequestException"
    iceberg_status = None  # where the Iceberg REST spec gives another status than Unity Catalog
    delta_status = None  # where the Delta REST API (/delta/v1) gives another status
    # A "does not exist" that stands for "exists, but you may not see it" (catalog.resolve). The
    # caller never learns it; the audit log records the refusal as DENIED.
    hidden = False
    # The securable the request was refused on, for the audit trail (never the response).
    securable = None

    def __init__(self, message: str, *, details: list | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or []

    def about(self, securable) -> CatalogError:
        """This error, refusing a request on `securable` (recorded on that securable's audit trail)."""
        self.securable = securable
        return self


ROWS: list[type[CatalogError]] = []


def _error(
    name: str, status: int, error_code: str, iceberg_type: str, iceberg_status: int | None = None,
    *, delta_status: int | None = None,
) -> type[CatalogError]:
    attributes = {"status": status, "error_code": error_code, "iceberg_type": iceberg_type,
                  "iceberg_status": iceberg_status, "delta_status": delta_status}
    row = type(name, (CatalogError,), attributes)
    ROWS.append(row)
    return row


def _does_not_exist(securable: str, iceberg_type: str = "NotFoundException", *,
                    error_code: str = "") -> type[CatalogError]:
    """The 404 `<Securable>DoesNotExist`: `ExternalLocation` gives ExternalLocationDoesNotExist,
    with the code EXTERNAL_LOCATION_DOES_NOT_EXIST unless `error_code` names another."""
    words = re.findall(r"[A-Z][a-z]*", securable)
    code = error_code or "_".join(words).upper() + "_DOES_NOT_EXIST"
    return _error(f"{securable}DoesNotExist", 404, code, iceberg_type)


def _already_exists(securable: str, status: int) -> type[CatalogError]:
    """`<Securable>AlreadyExists`, SCHEMA_ALREADY_EXISTS: `status` in the Unity Catalog API, 409 in
    the Delta and Iceberg APIs."""
    code = securable.upper() + "_ALREADY_EXISTS"
    return _error(f"{securable}AlreadyExists", status, code, "AlreadyExistsException", 409, delta_status=409)


InvalidParameter = _error("InvalidParameter", 400, "INVALID_PARAMETER_VALUE", "BadRequestException")
Unauthenticated = _error("Unauthenticated", 401, "UNAUTHENTICATED", "NotAuthorizedException")
PermissionDenied = _error("PermissionDenied", 403, "PERMISSION_DENIED", "ForbiddenException")
NotFound = _error("NotFound", 404, "NOT_FOUND", "NotFoundException")
MethodNotAllowed = _error("MethodNotAllowed", 405, "METHOD_NOT_ALLOWED", "BadRequestException")
AlreadyExists = _error("AlreadyExists", 409, "ALREADY_EXISTS", "AlreadyExistsException")
RequestTooLarge = _error("RequestTooLarge", 413, "REQUEST_LIMIT_EXCEEDED", "BadRequestException")
UnsupportedMediaType = _error("UnsupportedMediaType", 415, "INVALID_PARAMETER_VALUE", "BadRequestException")
ResourceExhausted = _error("ResourceExhausted", 429, "RESOURCE_EXHAUSTED", "TooManyRequestsException")
NotImplementedYet = _error("NotImplementedYet", 501, "NOT_IMPLEMENTED", "UnsupportedOperationException")
# The object store's token service could not be reached or refused to vend (not the request's fault).
TemporarilyUnavailable = _error(
    "TemporarilyUnavailable", 503, "TEMPORARILY_UNAVAILABLE", "ServiceUnavailableException")

MetastoreDoesNotExist = _does_not_exist("Metastore")
CatalogDoesNotExist = _does_not_exist("Catalog", "NoSuchWarehouseException")
SchemaDoesNotExist = _does_not_exist("Schema", "NoSuchNamespaceException")
TableDoesNotExist = _does_not_exist("Table", "NoSuchTableException")
PrincipalDoesNotExist = _does_not_exist("Principal")
GroupDoesNotExist = _does_not_exist("Group")
VolumeDoesNotExist = _does_not_exist("Volume")
FunctionDoesNotExist = _does_not_exist("Function")
# MLflow's registry clients know RESOURCE_DOES_NOT_EXIST (and ALREADY_EXISTS) by name.
RegisteredModelDoesNotExist = _does_not_exist("RegisteredModel", error_code="RESOURCE_DOES_NOT_EXIST")
ModelVersionDoesNotExist = _does_not_exist("ModelVersion", error_code="RESOURCE_DOES_NOT_EXIST")
CredentialDoesNotExist = _does_not_exist("Credential")
ExternalLocationDoesNotExist = _does_not_exist("ExternalLocation")
# "Already exists" per securable: see the module's docstring for which client needs which status.
CatalogAlreadyExists = _already_exists("Catalog", 400)
SchemaAlreadyExists = _already_exists("Schema", 409)
TableAlreadyExists = _already_exists("Table", 400)
CatalogNotEmpty = _error("CatalogNotEmpty", 400, "CATALOG_NOT_EMPTY", "NamespaceNotEmptyException", 409)
SchemaNotEmpty = _error("SchemaNotEmpty", 400, "SCHEMA_NOT_EMPTY", "NamespaceNotEmptyException", 409)
# Iceberg REST errors without a Unity Catalog twin.
CommitFailed = _error("CommitFailed", 409, "ABORTED", "CommitFailedException")
ViewDoesNotExist = _does_not_exist("View", "NoSuchViewException", error_code="TABLE_DOES_NOT_EXIST")
UnprocessableEntity = _error("UnprocessableEntity", 422, "INVALID_PARAMETER_VALUE", "UnprocessableEntityException")
# Server-side scan planning: a plan id or plan task that is unknown, expired, cancelled or another
# principal's (all answer alike).
PlanDoesNotExist = _does_not_exist("Plan", "NoSuchPlanIdException", error_code="NOT_FOUND")
PlanTaskDoesNotExist = _does_not_exist("PlanTask", "NoSuchPlanTaskException", error_code="NOT_FOUND")
# Polaris-native API (policies, generic tables); the types are those of the Polaris spec.
PolicyDoesNotExist = _does_not_exist("Policy", "NoSuchPolicyException", error_code="NOT_FOUND")
PolicyVersionMismatch = _error("PolicyVersionMismatch", 409, "ABORTED", "PolicyVersionMismatchException")
PolicyInUse = _error("PolicyInUse", 400, "INVALID_PARAMETER_VALUE", "PolicyInUseException")
PolicyAttachmentConflict = _error(
    "PolicyAttachmentConflict", 409, "ALREADY_EXISTS", "ConflictPolicyAttachmentException")
PolicyMappingDoesNotExist = _does_not_exist("PolicyMapping", "NoSuchMappingException", error_code="NOT_FOUND")
# A write the database refused at commit because of a concurrent one that committed first (a
# catalog or schema dropped while something was being created in it): nothing was changed.
ConcurrentChange = _error("ConcurrentChange", 409, "ABORTED", "CommitFailedException")


def uc_body(exc: CatalogError) -> dict:
    return {"error_code": exc.error_code, "message": exc.message, "details": exc.details}


def iceberg_status(exc: CatalogError) -> int:
    return exc.iceberg_status or exc.status


def delta_status(exc: CatalogError) -> int:
    return exc.delta_status or exc.status


def status_table() -> list[dict]:
    """Every error row with its status in each protocol (the table of docs/clients.md)."""
    return [
        {"error": row.__name__, "error_code": row.error_code, "uc": row.status, "delta": delta_status(row),
         "iceberg": iceberg_status(row), "iceberg_type": row.iceberg_type}
        for row in ROWS
    ]


def iceberg_body(exc: CatalogError) -> dict:
    return {"error": {"message": exc.message, "type": exc.iceberg_type, "code": iceberg_status(exc)}}


def is_iceberg_path(path: str) -> bool:
    return iceberg_root_of(path) is not None


def _is_iceberg_request(request) -> bool:
    return is_iceberg_path(getattr(request, "path", "") or "")


def _translate(exc: Exception) -> CatalogError | None:
    """Maps framework exceptions onto the catalog's own errors."""
    if isinstance(exc, CatalogError):
        return exc
    if isinstance(exc, RequestDataTooBig):
        return RequestTooLarge("Request body is too large.")
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        return Unauthenticated(str(exc.detail))
    if isinstance(exc, drf_exceptions.PermissionDenied):
        return PermissionDenied(str(exc.detail))
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return MethodNotAllowed(str(exc.detail))
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return UnsupportedMediaType(str(exc.detail))
    if isinstance(exc, drf_exceptions.ParseError):
        return InvalidParameter(f"Malformed request body: {exc.detail}")
    if isinstance(exc, drf_exceptions.ValidationError):
        return InvalidParameter(_flatten_validation(exc.detail))
    if isinstance(exc, Http404 | drf_exceptions.NotFound):
        return NotFound("Resource not found.")
    if isinstance(exc, drf_exceptions.Throttled):
        return ResourceExhausted(str(exc.detail))
    if isinstance(exc, DataError):
        # The database refused a value (SQLSTATE class 22: too long for its column, out of range,
        # not representable). That is bad input the services did not catch first; the transaction
        # of the service has been rolled back. Logged so that the missing check can be added.
        logger.warning("Database refused a value: %s", exc)
        return InvalidParameter("A value is too long, out of range or otherwise invalid for its field.")
    if isinstance(exc, IntegrityError) and _lost_a_race(exc):
        # The services check names and containers first; a row that still breaks a foreign key or
        # a unique constraint at commit lost a race with another request (its container dropped,
        # its name taken). The transaction has been rolled back. Other constraints stay a 500.
        logger.warning("A write lost to a concurrent change: %s", exc)
        return ConcurrentChange("A concurrent change conflicts with this request (a container was dropped or "
                                "a name taken meanwhile); nothing was changed.")
    if isinstance(exc, drf_exceptions.APIException):
        error = CatalogError(str(exc.detail))
        error.status = exc.status_code
        return error
    return None


# Foreign key and unique violations (SQLSTATE; SQLite says it in words)
RACE_SQLSTATES = {"23503", "23505"}
RACE_MESSAGES = ("FOREIGN KEY constraint failed", "UNIQUE constraint failed")


def _lost_a_race(exc: IntegrityError) -> bool:
    sqlstate = getattr(exc.__cause__, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate in RACE_SQLSTATES
    return str(exc.__cause__ or exc).startswith(RACE_MESSAGES)


translate = _translate  # for the APIs that render their own envelope (catalog.api.delta)


def _flatten_validation(detail, prefix: str = "") -> str:
    if isinstance(detail, dict):
        parts = [_flatten_validation(value, f"{prefix}{key}.") for key, value in detail.items()]
        return "; ".join(p for p in parts if p)
    if isinstance(detail, list):
        return "; ".join(_flatten_validation(item, prefix) for item in detail)
    field = prefix.rstrip(".")
    return f"{field}: {detail}" if field and field != "non_field_errors" else str(detail)


def render(exc: CatalogError, request=None) -> Response:
    if request is not None and _is_iceberg_request(request):
        return Response(iceberg_body(exc), status=iceberg_status(exc))
    return Response(uc_body(exc), status=exc.status)


def exception_handler(exc, context):
    return _handle(exc, lambda error: render(error, context.get("request")))


def iceberg_exception_handler(exc, context):
    """For view classes that always answer the IcebergErrorResponse envelope, wherever they are
    mounted (`APIView.get_exception_handler`)."""
    return _handle(exc, lambda error: Response(iceberg_body(error), status=iceberg_status(error)))


SCIM_ROOT = "/api/1.0/unity-control/scim2/"
SCIM_ERROR_SCHEMA = "urn:ietf:params:scim:api:messages:2.0:Error"


def scim_body(exc: CatalogError) -> dict:
    """RFC 7644 §3.12: status as a string; scimType for a 400 (what was wrong) or a 409
    (uniqueness), set by the service that refused (catalog.services.scim.scim_error)."""
    body = {"schemas": [SCIM_ERROR_SCHEMA], "status": str(exc.status), "detail": exc.message}
    scim_type = getattr(exc, "scim_type", None) or {400: "invalidValue", 409: "uniqueness"}.get(exc.status)
    if scim_type and exc.status in (400, 409):
        body["scimType"] = scim_type
    return body


def scim_exception_handler(exc, context):
    """For the SCIM views (catalog.api.scim): the SCIM error envelope."""
    if isinstance(exc, drf_exceptions.ParseError):
        error = InvalidParameter(f"Malformed request body: {exc.detail}")
        error.scim_type = "invalidSyntax"
        exc = error
    return _handle(exc, lambda error: Response(scim_body(error), status=error.status))


def _handle(exc, respond):
    error = _translate(exc)
    if error is None:
        return None  # a real server bug: let Django log it and answer 500
    response = respond(error)
    response.hidden_refusal = error.hidden
    response.refused_securable = error.securable
    if isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        response["WWW-Authenticate"] = 'Bearer realm="ucweb"'
    return response


def not_found(request, exception=None):
    """Django's 404 for a URL that no route matches: the envelope of the API the path is under,
    never an HTML page."""
    from django.http import JsonResponse
    from django.views.defaults import page_not_found

    if not request.path.startswith("/api/"):
        return page_not_found(request, exception)
    error = NotFound(f"No endpoint at {request.method} {request.path}.")
    if request.path.startswith(SCIM_ROOT):
        return JsonResponse(scim_body(error), status=404, content_type="application/scim+json")
    if _is_iceberg_request(request):
        return JsonResponse(iceberg_body(error), status=404)
    return JsonResponse(uc_body(error), status=404)
