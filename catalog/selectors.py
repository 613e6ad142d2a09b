"""Reads of the namespace. Every lookup that the APIs make goes through here, so the number of
queries of a hot path is decided in one place."""

from __future__ import annotations

from catalog.models import Catalog, Schema, Table
# Pagination lives in catalog.pagination; its callers here know it by these names.
from catalog.pagination import decode_page_token, encode_page_token, page_size, paginate  # noqa: F401
from catalog.services.names import join_full_name, split_full_name
from ucweb.errors import CatalogDoesNotExist, SchemaDoesNotExist, TableDoesNotExist


# -- "not found", worded as Unity Catalog words it (clients match on `Catalog not found: <name>`) --
# A missing securable and one the caller may not see (catalog.resolve) answer with the same error.
def catalog_not_found(name: str) -> CatalogDoesNotExist:
    return CatalogDoesNotExist(f"Catalog not found: {name}")


def schema_not_found(catalog_name: str, schema_name: str) -> SchemaDoesNotExist:
    return SchemaDoesNotExist(f"Schema not found: {join_full_name(catalog_name, schema_name)}")


def table_not_found(catalog_name: str, schema_name: str, table_name: str) -> TableDoesNotExist:
    return TableDoesNotExist(f"Table not found: {join_full_name(catalog_name, schema_name, table_name)}")


def table_id_not_found(table_id) -> TableDoesNotExist:
    return TableDoesNotExist(f"Table not found: {table_id}")


# -- lookups without a caller (the services resolve for a caller through catalog.resolve) ---------
def find_catalog(name: str, *, for_update: bool = False) -> Catalog | None:
    queryset = Catalog.objects.select_for_update() if for_update else Catalog.objects.all()
    return queryset.filter(name=name).first()


def find_schema(catalog_name: str, schema_name: str, *, for_update: bool = False) -> Schema | None:
    queryset = Schema.objects.select_related("catalog")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    return queryset.filter(catalog__name=catalog_name, name=schema_name).first()


def get_catalog(name: str) -> Catalog:
    catalog = find_catalog(name)
    if catalog is None:
        raise catalog_not_found(name)
    return catalog


def get_schema(catalog_name: str, schema_name: str) -> Schema:
    schema = find_schema(catalog_name, schema_name)
    if schema is None:
        get_catalog(catalog_name)
        raise schema_not_found(catalog_name, schema_name)
    return schema


def get_schema_by_full_name(full_name: str) -> Schema:
    catalog_name, schema_name = split_full_name(full_name, 2, what="schema")
    return get_schema(catalog_name, schema_name)


def get_table(catalog_name: str, schema_name: str, table_name: str, *, for_update: bool = False) -> Table:
    queryset = Table.objects.select_related("schema__catalog")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    table = queryset.filter(
        schema__catalog__name=catalog_name, schema__name=schema_name, name=table_name
    ).first()
    if table is None:
        get_schema(catalog_name, schema_name)
        raise table_not_found(catalog_name, schema_name, table_name)
    return table


def get_table_by_full_name(full_name: str, *, for_update: bool = False) -> Table:
    catalog_name, schema_name, table_name = split_full_name(full_name, 3, what="table")
    return get_table(catalog_name, schema_name, table_name, for_update=for_update)


