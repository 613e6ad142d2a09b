"""The Delta API's error envelope: {"error": {"type": "NoSuchTableException", "code": 404,
"message": "..."}}, with the Delta API's statuses (an existing name is 409 here while the UC API
answers 400). The views of this package declare this handler (`get_exception_handler`); the error
classes stay the one error table of ucweb.errors."""

from __future__ import annotations

from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from commits import delta_v1
from ucweb import errors

# error_code of ucweb.errors → (Delta error type, status)
BY_CODE = {
    "UNAUTHENTICATED": ("NotAuthorizedException", 401),
    "PERMISSION_DENIED": ("PermissionDeniedException", 403),
    "CATALOG_DOES_NOT_EXIST": ("NoSuchCatalogException", 404),
    "SCHEMA_DOES_NOT_EXIST": ("NoSuchSchemaException", 404),
    "TABLE_DOES_NOT_EXIST": ("NoSuchTableException", 404),
    "ALREADY_EXISTS": ("AlreadyExistsException", 409),
    "TABLE_ALREADY_EXISTS": ("AlreadyExistsException", 409),
    "SCHEMA_ALREADY_EXISTS": ("AlreadyExistsException", 409),
    "CATALOG_ALREADY_EXISTS": ("AlreadyExistsException", 409),
    "RESOURCE_EXHAUSTED": ("ResourceExhaustedException", 429),
    "NOT_IMPLEMENTED": ("NotImplementedException", 501),
    "TEMPORARILY_UNAVAILABLE": ("InternalServerErrorException", 503),
}
# Checked first, most specific class first.
BY_CLASS = (
    (delta_v1.CommitVersionConflict, "CommitVersionConflictException", 409),
    (delta_v1.RequirementFailed, "UpdateRequirementConflictException", 409),
    (delta_v1.UnsupportedTableFormat, "UnsupportedTableFormatException", 400),
    (delta_v1.BadRequest, "BadRequestException", 400),
)
MALFORMED = (drf_exceptions.ParseError, drf_exceptions.ValidationError, drf_exceptions.UnsupportedMediaType)


def classify(error: errors.CatalogError, original: Exception) -> tuple[str, int]:
    for cls, kind, status in BY_CLASS:
        if isinstance(error, cls):
            return kind, status
    if isinstance(original, drf_exceptions.Throttled):
        return "TooManyRequestsException", 429
    if isinstance(original, MALFORMED):
        return "BadRequestException", error.status
    if error.error_code in BY_CODE:
        return BY_CODE[error.error_code]
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
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="ucweb"'
    return response
