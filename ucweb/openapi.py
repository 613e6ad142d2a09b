"""OpenAPI schema hooks."""

from collections import defaultdict

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
