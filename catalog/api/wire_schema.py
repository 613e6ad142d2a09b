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

_components: dict[str, tuple[Spelling | None, type[serializers.Serializer]]] = {}


def component(shape: Shape, *, name: str | None = None, spelling: Spelling | None = None,
              fields: Fields | None = None) -> type[serializers.Serializer]:
    """The serializer (for the document only) of `shape`, one class per component name. A shape
    read with another spelling is another component, and needs a name of its own."""
    name = name or shape.name
    if name not in _components:
        declared = {(spelling(m.name) if spelling else m.name): _field(m, spelling, fields or {})
                    for m in shape.members}
        _components[name] = spelling, type(name, (serializers.Serializer,), declared)
    spelled, serializer = _components[name]
    if spelled is not spelling:
        raise ValueError(f"The component {name} is spelled two ways; name one of them.")
    return serializer


def _field(member: Member, spelling: Spelling | None, fields: Fields) -> serializers.Field:
    kind = member.type
    options = {"required": member.required}
    if member.description:
        options["help_text"] = member.description
    if kind is int:
        return serializers.IntegerField(min_value=member.minimum, **options)
    if kind is str:
        return serializers.CharField(allow_blank=not member.required, **options)
    if kind is UUID:
        return serializers.UUIDField(**options)
    if isinstance(kind, Shape):
        return component(kind, spelling=spelling, fields=fields)(**options)
    if get_origin(kind) is list:
        each = member.entry()
        if isinstance(each.type, Shape):
            return component(each.type, spelling=spelling, fields=fields)(many=True, **options)
        return serializers.ListField(child=_field(each, spelling, fields), **options)
    return fields[kind](**options)


def query_parameters(shape: Shape) -> list[OpenApiParameter]:
    """The members of `shape` as query parameters (none required: they may come in a body)."""
    types = {int: int, str: str, UUID: str}
    return [OpenApiParameter(m.name, types[m.type], description=m.description) for m in shape.members]
