"""What a proposed commit changes of a table's definition, as pure functions per format.

Writing data (adding and removing files) needs MODIFY; changing what the table is (its schema,
partitioning, clustering, protocol or features, and its properties outside WRITER_SAFE) needs
the owner or MANAGE (catalog.authz, Action.ALTER). Each function answers the list of the
definition's parts a proposal changes, in words ("schema", "properties delta.enableChangeDataFeed"):
empty for a data-only commit."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace

from commits.formats import delta_protocol as dp
from commits.formats.delta_log import TABLE_ID_PROPERTY, DeltaLogError
from commits.formats.delta_types import column_to_field, columns_from_schema_string, wire_to_log

# Properties a writer may set or remove with MODIFY alone: how files are written, how long history
# is kept, what statistics are collected, the table's comment, and the keys the server derives
# from each commit. Everything else (features, column mapping, clustering, change data feed,
# the maintenance policy...) belongs to the definition.
WRITER_SAFE_PROPERTIES = frozenset({
    "comment",
    "delta.autoOptimize.autoCompact",
    "delta.autoOptimize.optimizeWrite",
    "delta.checkpoint.writeStatsAsJson",
    "delta.checkpoint.writeStatsAsStruct",
    "delta.checkpointInterval",
    "delta.dataSkippingNumIndexedCols",
    "delta.dataSkippingStatsColumns",
    "delta.deletedFileRetentionDuration",
    "delta.logRetentionDuration",
    "delta.parquet.compression.codec",
    "delta.randomizeFilePrefixes",
    "delta.setTransactionRetentionDuration",
    "delta.targetFileSize",
    "delta.tuneFileSizesForRewrites",
    dp.LAST_UPDATE_VERSION,
    dp.LAST_COMMIT_TIMESTAMP,
    dp.ROW_ID_HIGH_WATER_MARK,
})
# Iceberg's write, commit-retry, snapshot-expiry and read settings.
WRITER_SAFE_PREFIXES = ("write.", "commit.", "history.expire.", "read.")


def is_writer_safe(key: str) -> bool:
    return key in WRITER_SAFE_PROPERTIES or key.startswith(WRITER_SAFE_PREFIXES)


# Properties a writer may add to a table that has none, not change or remove: Iceberg's name
# mapping, which pyiceberg's add_files (a data commit) sets from the current schema when missing.
WRITER_ADDED_PROPERTIES = frozenset({"schema.name-mapping.default"})


def property_changes(before: Mapping, after: Mapping) -> list[str]:
    """The properties outside the writer-safe set that `after` adds, changes or removes."""
    keys = sorted(key for key in set(before) | set(after)
                  if not is_writer_safe(key) and before.get(key) != after.get(key)
                  and not (key in WRITER_ADDED_PROPERTIES and key not in before))
    return [f"property {key}" for key in keys]


# -- Delta -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeltaDefinition:
    """A Delta table's definition as the catalog stores it: its fields (name, type in the log's
    spelling, nullability), its partition columns and its properties (the protocol and the
    clustering domain projected onto them, commits.formats.delta_protocol)."""

    fields: tuple
    partition_columns: tuple
    properties: Mapping
    schema: tuple  # the fields whole, as the log spells them (commits.formats.schema_evolution)

    @classmethod
    def of(cls, columns: Iterable, properties: Mapping | None) -> DeltaDefinition:
        """From catalog columns: Column rows, or the dicts of columns the APIs read."""
        rows = [SimpleNamespace(**{"comment": None, "type_json": None, "type_name": None, "type_text": None,
                                   "type_precision": None, "type_scale": None, "nullable": True,
                                   "partition_index": None, "position": index, **column})
                if isinstance(column, Mapping) else column for index, column in enumerate(columns)]
        rows.sort(key=lambda column: column.position)
        partitions = sorted((c.partition_index, c.name) for c in rows if c.partition_index is not None)
        schema = tuple({**field, "type": wire_to_log(field["type"])} for field in map(column_to_field, rows))
        return cls(tuple(map(_field_key, schema)), tuple(name for _, name in partitions), dict(properties or {}),
                   schema)


def _field_key(field: dict) -> tuple:
    return field["name"], json.dumps(field["type"], sort_keys=True), bool(field.get("nullable", True))


def delta_changes(before: DeltaDefinition, after: DeltaDefinition) -> list[str]:
    """What `after` changes of `before`'s definition."""
    changes = []
    if before.fields != after.fields:
        changes.append("schema")
    if before.partition_columns != after.partition_columns:
        changes.append("partition columns")
    if before.properties.get(dp.CLUSTERING_COLUMNS) != after.properties.get(dp.CLUSTERING_COLUMNS):
        changes.append("clustering")
    if _protocol_keys(before.properties) != _protocol_keys(after.properties):
        changes.append("protocol")
    changes += property_changes(_plain(before.properties), _plain(after.properties))
    return changes


