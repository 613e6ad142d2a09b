"""What the views of the securables beside tables share."""

from drf_spectacular.utils import OpenApiParameter

CATALOG_AND_SCHEMA = [
    OpenApiParameter("catalog_name", str, required=True),
    OpenApiParameter("schema_name", str, required=True),
]


def query(request, name):
    return request.query_params.get(name)
