import uuid

from django.db import models

from catalog.choices import ColumnTypeName, DataSourceFormat, TableType
from catalog.names import join_full_name, namespace_levels_of, quote_part

from .base import Droppable, MetastoreSecurable, Securable, SchemaSecurable, live_name_constraint


class Metastore(models.Model):
    """The one metastore this server hosts; the securable that CREATE CATALOG is granted on."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.name


class Catalog(MetastoreSecurable):
    storage_root = models.TextField(blank=True, null=True)
    storage_location = models.TextField(blank=True, null=True)


class Schema(Securable):
    """A schema of a catalog; for the Iceberg REST API, a namespace. Namespaces nest: `parent` is
    the schema this one lies in (same catalog), `name` its own level, and `path` its levels joined
    as full names write them (`a.b`, `` `new.db` ``): unique in the catalog, the key every lookup
    by name uses."""

    catalog = models.ForeignKey(Catalog, on_delete=models.CASCADE, related_name="schemas")
    parent = models.ForeignKey("self", on_delete=models.CASCADE, related_name="children", null=True, blank=True)
    name = models.CharField(max_length=255)
    path = models.TextField(editable=False)
    storage_root = models.TextField(blank=True, null=True)
    storage_location = models.TextField(blank=True, null=True)

    class Meta:
        ordering = ["catalog__name", "path"]
        constraints = [models.UniqueConstraint(fields=["catalog", "path"], name="uniq_schema_path")]

    def save(self, *args, **kwargs):
        # The path follows the name and the parent; a renamed namespace moves its descendants. Only
        # this method writes the path, so a stored row's is still the one in the database here.
        stored = None if self._state.adding else self.__dict__.get("path")
        self.path = f"{self.parent.path}.{quote_part(self.name)}" if self.parent_id else quote_part(self.name)
        super().save(*args, **kwargs)
        if stored and stored != self.path:
            from django.db.models import Value
            from django.db.models.functions import Concat, Substr

            Schema.objects.filter(catalog_id=self.catalog_id, path__startswith=f"{stored}.").update(
                path=Concat(Value(self.path), Substr("path", len(stored) + 1)))

    @property
    def levels(self) -> list[str]:
        """The Iceberg namespace: ['a', 'b'] for schema b in schema a."""
        return namespace_levels_of(self.path)

    @property
    def uc_name(self) -> str:
        """The name the Unity Catalog API shows: the name of a top-level schema, the path of a
        nested one (`a.b`)."""
        return self.path if self.parent_id else self.name

    @property
    def full_name(self) -> str:
        return f"{quote_part(self.catalog.name)}.{self.path}"

    def child_full_name(self, name: str) -> str:
        """The full name of a table, volume, function, model or policy named `name` in here."""
        return f"{self.full_name}.{quote_part(name)}"

    def ancestors(self) -> list["Schema"]:
        """The schemas this one lies in, innermost first (one query, none for a top-level one)."""
        if not self.parent_id:
            return []
        cached = getattr(self, "_ancestors", None)
        if cached is None:
            levels = self.levels
            paths = [join_full_name(*levels[:depth]) for depth in range(1, len(levels))]
            rows = {row.path: row for row in Schema.objects.filter(catalog_id=self.catalog_id, path__in=paths)}
            cached = [rows[path] for path in reversed(paths) if path in rows]
            for row in cached:
                row.catalog = self.catalog
            self._ancestors = cached
        return cached


class Table(SchemaSecurable, Droppable):
    """A table of any format and any protocol: Delta, Iceberg, Parquet...; managed, external or a
    view. The Unity Catalog API and the Iceberg REST API read and write the same row."""

    schema = models.ForeignKey(Schema, on_delete=models.CASCADE, related_name="tables")
    name = models.CharField(max_length=255)
    table_type = models.CharField(max_length=32, choices=TableType.choices)
    data_source_format = models.CharField(
        max_length=16, choices=DataSourceFormat.choices, blank=True, null=True
    )
    storage_location = models.TextField(blank=True, null=True)
    # The location as its creator registered it, where that differs from the canonical
    # `storage_location` only in what the location rule's comparisons drop: a directory's trailing
    # slash, which readers need (Polars reads `.../dir` as one file). None: as canonical.
    registered_location = models.TextField(blank=True, null=True)
    # A Polaris generic table's format as the client gave it (`lance`, `delta`...); the Unity
    # Catalog API shows `data_source_format`, the format's DataSourceFormat value if it has one.
    generic_format = models.CharField(max_length=255, blank=True, null=True)
    view_definition = models.TextField(blank=True, null=True)
    view_dependencies = models.JSONField(blank=True, null=True)
    # Catalog-managed Delta state. `latest_version` is None for a table whose commits this catalog
    # does not coordinate; otherwise the last ratified version (0 right after creation).
    latest_version = models.BigIntegerField(null=True, blank=True)
    latest_published_version = models.BigIntegerField(null=True, blank=True)
    uniform_iceberg = models.JSONField(null=True, blank=True)

    class Meta(SchemaSecurable.Meta):
        constraints = [live_name_constraint()]

    @property
    def answered_location(self) -> str | None:
        """The location the APIs answer: as registered, as long as that still names the stored
        one (a protocol that moves the table changes `storage_location` alone)."""
        registered = self.registered_location
        if registered and registered.rstrip("/") == self.storage_location:
            return registered
        return self.storage_location


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
