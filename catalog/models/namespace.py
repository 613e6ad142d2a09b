import uuid

from django.db import models

from catalog.choices import ColumnTypeName, DataSourceFormat, TableType
from catalog.services.names import join_full_name

from .base import Securable


class Metastore(models.Model):
    """The one metastore this server hosts; the securable that CREATE CATALOG is granted on."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.name


class Catalog(Securable):
    name = models.CharField(max_length=255, unique=True)
    storage_root = models.TextField(blank=True, null=True)
    storage_location = models.TextField(blank=True, null=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def full_name(self) -> str:
        return self.name


class Schema(Securable):
    catalog = models.ForeignKey(Catalog, on_delete=models.CASCADE, related_name="schemas")
    name = models.CharField(max_length=255)
    storage_root = models.TextField(blank=True, null=True)
    storage_location = models.TextField(blank=True, null=True)

    class Meta:
        ordering = ["catalog__name", "name"]
        constraints = [models.UniqueConstraint(fields=["catalog", "name"], name="uniq_schema_name")]

    def __str__(self):
        return self.full_name

    @property
    def full_name(self) -> str:
        return join_full_name(self.catalog.name, self.name)


class Table(Securable):
    """A table of any format and any protocol: Delta, Iceberg, Parquet...; managed, external or a
    view. The Unity Catalog API and the Iceberg REST API read and write the same row."""

    schema = models.ForeignKey(Schema, on_delete=models.CASCADE, related_name="tables")
    name = models.CharField(max_length=255)
    table_type = models.CharField(max_length=32, choices=TableType.choices)
    data_source_format = models.CharField(
        max_length=16, choices=DataSourceFormat.choices, blank=True, null=True
    )
    storage_location = models.TextField(blank=True, null=True)
    view_definition = models.TextField(blank=True, null=True)
    view_dependencies = models.JSONField(blank=True, null=True)
    # Catalog-managed Delta state. `latest_version` is None for a table whose commits this catalog
    # does not coordinate; otherwise the last ratified version (0 right after creation).
    latest_version = models.BigIntegerField(null=True, blank=True)
    latest_published_version = models.BigIntegerField(null=True, blank=True)
    uniform_iceberg = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["schema__catalog__name", "schema__name", "name"]
        constraints = [models.UniqueConstraint(fields=["schema", "name"], name="uniq_table_name")]

    def __str__(self):
        return self.full_name

    @property
    def full_name(self) -> str:
        return join_full_name(self.schema.catalog.name, self.schema.name, self.name)


class Column(models.Model):
    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="columns")
    name = models.CharField(max_length=255)
    type_text = models.TextField(blank=True, null=True)
    type_json = models.TextField(blank=True, null=True)
    type_name = models.CharField(max_length=32, choices=ColumnTypeName.choices, blank=True, null=True)
    type_precision = models.IntegerField(blank=True, null=True)
    type_scale = models.IntegerField(blank=True, null=True)
    type_interval_type = models.CharField(max_length=64, blank=True, null=True)
    position = models.IntegerField()
    comment = models.TextField(blank=True, null=True)
    nullable = models.BooleanField(default=True)
    partition_index = models.IntegerField(blank=True, null=True)

    class Meta:
        ordering = ["table", "position"]
        constraints = [models.UniqueConstraint(fields=["table", "position"], name="uniq_column_position")]

    def __str__(self):
        return self.name


class StagingTable(models.Model):
    """Storage allocated for a managed table that does not exist yet. Its id becomes the table's
    id when a client finalizes it with POST /tables."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    schema = models.ForeignKey(Schema, on_delete=models.CASCADE, related_name="staging_tables")
    name = models.CharField(max_length=255)
    staging_location = models.TextField(unique=True)
    created_by = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finalized_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"staging {self.schema}.{self.name} ({self.id})"
