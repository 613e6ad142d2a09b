"""The bodies of the APIs, each described once as a pydantic model (a `Body`): `read` checks a body
against its model, and the OpenAPI document shows the same model (ucweb.openapi.BodyExtension), so
what the document promises is what the parser takes.

A refusal reads as clients have always been answered, whatever pydantic calls the error: the path
of the member in the body, then what is wrong (`commit_info.version must be at least 1 (is 0).`,
`metadata.partition_columns[1] must not be empty.`); the first wrong member in the body's order is
the one named. A rule a member's type cannot say is a validator that raises `refusal(...)`, whose
text names the member's place as `{path}`.

Every optional member takes null as absent (a null description clears it); a required member that
is null is missing. Integers are 64-bit JSON numbers, never digit strings, except where a model
takes query parameters (`digits_as_integers`)."""

from __future__ import annotations

import functools
import re
import uuid
from typing import Annotated, TypeVar

from pydantic import (
    BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, ValidationError, WithJsonSchema, WrapValidator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ucweb.errors import InvalidParameter

MIN64, MAX64 = -(2**63), 2**63 - 1
PATH = "{path}"  # where a refusal's text names the member's place in the body
# In a member's JSON Schema, {COMPONENT: name} stands for a component of the document that is not a
# model (ucweb.openapi.BodyExtension makes it a reference).
COMPONENT = "x-component"


class Body(BaseModel):
    """A JSON object of an API: no coercion (a string is not a number), unknown members ignored."""

    model_config = ConfigDict(strict=True, extra="ignore")

    @classmethod
    def at(cls, member: str) -> str:
        """`{path}.<member>` as the wire spells the member, for a refusal of a model-wide rule."""
        return f"{PATH}.{cls.model_fields[member].alias or member}"


def hyphenated(name: str) -> str:
    """The wire's spelling of a member in the APIs that hyphenate (`metadata-location`)."""
    return name.replace("_", "-")


class Hyphenated(Body):
    """A body whose members the wire spells with hyphens."""

    model_config = ConfigDict(alias_generator=hyphenated)


class HyphenatedAbsentAsNull(Hyphenated):
    """A hyphenated body whose required members, when absent, are read as null: an API that has
    always answered a missing member as it answers a null one (`worded`)."""

    @model_validator(mode="before")
    @classmethod
    def _absent_as_null(cls, data):
        return {**_nulls(cls), **data} if isinstance(data, dict) else data


def refusal(text: str, error: type[InvalidParameter] = InvalidParameter) -> PydanticCustomError:
    """A refusal of a validator; `text` names the member's place by beginning with `{path}`
    (ucweb.bodies.PATH). `read` raises it as `error`, for an API that tells bad requests apart."""
    return PydanticCustomError("refused", "{text}", {"text": text, "error": error})


def refusing(check, value, *args, **kwargs):
    """`check(value, ...)`, a service's check that raises InvalidParameter, as a refusal."""
    try:
        return check(value, *args, **kwargs)
    except InvalidParameter as exc:
        raise refusal(exc.message, type(exc)) from None


def worded(kind, text: str, *, null_only: bool = False):
    """`kind`, whose refusal (a null's too) reads `text` (`{path}` is the member's place) wherever
    in the value it is wrong; with `null_only`, only a null (or absent: HyphenatedAbsentAsNull)
    one does, and the value's own refusals keep their words."""
    def check(value, handler):
        if value is None:
            raise refusal(text)
        if null_only:
            return handler(value)
        try:
            return handler(value)
        except ValidationError:
            raise refusal(text) from None
    return Annotated[kind, WrapValidator(check)]


@functools.cache
def _nulls(model: type[BaseModel]) -> dict:
    return {field.alias or name: None for name, field in model.model_fields.items() if field.is_required()}


def placed_at_root(kind):
    """`kind`, whose refusals name its members from the body's root, not from its own place."""
    def check(value, handler):
        try:
            return handler(value)
        except ValidationError as exc:
            raise refusal(_message(exc.errors(include_url=False)[0], "")) from None
    return Annotated[kind, WrapValidator(check)]


def Int64(minimum: int | None = None):  # noqa: N802 (a type)
    """A 64-bit integer, at least `minimum`."""
    return Annotated[int, Field(ge=MIN64 if minimum is None else minimum, le=MAX64,
                                json_schema_extra={"format": "int64"})]


def _uuid(value) -> str:
    if not isinstance(value, str) or not value:
        raise refusal(f"{PATH} is required.")
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise refusal(f"{PATH} {value!r} is not a valid id.") from None


Id = Annotated[str, PlainValidator(_uuid), WithJsonSchema({"type": "string", "format": "uuid"})]
NonEmpty = Annotated[str, Field(min_length=1)]


def _digits(value):
    return int(value) if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value) else value


def digits_as_integers(kind):
    """`kind` also read from ASCII digits in a string (a query parameter), after one minus sign at most."""
    return Annotated[kind, BeforeValidator(_digits)]


B = TypeVar("B", bound=Body)


def read(model: type[B], data, where: str = "") -> B:
    """`data` checked against `model`; `where` is the path of `data` in the request, for messages."""
    if not isinstance(data, dict):
        raise InvalidParameter(f"{where or 'The request body'} must be an object.")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        kind = error["ctx"]["error"] if error["type"] == "refused" else InvalidParameter
        raise kind(_message(error, where)) from None


def _message(error: dict, where: str) -> str:
    path = where
    for part in error["loc"]:
        path = f"{path}[{part}]" if isinstance(part, int) else f"{path}.{part}" if path else str(part)
    kind, value = error["type"], error.get("input")
    if kind == "refused":
        text = error["ctx"]["text"]
        if not text.startswith(PATH):
            return text
        # Only the leading one: the rest of the text may quote a value that reads "{path}".
        rest = text[len(PATH):]
        return f"{path}{rest}" if path or not rest.startswith(".") else rest[1:]
    if kind == "missing" or value is None:
        return f"{path} is required."
    if kind == "less_than_equal" or (kind == "greater_than_equal" and value < MIN64):
        return f"{path} is out of range."
    if kind == "greater_than_equal":
        return f"{path} must be at least {error['ctx']['ge']} (is {value})."
    return f"{path} {_WRONG_TYPE.get(kind, 'is not valid')}."


_WRONG_TYPE = {
    "int_type": "must be an integer", "string_type": "must be a string", "string_too_short": "must not be empty",
    "model_type": "must be an object", "dict_type": "must be an object", "list_type": "must be an array",
}
