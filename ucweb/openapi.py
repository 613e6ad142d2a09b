"""OpenAPI schema hooks, and the document's view of the bodies described as pydantic models."""

from collections import defaultdict
from typing import get_args

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.settings import spectacular_settings
from drf_spectacular.utils import OpenApiParameter
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from ucweb.bodies import COMPONENT, MIN64
from ucweb.mounts import ICEBERG_ROOT, ICEBERG_ROOTS, iceberg_root_of

ICEBERG_TAG = "Iceberg REST"
ICEBERG_TAG_DESCRIPTION = (
    f"The Apache Iceberg REST catalog at {ICEBERG_ROOT.rstrip('/')}. The same catalog, with the same "
    "authentication and the same answers (the OAuth token endpoint and the Polaris-native API at "
    "polaris/v1 included), is also served under "
    + " and ".join(root.rstrip("/") for root in ICEBERG_ROOTS[1:])
    + ", where Unity Catalog OSS and Databricks serve theirs: this document lists each operation "
    f"once, under {ICEBERG_ROOT.rstrip('/')}."
)


def one_iceberg_root(endpoints, **kwargs):
    """Each Iceberg REST and Polaris operation once, under ucweb's own root: the other roots serve
    the same operations (the Iceberg tag's description names them)."""
    return [endpoint for endpoint in endpoints if iceberg_root_of(endpoint[0]) in (None, ICEBERG_ROOT)]


def _distinct(operation_id: str, path: str) -> str:
    """A name for an operation that shares its operationId with another route: Iceberg views are
    views, the preview and singular Delta routes are aliases, and Iceberg's table operations that
    the UC API also has are prefixed with `iceberg`."""
    if path.startswith(ICEBERG_ROOT) and "/views" in path:
        return operation_id.replace("Tables", "Views").replace("Table", "View")
    if "/preview/" in path:
        return f"{operation_id}Preview"
    if path.endswith("/delta/commit"):
        return f"{operation_id}Alias"
    if path.startswith(ICEBERG_ROOT):
        return f"iceberg{operation_id[:1].upper()}{operation_id[1:]}"
    return operation_id


def distinct_operation_ids(result, generator, request, public):
    """Every operation keeps a unique, meaningful operationId (drf-spectacular would otherwise warn
    on every schema request and number the duplicates)."""
    operations = defaultdict(list)
    for path, methods in result.get("paths", {}).items():
        for method, operation in methods.items():
            if isinstance(operation, dict) and "operationId" in operation:
                operations[operation["operationId"]].append((path, method))
    for operation_id, routes in operations.items():
        if len(routes) < 2:
            continue
        for path, method in routes:
            result["paths"][path][method]["operationId"] = _distinct(operation_id, path)
    return result


def describe_iceberg_roots(result, generator, request, public):
    """The Iceberg tag's description names every root the catalog is served at. Every tag is
    listed, in the order the operations show them, so that the UI keeps its order of groups."""
    described = {tag["name"]: tag for tag in result.get("tags", [])}
    described[ICEBERG_TAG] = {"name": ICEBERG_TAG, "description": ICEBERG_TAG_DESCRIPTION}
    order = {}
    for methods in result.get("paths", {}).values():
        for operation in methods.values():
            for name in operation.get("tags", ()) if isinstance(operation, dict) else ():
                order.setdefault(name, None)
    names = [*order, *(name for name in described if name not in order)]
    result["tags"] = [described.get(name, {"name": name}) for name in names]
    return result


# -- the bodies described as pydantic models (ucweb.bodies) -----------------------------------------
class OpenAPI30(GenerateJsonSchema):
    """pydantic's JSON Schema in the dialect of this document (OpenAPI 3.0): an optional member is
    `nullable` rather than a union with null, and an absent member has no default nor a title."""

    def nullable_schema(self, schema):
        inner = self.generate_inner(schema["schema"])
        if "$ref" in inner:  # 3.0 ignores the siblings of a $ref
            return {"allOf": [inner], "nullable": True}
        return {**inner, "nullable": True}

    def default_schema(self, schema):
        generated = super().default_schema(schema)
        if generated.get("default", ...) is None:
            del generated["default"]
        return generated

    def literal_schema(self, schema):
        generated = super().literal_schema(schema)
        # 3.0 has no const; a one-value literal tags a member of a union, whose discriminator's
        # mapping names the value.
        generated.pop("const", None)
        return generated

    def field_title_should_be_set(self, schema) -> bool:
        return False

    def model_schema(self, schema):
        generated = super().model_schema(schema)
        generated.pop("title", None)
        generated.pop("description", None)  # a model's docstring is for its readers, not the API's
        return generated


class BodyExtension(OpenApiSerializerExtension):
    """A body (ucweb.bodies.Body) is its own component, named as its class; the components it
    holds are named as theirs, with the Request suffix on the request side as the document's
    serializers have it (COMPONENT_SPLIT_REQUEST)."""

    target_class = "ucweb.bodies.Body"
    match_subclasses = True
    priority = 1  # before drf-spectacular's own pydantic extension

    def get_name(self, auto_schema, direction):
        return self.target.__name__

    def map_serializer(self, auto_schema, direction):
        suffix = "Request" if direction == "request" and spectacular_settings.COMPONENT_SPLIT_REQUEST else ""
        schema = self.target.model_json_schema(
            ref_template=f"#/components/schemas/{{model}}{suffix}", schema_generator=OpenAPI30,
            mode="validation" if direction == "request" else "serialization")
        schema = _references(schema, suffix)
        models = _models(self.target)
        for name, component in schema.pop("$defs", {}).items():
            # The model itself is the component's identity, as when it is an operation's body.
            auto_schema.registry.register_on_missing(ResolvedComponent(
                name=name + suffix, type=ResolvedComponent.SCHEMA, object=models.get(name, name), schema=component))
        return schema


def _models(model, found: dict | None = None) -> dict[str, type]:
    """The models `model` holds, however deep, by name."""
    found = {} if found is None else found
    kinds = [field.annotation for field in model.model_fields.values()]
    # A field read first as a plain list by a validator declares its items' model for the schema.
    kinds += [getattr(meta, "json_schema_input_type", None) for field in model.model_fields.values()
              for meta in field.metadata]
    while kinds:
        kind = kinds.pop()
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            if kind.__name__ not in found:
                found[kind.__name__] = kind
                _models(kind, found)
        else:
            kinds.extend(get_args(kind))
    return found


def _references(schema, suffix: str):
    """`schema` with each {COMPONENT: name} a reference to that component (on the side of `suffix`)."""
    if isinstance(schema, dict):
        if COMPONENT in schema:
            return {"$ref": f"#/components/schemas/{schema[COMPONENT]}{suffix}"}
        return {key: _references(value, suffix) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_references(item, suffix) for item in schema]
    return schema


def query_parameters(model) -> list[OpenApiParameter]:
    """The members of `model` as query parameters (none required: they may come in a body)."""
    properties = model.model_json_schema(schema_generator=OpenAPI30)["properties"]
    parameters = []
    for name, schema in properties.items():
        schema = {key: value for key, value in schema.items()
                  if key not in ("nullable", "description", "maximum", "minLength")}
        if schema.get("minimum") == MIN64:
            del schema["minimum"]
        parameters.append(OpenApiParameter(name, schema, description=properties[name].get("description", "")))
    return parameters
