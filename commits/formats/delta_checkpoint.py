"""The classic single-file Delta checkpoint: its Parquet schema and one action as a row of it.
Pure functions (pyarrow types only)."""

from __future__ import annotations

import pyarrow as pa

_MAP = pa.map_(pa.string(), pa.string())
_DV = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()), ("offset", pa.int32()),
                 ("sizeInBytes", pa.int32()), ("cardinality", pa.int64())])
CHECKPOINT_SCHEMA = pa.schema([
    ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])),
    ("add", pa.struct([("path", pa.string()), ("partitionValues", _MAP), ("size", pa.int64()),
                       ("modificationTime", pa.int64()), ("dataChange", pa.bool_()), ("stats", pa.string()),
                       ("tags", _MAP), ("deletionVector", _DV), ("baseRowId", pa.int64()),
                       ("defaultRowCommitVersion", pa.int64()), ("clusteringProvider", pa.string())])),
    ("remove", pa.struct([("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_()),
                          ("extendedFileMetadata", pa.bool_()), ("partitionValues", _MAP), ("size", pa.int64()),
                          ("deletionVector", _DV), ("baseRowId", pa.int64()),
                          ("defaultRowCommitVersion", pa.int64())])),
    ("metaData", pa.struct([("id", pa.string()), ("name", pa.string()), ("description", pa.string()),
                            ("format", pa.struct([("provider", pa.string()), ("options", _MAP)])),
                            ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string())),
                            ("configuration", _MAP), ("createdTime", pa.int64())])),
    ("protocol", pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32()),
                            ("readerFeatures", pa.list_(pa.string())), ("writerFeatures", pa.list_(pa.string()))])),
    ("domainMetadata", pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())])),
])


def checkpoint_row(kind: str, value: dict) -> dict:
    struct = CHECKPOINT_SCHEMA.field(kind).type
    clean = {}
    for child in struct:
        item = value.get(child.name)
        if item is None:
            continue
        if pa.types.is_map(child.type):
            item = list((item or {}).items())
        elif pa.types.is_struct(child.type) and isinstance(item, dict):
            item = {f.name: (list(item[f.name].items()) if pa.types.is_map(f.type) and isinstance(item.get(f.name), dict)
                             else item.get(f.name)) for f in child.type}
        clean[child.name] = item
    return {kind: clean}
