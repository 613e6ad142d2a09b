"""Names kept for the modules that still import them from here: lookups by name or id live in
catalog.resolve, pagination in catalog.pagination."""

from __future__ import annotations

from catalog import pagination, resolve
from catalog.services.names import quote_part

# -- kept for callers not yet moved to catalog.resolve (commits/delta_v1.py) ------------------------
catalog_not_found = resolve.catalog_not_found
get_catalog = resolve.get_catalog
get_schema = resolve.get_schema
get_table = resolve.get_table
get_table_by_full_name = resolve.get_table_by_full_name


def schema_not_found(catalog_name: str, schema_name: str):
    return resolve.schema_not_found(catalog_name, quote_part(schema_name))


def table_not_found(catalog_name: str, schema_name: str, table_name: str):
    return resolve.table_not_found(catalog_name, quote_part(schema_name), table_name)


# -- pagination: catalog.pagination, under the names its callers know -----------------------------
page_size = pagination.page_size
encode_page_token = pagination.encode_page_token
decode_page_token = pagination.decode_page_token
paginate = pagination.paginate
paginate_list = pagination.paginate_list


def paginate_versions(queryset, *, max_results, page_token):
    """Keyset pagination of model versions by number."""
    return pagination.paginate(queryset, max_results=max_results, page_token=page_token, key="version", numeric=True,
                               maximum=pagination.SPEC_MAXIMUM["model_versions"])
