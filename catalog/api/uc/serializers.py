"""Wire types of the Unity Catalog API. Output serializers render responses; request serializers
document the bodies in the OpenAPI schema and name the fields a view hands to its service
(`arguments`, `changes`), which validates them: each body is described once."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from catalog import rows
from catalog.choices import ColumnTypeName, DataSourceFormat, Privilege, SecurableType, TableType
from catalog.models import Table


@extend_schema_field(OpenApiTypes.INT64)
class EpochMillisField(serializers.Field):
    def to_representation(self, value):
        return int(value.timestamp() * 1000) if value is not None else None


class PropertiesField(serializers.DictField):
    child = serializers.CharField()


class SecurableInfo(serializers.Serializer):
    comment = serializers.CharField(allow_null=True, required=False)
    properties = PropertiesField(required=False)
    owner = serializers.CharField()
    created_at = EpochMillisField()
    created_by = serializers.CharField()
    updated_at = EpochMillisField(allow_null=True)
    updated_by = serializers.CharField(allow_null=True)


# What a volume, function, registered model, credential or external location answers about its
# comment, owner and changes: what a catalog, schema or table answers, but its comment is always
# present and it has no properties (DRF keeps an overridden field in its place and leaves out a
# field set to None). A comment, not a docstring: subclasses would show it in the OpenAPI.
class OwnedInfo(SecurableInfo):
    comment = serializers.CharField(allow_null=True)
    properties = None


# What a volume's or registered model's owner changes: its comment, name and owner. (A comment, not
# a docstring, as above.)
class UpdateOwned(serializers.Serializer):
    comment = serializers.CharField(required=False)
    new_name = serializers.CharField(required=False)
    owner = serializers.CharField(required=False)


class CatalogInfo(SecurableInfo):
    name = serializers.CharField()
    id = serializers.CharField()
    storage_root = serializers.CharField(allow_null=True)
    storage_location = serializers.CharField(allow_null=True)


ROOT_HELP = (
    "A storage URL (file://, s3://, gs://, abfss://) or a bare absolute path, stored as file:///path. It must "
    "overlap no table, volume or other managed area, and lie in an external location on which the caller holds "
    "CREATE MANAGED STORAGE (metastore admins: anywhere else too)."
)
LOCATION_HELP = (
    "A storage URL or a bare absolute path (stored as file:///path; relative paths are refused). An EXTERNAL "
    "table's location must lie in an external location on which the caller holds CREATE EXTERNAL TABLE "
    "(metastore admins: anywhere outside managed storage) and overlap no other securable; a MANAGED table's "
    "is the staging_location of its staging table."
)


class CreateCatalog(serializers.Serializer):
    name = serializers.CharField()
    comment = serializers.CharField(required=False)
    properties = PropertiesField(required=False)
    storage_root = serializers.CharField(required=False, help_text=ROOT_HELP)


class UpdateSecurable(serializers.Serializer):
    comment = serializers.CharField(required=False)
    properties = PropertiesField(required=False)
    new_name = serializers.CharField(required=False)
    owner = serializers.CharField(required=False)


class SchemaInfo(SecurableInfo):
    name = serializers.CharField(source="uc_name")
    catalog_name = serializers.CharField(source="catalog.name")
    full_name = serializers.CharField()
    schema_id = serializers.CharField(source="id")
    storage_root = serializers.CharField(allow_null=True)
    storage_location = serializers.CharField(allow_null=True)


class CreateSchema(serializers.Serializer):
    name = serializers.CharField()
    catalog_name = serializers.CharField()
    comment = serializers.CharField(required=False)
    properties = PropertiesField(required=False)
    storage_root = serializers.CharField(required=False, help_text=ROOT_HELP)


class ColumnInfo(serializers.Serializer):
    name = serializers.CharField()
    type_text = serializers.CharField(allow_null=True, required=False)
    type_json = serializers.CharField(allow_null=True, required=False)
    type_name = serializers.ChoiceField(choices=ColumnTypeName.choices, allow_null=True, required=False)
    type_precision = serializers.IntegerField(allow_null=True, required=False)
    type_scale = serializers.IntegerField(allow_null=True, required=False)
    type_interval_type = serializers.CharField(allow_null=True, required=False)
    position = serializers.IntegerField(required=False)
    comment = serializers.CharField(allow_null=True, required=False)
    nullable = serializers.BooleanField(required=False)
    partition_index = serializers.IntegerField(allow_null=True, required=False)


class TableInfo(SecurableInfo):
    name = serializers.CharField()
    catalog_name = serializers.CharField(source="schema.catalog.name")
    schema_name = serializers.CharField(source="schema.uc_name")
    table_type = serializers.ChoiceField(choices=TableType.choices)
    data_source_format = serializers.ChoiceField(choices=DataSourceFormat.choices, allow_null=True)
    columns = ColumnInfo(many=True, source="columns.all")
    storage_location = serializers.CharField(
        source="answered_location", allow_null=True,
        help_text="The canonical location, with the trailing slash of a directory registered with one.")
    table_id = serializers.CharField(source="id")
    view_definition = serializers.CharField(allow_null=True)
    view_dependencies = serializers.JSONField(allow_null=True)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if isinstance(instance, Table) and instance.latest_published_version is not None:
            # A catalog-managed table whose version 0 was checked says so in its properties
            # (delta.feature.catalogManaged), as the Delta REST API does: DuckDB decides how to read
            # it from this listing. Not before: Sail compares these with the protocol it is about
            # to write in a CTAS, and refuses "a different protocol".
            from commits.delta_v1 import catalog_properties

            data["properties"] = catalog_properties(instance)
        return data


# The answers of the hottest reads, as plain dicts: the same JSON as CatalogInfo and TableInfo
# (tests/test_uc_rendering.py compares them), without a serializer's fields copied and walked for
# every response; the serializers stay the wire types the OpenAPI schema describes.
def _millis(value):
    return int(value.timestamp() * 1000) if value is not None else None


def _text(value):
    return str(value) if value is not None else None


def _securable(row) -> dict:
    properties = row.properties
    return {
        "comment": _text(row.comment),
        "properties": None if properties is None else {
            str(key): _text(value) for key, value in properties.items()},
        "owner": _text(row.owner),
        "created_at": _millis(row.created_at),
        "created_by": _text(row.created_by),
        "updated_at": _millis(row.updated_at),
        "updated_by": _text(row.updated_by),
    }


def catalog_info(row) -> dict:
    """CatalogInfo of a catalog."""
    return {**_securable(row), "name": _text(row.name), "id": _text(row.id),
            "storage_root": _text(row.storage_root), "storage_location": _text(row.storage_location)}


def _column(values: dict) -> dict:
    """ColumnInfo of a column's values (a Column's attributes)."""
    return {
        "name": _text(values["name"]),
        "type_text": _text(values["type_text"]),
        "type_json": _text(values["type_json"]),
        "type_name": _text(values["type_name"]),
        "type_precision": _number(values["type_precision"]),
        "type_scale": _number(values["type_scale"]),
        "type_interval_type": _text(values["type_interval_type"]),
        "position": _number(values["position"]),
        "comment": _text(values["comment"]),
        "nullable": None if values["nullable"] is None else bool(values["nullable"]),
        "partition_index": _number(values["partition_index"]),
    }


def _number(value):
    return int(value) if value is not None else None


def table_info(table) -> dict:
    """TableInfo of a table."""
    schema = table.schema
    data = {
        **_securable(table),
        "name": _text(table.name),
        "catalog_name": _text(schema.catalog.name),
        "schema_name": _text(schema.uc_name),
        "table_type": _text(table.table_type),
        "data_source_format": _text(table.data_source_format),
        "columns": [_column(vars(column)) for column in rows.columns_of(table)],
        "storage_location": _text(table.answered_location),
        "table_id": _text(table.id),
        "view_definition": _text(table.view_definition),
        "view_dependencies": table.view_dependencies,
    }
    if table.latest_published_version is not None:
        from commits.delta_v1 import catalog_properties  # as TableInfo.to_representation

        data["properties"] = catalog_properties(table)
    return data


class CreateTable(serializers.Serializer):
    name = serializers.CharField()
    catalog_name = serializers.CharField()
    schema_name = serializers.CharField()
    table_type = serializers.ChoiceField(choices=TableType.choices)
    data_source_format = serializers.ChoiceField(choices=DataSourceFormat.choices, required=False)
    columns = ColumnInfo(many=True)
    storage_location = serializers.CharField(required=False, help_text=LOCATION_HELP)
    comment = serializers.CharField(required=False)
    properties = PropertiesField(required=False)
    view_definition = serializers.CharField(required=False)
    view_dependencies = serializers.JSONField(required=False)


class PrivilegeAssignment(serializers.Serializer):
    principal = serializers.CharField()
    privileges = serializers.ListField(child=serializers.ChoiceField(choices=Privilege.choices))


class PermissionsList(serializers.Serializer):
    privilege_assignments = PrivilegeAssignment(many=True)


class PermissionsChange(serializers.Serializer):
    principal = serializers.CharField()
    add = serializers.ListField(child=serializers.ChoiceField(choices=Privilege.choices), required=False)
    remove = serializers.ListField(child=serializers.ChoiceField(choices=Privilege.choices), required=False)


class UpdatePermissions(serializers.Serializer):
    changes = PermissionsChange(many=True)


class MetastoreSummary(serializers.Serializer):
    metastore_id = serializers.CharField()
    name = serializers.CharField()


class StringMessage(serializers.Serializer):
    value = serializers.CharField(help_text="The workspace's default catalog.")


class DefaultNamespaceSetting(serializers.Serializer):
    etag = serializers.CharField(help_text="Changes when the value changes.")
    setting_name = serializers.CharField(help_text='The setting\'s one instance: always "default".')
    namespace = StringMessage()


class Empty(serializers.Serializer):
    pass


SECURABLE_TYPES = SecurableType.values


def arguments(body: dict, wire_type: type[serializers.Serializer]) -> dict:
    """The service's keyword arguments for a create body: every field `wire_type` declares, None
    when the client left it out."""
    return {name: body.get(name) for name in wire_type._declared_fields}


def changes(body: dict, wire_type: type[serializers.Serializer]) -> dict:
    """The fields of an update body that `wire_type` declares and the client sent."""
    return {name: body[name] for name in wire_type._declared_fields if name in body}