def staged_delta_changes(current: DeltaDefinition, metadata: dict | None, protocol: dict | None) -> list[str]:
    """What the `metaData` and `protocol` actions of a staged commit change of the current
    definition. A metaData action is compared part by part (its schema, partition columns and
    the configuration keys it sets; a writer that repeats the definition unchanged changes
    nothing); a protocol action changes the definition when it raises a version or names a
    feature the table does not have."""
    changes = []
    if isinstance(metadata, dict):
        partitions = metadata.get("partitionColumns")
        partitions = tuple(partitions) if isinstance(partitions, list) else ()
        try:
            columns = columns_from_schema_string(metadata.get("schemaString"), list(partitions))
        except DeltaLogError:
            columns = None
        fields = None if columns is None else tuple(_field_key(json.loads(c["type_json"])) for c in columns)
        if fields != current.fields:
            changes.append("schema")
        if partitions != current.partition_columns:
            changes.append("partition columns")
        changes += property_changes(_plain(current.properties), _plain(staged_properties(current, metadata)))
    if isinstance(protocol, dict) and _raises(current.properties, protocol):
        changes.append("protocol")
    return changes


def staged_properties(current: DeltaDefinition, metadata: dict) -> dict:
    """The table's properties after a staged `metaData` action: the configuration keys it sets,
    over the current ones (a writer's configuration need not repeat the catalog's own keys)."""
    configuration = metadata.get("configuration")
    return {**current.properties, **(configuration if isinstance(configuration, dict) else {})}


def _protocol_keys(properties: Mapping) -> dict:
    return {key: value for key, value in properties.items()
            if key.startswith(dp.FEATURE_PREFIX) or key in (dp.MIN_READER, dp.MIN_WRITER)}


def _plain(properties: Mapping) -> dict:
    """The properties that are neither derived by the server nor a projection of the protocol,
    nor the table's id (which the commit APIs hold to the table's own, whoever writes)."""
    return {key: value for key, value in properties.items()
            if not dp.is_synthetic(key) and key != TABLE_ID_PROPERTY}


def _raises(properties: Mapping, protocol: dict) -> bool:
    features = {key[len(dp.FEATURE_PREFIX):] for key in properties if key.startswith(dp.FEATURE_PREFIX)}
    named = set(protocol.get("readerFeatures") or ()) | set(protocol.get("writerFeatures") or ())
    if not named <= features:
        return True
    for key, version in ((dp.MIN_READER, protocol.get("minReaderVersion")),
                         (dp.MIN_WRITER, protocol.get("minWriterVersion"))):
        known = properties.get(key)
        if known is not None and isinstance(version, int) and str(known).isdigit() and version > int(known):
            return True
    return False


# -- Iceberg -----------------------------------------------------------------------------------------
ICEBERG_DEFINITION_ACTIONS = {
    "add-schema": "schema", "set-current-schema": "schema",
    "add-spec": "partition spec", "set-default-spec": "partition spec", "remove-partition-specs": "partition spec",
    "add-sort-order": "sort order", "set-default-sort-order": "sort order",
    "upgrade-format-version": "format version", "set-location": "location", "remove-schemas": "schema",
}


def iceberg_changes(updates: Iterable, properties_before: Mapping) -> list[str]:
    """What Iceberg table updates (pyiceberg's models or their JSON form) change of the table's
    definition; `properties_before`: the table's properties before them."""
    changes: list[str] = []
    after = dict(properties_before)
    for update in updates:
        action = update.get("action") if isinstance(update, Mapping) else getattr(update, "action", None)
        part = ICEBERG_DEFINITION_ACTIONS.get(action)
        if part is not None and part not in changes:
            changes.append(part)
        elif action == "set-properties":
            after.update(_member(update, "updates") or {})
        elif action == "remove-properties":
            for key in _member(update, "removals") or ():
                after.pop(key, None)
    return changes + property_changes(properties_before, after)


def _member(update, name: str):
    return update.get(name) if isinstance(update, Mapping) else getattr(update, name, None)


def iceberg_metadata_changes(before, after) -> list[str]:
    """What replacing an Iceberg table's metadata `before` with `after` (pyiceberg's
    TableMetadata: a Polaris notification of another system's commit) changes of its definition."""
    changes = []
    if before.schema() != after.schema():
        changes.append("schema")
    if before.spec().fields != after.spec().fields:
        changes.append("partition spec")
    if _sort_fields(before) != _sort_fields(after):
        changes.append("sort order")
    if before.format_version != after.format_version:
        changes.append("format version")
    if before.location != after.location:
        changes.append("location")
    return changes + property_changes(before.properties, after.properties)


def _sort_fields(metadata) -> tuple:
    order = metadata.sort_order_by_id(metadata.default_sort_order_id)
    return tuple(order.fields) if order is not None else ()
