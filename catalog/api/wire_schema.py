"""OpenAPI components generated from the wire descriptions the services parse with
(commits.delta_wire: a Shape of Members), so that the document cannot drift from the parser."""

from __future__ import annotations

from typing import Callable, get_origin
from uuid import UUID

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from commits.delta_wire import Member, Shape, Spelling

# Member types that name a structure of the API's own (a column, a property map): their fields.
Fields = dict[type, Callable[..., serializers.Field]]

# A component's name → how it was built (its spelling, the Fields it used) and its serializer.
_components: dict[str, tuple[tuple, type[serializers.Serializer]]] = {}


def component(shape: Shape, *, name: str | None = None, spelling: Spelling | None = None,
              fields: Fields | None = None) -> type[serializers.Serializer]:
    """The serializer (for the document only) of `shape`, one class per component name. A shape
    read with another spelling, or built with other `fields` for the types it holds, is another
    component, and needs a name of its own."""
    name = name or shape.name
    fields = fields or {}
    built = spelling, {kind: fields[kind] for kind in fields if any(m.type is kind for m in shape.members)}
    if name not in _components:
        declared = {(spelling(m.name) if spelling else m.name): _field(m, spelling, fields)
                    for m in shape.members}
        _components[name] = built, type(name, (serializers.Serializer,), declared)
    before, serializer = _components[name]
    if before[0] is not spelling or before[1] != built[1]:
        raise ValueError(f"The component {name} is built two ways (spelling or fields); name one of them.")
    return serializer


def _field(member: Member, spelling: Spelling | None, fields: Fields) -> serializers.Field:
    kind = member.type
    # The parser reads null as absent for every optional member (e.g. a null description clears it).
    options = {"required": member.required, "allow_null": not member.required}
    if member.description:
        options["help_text"] = member.description
    if kind is int:
        low = -(2**63) if member.minimum is None else member.minimum  # 64-bit, as the parser reads
        return serializers.IntegerField(min_value=low, max_value=2**63 - 1, **options)
    if kind is str:
        return serializers.CharField(allow_blank=not member.required, **options)
    if kind is UUID:
        return serializers.UUIDField(**options)
    if isinstance(kind, Shape):
        return component(kind, spelling=spelling, fields=fields)(**options)
    if get_origin(kind) is list:
        each = member.item()
        if isinstance(each.type, Shape):
            return component(each.type, spelling=spelling, fields=fields)(many=True, **options)
        return serializers.ListField(child=_field(each, spelling, fields), **options)
    return fields[kind](**options)


def query_parameters(shape: Shape) -> list[OpenApiParameter]:
    """The members of `shape` as query parameters (none required: they may come in a body)."""
    return [OpenApiParameter(m.name, _parameter_schema(m), description=m.description) for m in shape.members]


def _parameter_schema(member: Member) -> dict:
    if member.type is int:
        schema = {"type": "integer", "format": "int64"}
        return schema if member.minimum is None else {**schema, "minimum": member.minimum}
    if member.type is UUID:
        return {"type": "string", "format": "uuid"}
    return {"type": "string"}
