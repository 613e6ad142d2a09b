"""The UC API renders catalogs and tables as plain dicts (catalog.api.uc.serializers.catalog_info
and table_info) where the serializers CatalogInfo and TableInfo describe them in the OpenAPI
schema: both must give the same JSON, key for key and in the same order."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog import rows
from catalog.api.uc.serializers import CatalogInfo, TableInfo, catalog_info, table_info
from catalog.choices import DataSourceFormat, TableType
from catalog.models import Catalog, Column, Principal, Schema, Table

pytestmark = pytest.mark.django_db


def _same(rendered: dict, serialized) -> None:
    assert json.dumps(rendered) == json.dumps(serialized)


def _catalogs() -> list[Catalog]:
    now = timezone.now()
    return [
        Catalog.objects.create(name="plain", owner="alice", created_by="alice"),
        Catalog.objects.create(name="full", owner="alice", created_by="bob", comment="c\u00e9", properties={"a": "1"},
                               storage_root="file:///tmp/r", storage_location="file:///tmp/r/x",
                               updated_at=now + timedelta(seconds=3), updated_by="carol"),
    ]


def test_a_catalog_renders_as_its_serializer_does():
    for catalog in _catalogs():
        _same(catalog_info(catalog), CatalogInfo(catalog).data)
        found = rows.catalog(Principal.objects.create(name=f"reader-{catalog.name}"), catalog.name)
        _same(catalog_info(found), CatalogInfo(catalog).data)


def _tables() -> list[Table]:
    catalog = Catalog.objects.create(name="c", owner="alice", created_by="alice")
    top = Schema.objects.create(catalog=catalog, name="s", owner="alice", created_by="alice")
    nested = Schema.objects.create(catalog=catalog, parent=top, name="n", owner="alice", created_by="alice")
    made = [
        Table.objects.create(schema=top, name="bare", table_type=TableType.EXTERNAL, owner="alice",
                             created_by="alice", data_source_format=DataSourceFormat.PARQUET,
                             storage_location="file:///tmp/t/bare"),
        Table.objects.create(schema=nested, name="view", table_type=TableType.VIEW, owner="bob", created_by="alice",
                             comment="a view", properties={"k": "v", "n": "2"}, view_definition="SELECT 1",
                             view_dependencies={"dependencies": [{"table": {"table_full_name": "c.s.bare"}}]}),
        Table.objects.create(schema=top, name="registered", table_type=TableType.EXTERNAL, owner="alice",
                             created_by="alice", data_source_format=DataSourceFormat.DELTA,
                             storage_location="file:///tmp/t/registered",
                             registered_location="file:///tmp/t/registered/", updated_by="bob",
                             latest_version=0, latest_published_version=0),
    ]
    for position, (name, type_name) in enumerate([("id", "LONG"), ("city", "STRING"), ("amount", "DECIMAL")]):
        Column.objects.create(table=made[0], name=name, type_text=type_name.lower(), type_json="{}",
                              type_name=type_name, position=position, nullable=position != 0,
                              type_precision=10 if type_name == "DECIMAL" else None,
                              type_scale=2 if type_name == "DECIMAL" else None,
                              partition_index=0 if name == "city" else None, comment="c" if position else None)
    return made


@pytest.mark.parametrize("admin", [True, False])
def test_a_table_renders_as_its_serializer_does(admin):
    caller = Principal.objects.create(name="reader", is_metastore_admin=admin)
    for table in _tables():
        expected = TableInfo(Table.objects.select_related("schema__catalog").prefetch_related("columns")
                             .get(id=table.id)).data
        _same(table_info(table), expected)  # its columns from table.columns
        found = rows.tables(caller, rows.by_name(1), [table.schema.catalog.name, table.schema.path, table.name],
                            columns=True)
        _same(table_info(found[0]), expected)  # its columns read with the row
