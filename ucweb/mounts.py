"""Where the Iceberg REST catalog is served. The URL table mounts it at every root; the error
envelope of a path that matches no route, the OpenAPI schema and the URLs the catalog hands back to
its clients (the remote signer's) are decided from the same list."""

from __future__ import annotations

# ucweb's own root first, then the roots other catalogs serve their Iceberg REST catalog at, which
# clients set up for them look for: Unity Catalog OSS (`.../iceberg`) and Databricks
# (`.../iceberg-rest`). Each serves the same catalog (and the Polaris-native API at `polaris/`
# under it, which the config endpoint's `endpoints` name relative to the root).
ICEBERG_ROOT = "/api/catalog/"
ICEBERG_ROOTS = (ICEBERG_ROOT, "/api/2.1/unity-catalog/iceberg/", "/api/2.1/unity-catalog/iceberg-rest/")


def iceberg_root_of(path: str) -> str | None:
    """The Iceberg root that `path` lies under (or names, without its final slash), if any."""
    return next((root for root in ICEBERG_ROOTS if path.startswith(root) or path == root[:-1]), None)
