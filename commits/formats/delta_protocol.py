"""A Delta table's protocol and domain metadata as the catalog stores them: projected onto table
properties (the Delta REST API's "synthetic property keys"). Pure functions."""

from __future__ import annotations

from commits.formats.delta_log import MIN_READER_VERSION, MIN_WRITER_VERSION

# What createStagingTable advertises: what the server checks (delta_log.validate_catalog_managed)
# is required; the rest of the spec's reference list is suggested.
REQUIRED_PROTOCOL = {
    "min-reader-version": MIN_READER_VERSION,
    "min-writer-version": MIN_WRITER_VERSION,
    "reader-features": ["catalogManaged", "vacuumProtocolCheck"],
    "writer-features": ["catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"],
}
SUGGESTED_PROTOCOL = {
    "reader-features": ["deletionVectors", "v2Checkpoint", "columnMapping"],
    "writer-features": ["deletionVectors", "v2Checkpoint", "columnMapping", "domainMetadata", "rowTracking"],
}
SUGGESTED_PROPERTIES = {
    "delta.enableDeletionVectors": "true",
    "delta.checkpointPolicy": "v2",
    "delta.checkpoint.writeStatsAsStruct": "true",
    "delta.checkpoint.writeStatsAsJson": "true",
    "delta.columnMapping.mode": "name",
    "delta.columnMapping.maxColumnId": None,
    "delta.enableRowTracking": "true",
    "delta.randomizeFilePrefixes": "true",
    "delta.parquet.compression.codec": "zstd",
    "delta.rowTracking.materializedRowIdColumnName": None,
    "delta.rowTracking.materializedRowCommitVersionColumnName": None,
}

# Keys the server derives (spec: "Synthetic property keys"); clients never set them directly.
MIN_READER, MIN_WRITER = "delta.minReaderVersion", "delta.minWriterVersion"
FEATURE_PREFIX = "delta.feature."
LAST_UPDATE_VERSION, LAST_COMMIT_TIMESTAMP = "delta.lastUpdateVersion", "delta.lastCommitTimestamp"
CLUSTERING_COLUMNS, ROW_ID_HIGH_WATER_MARK = "delta.clusteringColumns", "delta.rowTracking.rowIdHighWaterMark"
DOMAINS = {"delta.clustering": CLUSTERING_COLUMNS, "delta.rowTracking": ROW_ID_HIGH_WATER_MARK}
UNIFORM_PROPERTY = "delta.universalFormat.enabledFormats"
# Reader-writer features we know: the projection lists them as reader features too.
READER_WRITER_FEATURES = {"catalogManaged", "catalogOwned-preview", "vacuumProtocolCheck", "deletionVectors",
                          "v2Checkpoint", "columnMapping", "timestampNtz", "typeWidening", "variantType"}


def protocol_properties(protocol: dict) -> dict:
    """A protocol (wire spelling) as properties."""
    keys = {MIN_READER: str(protocol["min-reader-version"]), MIN_WRITER: str(protocol["min-writer-version"])}
    for feature in sorted(set(protocol["reader-features"]) | set(protocol["writer-features"])):
        keys[FEATURE_PREFIX + feature] = "supported"
    return keys


def protocol_of(properties: dict) -> dict:
    """The protocol action (log spelling) the stored projection describes."""
    features = sorted(k[len(FEATURE_PREFIX):] for k in properties if k.startswith(FEATURE_PREFIX))
    try:
        reader = int(properties.get(MIN_READER, "0"))
        writer = int(properties.get(MIN_WRITER, "0"))
    except ValueError:
        reader = writer = 0
    return {"minReaderVersion": reader, "minWriterVersion": writer,
            "readerFeatures": [f for f in features if f in READER_WRITER_FEATURES], "writerFeatures": features}


def protocol_action(protocol: dict) -> dict:
    """A protocol in the wire spelling as the log's protocol action."""
    return {"minReaderVersion": protocol["min-reader-version"], "minWriterVersion": protocol["min-writer-version"],
            "readerFeatures": protocol["reader-features"], "writerFeatures": protocol["writer-features"]}


def set_protocol(properties: dict, protocol: dict) -> None:
    for key in [k for k in properties if k.startswith(FEATURE_PREFIX) or k in (MIN_READER, MIN_WRITER)]:
        del properties[key]
    properties.update(protocol_properties(protocol))


def is_synthetic(key: str) -> bool:
    return key.startswith(FEATURE_PREFIX) or key in (
        MIN_READER, MIN_WRITER, LAST_UPDATE_VERSION, LAST_COMMIT_TIMESTAMP, CLUSTERING_COLUMNS, ROW_ID_HIGH_WATER_MARK)


def uniform_enabled(properties: dict) -> bool:
    return "iceberg" in [f.strip().lower() for f in properties.get(UNIFORM_PROPERTY, "").split(",")]
