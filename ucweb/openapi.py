"""OpenAPI schema hooks."""

from collections import defaultdict


def _distinct(operation_id: str, path: str) -> str:
    """A name for an operation that shares its operationId with another route: Iceberg views are
    views, the preview and singular Delta routes are aliases, and Iceberg's table operations that
    the UC API also has are prefixed with `iceberg`."""
    if path.startswith("/api/catalog/") and "/views" in path:
        return operation_id.replace("Tables", "Views").replace("Table", "View")
    if "/preview/" in path:
        return f"{operation_id}Preview"
    if path.endswith("/delta/commit"):
        return f"{operation_id}Alias"
    if path.startswith("/api/catalog/"):
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
