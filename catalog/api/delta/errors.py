"""The Delta API's error envelope: {"error": {"type": "NoSuchTableException", "code": 404,
"message": "..."}}, with the Delta API's statuses (an existing name is 409 here while the UC API
answers 400). The views of this package declare this handler (`get_exception_handler`); the error
classes stay the one error table of ucweb.errors."""

from __future__ import annotations

from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from commits import delta_v1
from ucweb import errors

# error_code of ucweb.errors → the Delta error type; the status is the error's Delta-API status
# in the one error table (ucweb.errors.delta_status).
TYPE_BY_CODE = {
    "UNAUTHENTICATED": "NotAuthorizedException",
    "PERMISSION_DENIED": "PermissionDeniedException",
    "CATALOG_DOES_NOT_EXIST": "NoSuchCatalogException",
    "SCHEMA_DOES_NOT_EXIST": "NoSuchSchemaException",
    "TABLE_DOES_NOT_EXIST": "NoSuchTableException",
    "ALREADY_EXISTS": "AlreadyExistsException",
    "TABLE_ALREADY_EXISTS": "AlreadyExistsException",
    "SCHEMA_ALREADY_EXISTS": "AlreadyExistsException",
    "CATALOG_ALREADY_EXISTS": "AlreadyExistsException",
    "RESOURCE_EXHAUSTED": "ResourceExhaustedException",
    "ABORTED": "UpdateRequirementConflictException",  # a concurrent change: read again and retry
    "NOT_IMPLEMENTED": "NotImplementedException",
    "TEMPORARILY_UNAVAILABLE": "InternalServerErrorException",
}
# Checked first, most specific class first.
BY_CLASS = (
    (delta_v1.CommitVersionConflict, "CommitVersionConflictException", 409),
    (delta_v1.RequirementFailed, "UpdateRequirementConflictException", 409),
    (delta_v1.UnsupportedTableFormat, "UnsupportedTableFormatException", 400),
    (delta_v1.BadRequest, "BadRequestException", 400),
)
MALFORMED = (drf_exceptions.ParseError, drf_exceptions.ValidationError, drf_exceptions.UnsupportedMediaType)


PATH_PREFIX = "/api/2.1/unity-catalog/delta/v1/"  # as mounted in ucweb.urls


def classify(error: errors.CatalogError, original: Exception) -> tuple[str, int]:
    for cls, kind, status in BY_CLASS:
        if isinstance(error, cls):
            return kind, status
    if isinstance(original, drf_exceptions.Throttled):
        return "TooManyRequestsException", 429
    if isinstance(original, MALFORMED):
        return "BadRequestException", error.status
    if error.error_code in TYPE_BY_CODE:
        return TYPE_BY_CODE[error.error_code], errors.delta_status(error)
    if error.status == 404:
        return "NotFoundException", 404
    if error.status >= 500:
        return "InternalServerErrorException", error.status
    if error.status == 400:
        return "InvalidParameterValueException", 400
    return "BadRequestException", error.status


def body(kind: str, status: int, message: str) -> dict:
    return {"error": {"type": kind, "code": status, "message": message}}


def exception_handler(exc, context):
    error = errors.translate(exc)
    if error is None:
        return None  # a server bug: Django logs it and answers 500
    kind, status = classify(error, exc)
    response = Response(body(kind, status, error.message), status=status)
    response.hidden_refusal = error.hidden
    response.refused_securable = error.securable
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="ucweb"'
    return response
