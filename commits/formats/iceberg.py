"""Iceberg metadata, pure: how a table (or view) moves from one metadata file to the next, with no
I/O and no ORM.

The rules of Iceberg metadata are pyiceberg's: requirements are pyiceberg's `TableRequirement`
models and are checked with their own `validate`, updates are pyiceberg's `TableUpdate` models
applied by `update_table_metadata`, and a new table gets fresh field, spec and sort-order ids from
`new_table_metadata` (Spark sends ids that start at 0). This module adds only what a catalog server
needs around them: parsing requests into those models with clear errors, naming the next metadata
file, and view metadata (which pyiceberg models but does not update).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil, TableMetadataV1, new_table_metadata
from pyiceberg.table.refs import SnapshotRef
from pyiceberg.table.sorting import SortOrder
from pyiceberg.table.update import TableRequirement, TableUpdate, update_table_metadata
from pyiceberg.view.metadata import ViewMetadata

from ucweb.errors import CommitFailed, InvalidParameter

_REQUIREMENTS = TypeAdapter(list[TableRequirement])
_UPDATES = TypeAdapter(list[TableUpdate])


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))


# -- ranges -----------------------------------------------------------------------------------------
# The Iceberg spec types ids and counters as int (32 bits) or long (64 bits); pydantic's `int` has
# no bound, so a value out of range would be applied and written (a snapshot id of 2**63, a field id
# that becomes last-column-id). Checked by the field's JSON name, wherever it appears in a request.
_INT32 = frozenset({
    "id", "element-id", "key-id", "value-id", "field-id", "source-id", "source-ids", "fields",
    "identifier-field-ids", "schema-id", "schema-ids", "current-schema-id", "spec-id", "spec-ids",
    "default-spec-id", "order-id", "sort-order-id", "default-sort-order-id", "last-column-id",
    "last-assigned-field-id", "last-assigned-partition-id", "last-partition-id", "format-version",
    "min-snapshots-to-keep", "version-id", "view-version-id", "current-version-id",
})
_INT64 = frozenset({
    "snapshot-id", "parent-snapshot-id", "snapshot-ids", "current-snapshot-id", "sequence-number",
    "last-sequence-number", "timestamp-ms", "max-ref-age-ms", "max-snapshot-age-ms", "file-size-in-bytes",
    "file-footer-size-in-bytes", "first-row-id", "added-rows", "next-row-id", "last-updated-ms",
})
_NON_NEGATIVE = frozenset({
    "sequence-number", "last-sequence-number", "timestamp-ms", "max-ref-age-ms", "max-snapshot-age-ms",
    "min-snapshots-to-keep", "file-size-in-bytes", "file-footer-size-in-bytes", "first-row-id", "added-rows",
    "next-row-id", "last-updated-ms",
})
# Free-form maps: their keys are names chosen by users, not fields of the spec.
_FREE_FORM = frozenset({"properties", "updates", "summary"})


def check_ranges(data, where: str) -> None:
    """Raises InvalidParameter for an integer field outside the range the Iceberg spec gives it
    (int32 or int64; sequence numbers, timestamps, ages and sizes are never negative)."""

    def check(key: str, value, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            return
        if key in _INT32:
            low, high, kind = -(2**31), 2**31 - 1, "an int (32 bits)"
        else:
            low, high, kind = -(2**63), 2**63 - 1, "a long (64 bits)"
        if key in _NON_NEGATIVE:
            low = 0
        if not low <= value <= high:
            raise InvalidParameter(f"{path} must be {kind} from {low} to {high} (is {value}).")

    def walk(node, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(key, str):
                    continue
                here = f"{path}.{key}"
                if key in _FREE_FORM and isinstance(value, dict):
                    continue
                if key in _INT32 or key in _INT64:
                    for item in value if isinstance(value, list) else [value]:
                        check(key, item, here)
                walk(value, here)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{path}[{index}]")

    walk(data, where)


def _check_string_map(update: dict) -> None:
    """Properties are a map of strings to strings (pyiceberg would turn any value into its str)."""
    if update.get("action") == "set-properties":
        values = update.get("updates")
        if isinstance(values, dict) and not all(isinstance(v, str) for v in values.values()):
            raise InvalidParameter("set-properties: every property value must be a string.")


def _dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True)


def _parse_models(data, *, field: str, noun: str, needs: str, adapter: TypeAdapter) -> list:
    """`requirements` or `updates` as pyiceberg's models, with errors that name what is wrong."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise InvalidParameter(f"{field} must be an array.")
    for item in data:
        if not isinstance(item, dict) or needs.split()[-1] not in item:
            raise InvalidParameter(f"Each {noun} needs {needs}.")
        _check_string_map(item)
    check_ranges(data, field)
    try:
        models = adapter.validate_python(data)
    except ValidationError as exc:
        raise InvalidParameter(f"Invalid or unknown {noun}: {_describe(exc)}") from None
    except (IcebergValidationError, ValueError, TypeError) as exc:
        # pyiceberg's own validators (a decimal precision of 99, fixed[-1]) raise its own error.
        raise InvalidParameter(f"Invalid {noun}: {exc}") from None
    # What pydantic made of the input (a numeric string becomes a number) is checked too.
    check_ranges([_dump(model) for model in models], field)
    return models


def parse_requirements(data) -> list:
    return _parse_models(data, field="requirements", noun="requirement", needs="a type", adapter=_REQUIREMENTS)


def parse_updates(data) -> list:
    updates = _parse_models(data, field="updates", noun="update", needs="an action", adapter=_UPDATES)
    for update in updates:
        # Omitted, it is 0 (format 1); null would leave the metadata without a last-sequence-number.
        if update.action == "add-snapshot" and update.snapshot.sequence_number is None:
            raise InvalidParameter("add-snapshot: the snapshot's sequence-number must be a number, not null.")
    return updates


def files_named(updates) -> list[tuple[str, str]]:
    """The file locations `updates` make the table reference, each with the field that names it:
    the manifest list of an added snapshot and the statistics files."""
    named = []
    for update in updates:
        action = getattr(update, "action", None)
        if action == "add-snapshot":
            named.append(("add-snapshot manifest-list", update.snapshot.manifest_list))
        elif action == "set-statistics":
            named.append(("set-statistics statistics-path", update.statistics.statistics_path))
        elif action == "set-partition-statistics":
            named.append(("set-partition-statistics statistics-path", update.partition_statistics.statistics_path))
    return named


def parse_identifier(data) -> tuple[list[str], str]:
    if not isinstance(data, dict):
        raise InvalidParameter("identifier must be an object with namespace and name.")
    namespace, name = data.get("namespace"), data.get("name")
    if not isinstance(namespace, list) or not all(isinstance(p, str) for p in namespace) or not isinstance(name, str):
        raise InvalidParameter("identifier must have a namespace (array of strings) and a name.")
    return namespace, name


def check_requirements(requirements, base: TableMetadata | None) -> None:
    for requirement in requirements:
        try:
            requirement.validate(base)
        except CommitFailedException as exc:
            message = str(exc)
            if not message.startswith("Requirement failed"):
                message = f"Requirement failed: {message}"
            raise CommitFailed(message) from None


def apply_updates(base: TableMetadata | None, updates, *, metadata_location: str | None) -> TableMetadata:
    """The metadata after `updates`; `base` None builds a table from its first updates."""
    # The empty base only for a table built from its updates: constructing it costs more than the
    # rest of a metadata-only commit (pydantic inspects every default factory).
    if base is None:
        base_metadata, enforce = TableMetadataV1.model_construct(last_column_id=-1, schema=Schema()), True
    else:
        base_metadata, enforce = base, False
    try:
        return update_table_metadata(
            base_metadata=base_metadata,
            updates=tuple(updates),
            enforce_validation=enforce,
            metadata_location=metadata_location,
        )
    except CommitFailedException as exc:
        raise CommitFailed(str(exc)) from None
    except (ValueError, ValidationError, IcebergValidationError, KeyError, AttributeError, TypeError) as exc:
        raise InvalidParameter(f"The updates cannot be applied: {exc}") from None


def create_metadata(
    *, schema, partition_spec, write_order, location: str, properties: dict, table_uuid: uuid.UUID
) -> TableMetadata:
    """New table metadata with fresh ids, from the JSON of a CreateTableRequest."""
    try:
        parsed_schema = Schema.model_validate(schema)
        spec = PartitionSpec.model_validate(partition_spec) if partition_spec else PartitionSpec()
        order = SortOrder.model_validate(write_order) if write_order else SortOrder()
        return new_table_metadata(
            schema=parsed_schema, partition_spec=spec, sort_order=order, location=location,
            properties=dict(properties), table_uuid=table_uuid,
        )
    except ValidationError as exc:
        raise InvalidParameter(f"Invalid table definition: {_describe(exc)}") from None
    except (ValueError, KeyError, TypeError, IcebergValidationError) as exc:
        raise InvalidParameter(f"Invalid table definition: {exc}") from None


def parse_metadata(text: str) -> TableMetadata:
    """Table metadata from a metadata file's text; anything that is not valid Iceberg table
    metadata (a Delta log, another JSON document, binary) is an InvalidParameter that names no
    content of the file."""
    try:
        return TableMetadataUtil.parse_raw(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        raise InvalidParameter(f"Not Iceberg table metadata ({where or 'document'}: {first.get('type')}).") from None
    except (ValueError, TypeError, KeyError, AttributeError, IcebergValidationError) as exc:
        raise InvalidParameter(f"Not Iceberg table metadata ({type(exc).__name__}).") from None


def serialize(metadata) -> str:
    return metadata.model_dump_json()


# -- the metadata a commit writes -----------------------------------------------------------------
class Metadata:
    """The metadata a commit or create writes: its text (serialized once, written to storage,
    stored and answered as it is) and what the catalog reads of it. It is held either as JSON
    data (the common updates are applied there, see `next_metadata`) or as pyiceberg's model
    (tables built or changed by the other updates, views); the other form is made on demand."""

    __slots__ = ("_data", "_model", "_text")

    def __init__(self, *, data: dict | None = None, model=None):
        self._data, self._model, self._text = data, model, None

    @property
    def text(self) -> str:
        if self._text is None:
            # ASCII with escapes: a string the client sent with a lone surrogate stays writable.
            self._text = (json.dumps(self._data, separators=(",", ":")) if self._data is not None
                          else serialize(self._model))
        return self._text

    @property
    def model(self):
        if self._model is None:
            self._model = parse_metadata(self.text)
        return self._model

    @property
    def is_view(self) -> bool:
        return self._data is None and isinstance(self._model, ViewMetadata)

    @property
    def location(self) -> str:
        return self._data["location"] if self._data is not None else self._model.location

    @property
    def properties(self) -> dict:
        if self._data is not None:
            return self._data["properties"]
        return dict(self._model.properties)

    @property
    def table_uuid(self):
        return self.model.table_uuid

    def with_location(self, location: str) -> Metadata:
        if self._data is not None:
            return Metadata(data={**self._data, "location": location})
        return Metadata(model=self._model.model_copy(update={"location": location}))


@dataclass
class Step:
    """What a commit of an existing table does: the properties before (for the policy rule), the
    metadata after, and whether the table's UC columns change (see `columns_changed`)."""

    properties_before: dict
    metadata: Metadata
    columns_changed: bool


def next_metadata(text: str, requirements, updates, *, metadata_location: str) -> Step:
    """Checks `requirements` against the metadata in `text` and applies `updates` to it.

    The updates that a data or property commit sends (snapshots, refs, properties, statistics)
    are applied to the metadata's JSON form, in one pass, with pyiceberg's rules for each of
    them (update_table_metadata: the same checks, the same snapshot log, metadata log and
    last-updated-ms). Anything else, and any commit whose checks fail, is applied through
    pyiceberg's models, so that rare updates and every error stay exactly pyiceberg's."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if _in_json_form(data) and all(_holds(requirement, data) for requirement in requirements):
        properties_before = dict(data.get("properties") or {})
        try:
            return Step(properties_before, Metadata(data=_apply_json(data, updates, metadata_location)), False)
        except (_ByModel, TypeError, KeyError):  # TypeError, KeyError: a shape the JSON path does not know
            pass
    current = parse_metadata(text)
    check_requirements(requirements, current)
    metadata = apply_updates(current, updates, metadata_location=metadata_location)
    return Step(dict(current.properties), Metadata(model=metadata), columns_changed(current, metadata))


class _ByModel(Exception):
    """The commit is left to pyiceberg's models (an update outside the common ones, or a check
    that fails: the model path raises pyiceberg's own error for it)."""


# The keys pyiceberg writes for format version 2: those it always writes (fields with a value by
# default), and those it writes when they have a value. Metadata with other keys, or without one
# of the first, is written through the model, which normalises it.
_V2_ALWAYS = frozenset({
    "location", "table-uuid", "last-updated-ms", "last-column-id", "schemas", "current-schema-id",
    "partition-specs", "default-spec-id", "properties", "snapshots", "snapshot-log", "metadata-log",
    "sort-orders", "default-sort-order-id", "refs", "statistics", "partition-statistics", "format-version",
    "last-sequence-number",
})
_V2_OPTIONAL = frozenset({"last-partition-id", "current-snapshot-id"})
_JSON_ACTIONS = frozenset({
    "set-properties", "remove-properties", "add-snapshot", "set-snapshot-ref", "remove-snapshot-ref",
    "remove-snapshots", "set-statistics", "remove-statistics", "set-partition-statistics",
    "remove-partition-statistics",
})


def _in_json_form(data) -> bool:
    """Whether `data` is version 2 metadata as pyiceberg writes it (no key to add, drop or
    clean up: every property a string, no `current-snapshot-id` of -1, a `main` ref for the
    current snapshot)."""
    if not isinstance(data, dict) or data.get("format-version") != 2:
        return False
    keys = data.keys()
    if not _V2_ALWAYS <= keys or not keys <= _V2_ALWAYS | _V2_OPTIONAL:
        return False
    properties, refs = data["properties"], data["refs"]
    if not isinstance(properties, dict) or not all(isinstance(value, str) for value in properties.values()):
        return False
    current = data.get("current-snapshot-id")
    return (isinstance(refs, dict) and (current is None or (current != -1 and "main" in refs))
            and _numbers_are_integers(data))


def _is_integer(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _numbers_are_integers(data: dict) -> bool:
    """Whether the numbers the JSON path compares and copies are JSON integers. A registered file
    is stored as it was read, and pyiceberg reads "5" as 5: the model path normalises those."""
    snapshots, statistics = data["snapshots"], [*data["statistics"], *data["partition-statistics"]]
    if not all(isinstance(items, list) and all(isinstance(item, dict) for item in items)
               for items in (snapshots, statistics, data["snapshot-log"], data["metadata-log"])):
        return False
    numbers = [data["last-sequence-number"], data["last-updated-ms"], data.get("current-snapshot-id", 0)]
    numbers += [snapshot.get(key) for snapshot in snapshots for key in ("snapshot-id", "sequence-number", "timestamp-ms")]
    numbers += [snapshot["parent-snapshot-id"] for snapshot in snapshots if "parent-snapshot-id" in snapshot]
    numbers += [ref.get("snapshot-id") if isinstance(ref, dict) else None for ref in data["refs"].values()]
    numbers += [item.get("snapshot-id") for item in statistics]
    numbers += [entry.get("timestamp-ms") for entry in (*data["snapshot-log"], *data["metadata-log"])]
    return all(_is_integer(number) for number in numbers)


def _holds(requirement, data: dict) -> bool:
    """Whether a requirement holds for JSON metadata; False for one that fails or that is not
    one of these (the model path then decides, with pyiceberg's message)."""
    kind = requirement.type
    if kind == "assert-table-uuid":
        return str(requirement.uuid) == str(data["table-uuid"]).lower()
    if kind == "assert-ref-snapshot-id":
        if not data["snapshots"] and requirement.ref != "main":
            return False
        ref = data["refs"].get(requirement.ref)
        return requirement.snapshot_id == (ref["snapshot-id"] if ref is not None else None)
    if kind == "assert-current-schema-id":
        return requirement.current_schema_id == data["current-schema-id"]
    if kind == "assert-last-assigned-field-id":
        return requirement.last_assigned_field_id == data["last-column-id"]
    if kind == "assert-last-assigned-partition-id":
        return requirement.last_assigned_partition_id == data.get("last-partition-id")
    if kind == "assert-default-spec-id":
        return requirement.default_spec_id == data["default-spec-id"]
    if kind == "assert-default-sort-order-id":
        return requirement.default_sort_order_id == data["default-sort-order-id"]
    return False


def _without_none(values: dict) -> dict:
    return {key: value for key, value in values.items() if value is not None}


def _apply_json(data: dict, updates, metadata_location: str) -> dict:
    """pyiceberg's update_table_metadata for the common updates, on JSON metadata (changed in
    place: it is the caller's own parse). Raises _ByModel for anything else or any failed check."""
    if not all(update.action in _JSON_ACTIONS for update in updates):
        raise _ByModel
    base_updated_ms = data["last-updated-ms"]
    snapshots = {snapshot["snapshot-id"]: snapshot for snapshot in data["snapshots"]}
    added: set[int] = set()
    changed = False
    for update in updates:
        action = update.action
        if action == "set-properties":
            if update.updates:
                data["properties"] = {**data["properties"], **update.updates}
                changed = True
        elif action == "remove-properties":
            if update.removals:
                properties = dict(data["properties"])
                for key in update.removals:
                    if key not in properties:
                        raise _ByModel
                    del properties[key]
                data["properties"] = properties
                changed = True
        elif action == "add-snapshot":
            snapshot = update.snapshot
            sequence_number = snapshot.sequence_number
            if (not data["schemas"] or not data["partition-specs"] or not data["sort-orders"]
                    or snapshot.snapshot_id in snapshots or sequence_number is None
                    or (sequence_number <= data["last-sequence-number"] and snapshot.parent_snapshot_id is not None)):
                raise _ByModel
            written = _dump(snapshot)
            snapshots[snapshot.snapshot_id] = written
            data["snapshots"] = [*data["snapshots"], written]
            data["last-updated-ms"] = snapshot.timestamp_ms
            data["last-sequence-number"] = sequence_number
            added.add(snapshot.snapshot_id)
            changed = True
        elif action == "set-snapshot-ref":
            try:
                ref = _dump(SnapshotRef(snapshot_id=update.snapshot_id, snapshot_ref_type=update.type,
                                        min_snapshots_to_keep=update.min_snapshots_to_keep,
                                        max_snapshot_age_ms=update.max_snapshot_age_ms,
                                        max_ref_age_ms=update.max_ref_age_ms))
            except (ValidationError, IcebergValidationError, ValueError):
                raise _ByModel from None
            existing = data["refs"].get(update.ref_name)
            if existing is not None and _without_none(existing) == ref:
                continue
            snapshot = snapshots.get(update.snapshot_id)
            if snapshot is None:
                raise _ByModel
            if update.snapshot_id in added:
                data["last-updated-ms"] = snapshot["timestamp-ms"]
            if update.ref_name == "main":
                data["current-snapshot-id"] = update.snapshot_id
                if update.snapshot_id not in added:
                    data["last-updated-ms"] = _now_ms()
                data["snapshot-log"] = [*data["snapshot-log"],
                                        {"snapshot-id": update.snapshot_id, "timestamp-ms": data["last-updated-ms"]}]
            data["refs"] = {**data["refs"], update.ref_name: ref}
            changed = True
        elif action == "remove-snapshot-ref":
            changed = _remove_ref(data, update.ref_name, snapshots) or changed
        elif action == "remove-snapshots":
            removed = set(update.snapshot_ids)
            statistics_removed = [s["snapshot-id"] for s in data["statistics"] if s["snapshot-id"] in removed]
            if not removed <= snapshots.keys() or len(statistics_removed) != len(set(statistics_removed)):
                raise _ByModel  # pyiceberg fails on an unknown id, and on two statistics files of one snapshot
            for name, ref in list(data["refs"].items()):
                if ref["snapshot-id"] in removed:
                    _remove_ref(data, name, snapshots)
            data["statistics"] = [s for s in data["statistics"] if s["snapshot-id"] not in removed]
            kept = []
            for snapshot in data["snapshots"]:
                if snapshot["snapshot-id"] in removed:
                    continue
                if snapshot.get("parent-snapshot-id") in removed:
                    snapshot = {key: value for key, value in snapshot.items() if key != "parent-snapshot-id"}
                kept.append(snapshot)
            data["snapshots"] = kept
            snapshots = {snapshot["snapshot-id"]: snapshot for snapshot in kept}
            data["snapshot-log"] = [entry for entry in data["snapshot-log"] if entry["snapshot-id"] not in removed]
            changed = True
        elif action in ("set-statistics", "set-partition-statistics"):
            field, statistics = (("statistics", update.statistics) if action == "set-statistics"
                                 else ("partition-statistics", update.partition_statistics))
            data[field] = [*(s for s in data[field] if s["snapshot-id"] != statistics.snapshot_id), _dump(statistics)]
            changed = True
        else:  # remove-statistics, remove-partition-statistics
            field = "statistics" if action == "remove-statistics" else "partition-statistics"
            kept = [s for s in data[field] if s["snapshot-id"] != update.snapshot_id]
            if len(kept) == len(data[field]):
                raise _ByModel
            data[field] = kept
            changed = True
    if changed and metadata_location:
        try:
            kept_entries = max(1, int(data["properties"].get(_PREVIOUS_VERSIONS_MAX) or _PREVIOUS_VERSIONS_DEFAULT))
        except ValueError:
            raise _ByModel from None
        log = data["metadata-log"]
        data["metadata-log"] = [*log[max(0, len(log) - kept_entries + 1):],
                                {"metadata-file": metadata_location, "timestamp-ms": base_updated_ms}]
    if changed and data["last-updated-ms"] == base_updated_ms:
        data["last-updated-ms"] = _now_ms()
    return data


_PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
_PREVIOUS_VERSIONS_DEFAULT = 100


def _remove_ref(data: dict, name: str, snapshots: dict) -> bool:
    """pyiceberg's remove-snapshot-ref: True when the ref existed and is gone."""
    ref = data["refs"].get(name)
    if ref is None:
        return False
    if ref["snapshot-id"] not in snapshots:
        raise _ByModel
    data["refs"] = {key: value for key, value in data["refs"].items() if key != name}
    if name == "main":
        data.pop("current-snapshot-id", None)
    return True


def metadata_version(metadata_location: str | None) -> int:
    """`.../metadata/00042-<uuid>.metadata.json` → 42; -1 when the name has no version."""
    if not metadata_location:
        return -1
    name = metadata_location.rsplit("/", 1)[-1]
    prefix = name.split("-", 1)[0]
    return int(prefix) if prefix.isdigit() else -1


def next_metadata_location(location: str, current: str | None) -> str:
    version = metadata_version(current) + 1
    return f"{location.rstrip('/')}/metadata/{version:05d}-{uuid.uuid4()}.metadata.json"


# -- what the other APIs show of a table ------------------------------------------------------
def columns_of(metadata) -> list[dict]:
    """The current Iceberg schema as Unity Catalog columns, so the UC API shows Iceberg tables."""
    schema = metadata.schema() if hasattr(metadata, "schema") and callable(metadata.schema) else None
    if schema is None:
        return []
    partition_sources = []
    if hasattr(metadata, "spec"):
        partition_sources = [field.source_id for field in metadata.spec().fields]
    return [
        {
            "name": field.name,
            "type_name": _uc_type_name(field.field_type),
            "type_text": str(field.field_type),
            "type_json": json.dumps({"name": field.name, "type": json.loads(field.field_type.model_dump_json()),
                                     "nullable": not field.required, "id": field.field_id}),
            "type_precision": getattr(field.field_type, "precision", None),
            "type_scale": getattr(field.field_type, "scale", None),
            "type_interval_type": None,
            "position": position,
            "comment": field.doc,
            "nullable": not field.required,
            "partition_index": partition_sources.index(field.field_id) if field.field_id in partition_sources else None,
        }
        for position, field in enumerate(schema.fields)
    ]


_UC_TYPES = {
    "boolean": "BOOLEAN", "int": "INT", "long": "LONG", "float": "FLOAT", "double": "DOUBLE",
    "date": "DATE", "timestamp": "TIMESTAMP_NTZ", "timestamptz": "TIMESTAMP", "timestamp_ns": "TIMESTAMP_NTZ",
    "timestamptz_ns": "TIMESTAMP", "string": "STRING", "uuid": "STRING", "binary": "BINARY", "time": "LONG",
}


def _uc_type_name(field_type) -> str:
    text = str(field_type)
    if text.startswith("decimal"):
        return "DECIMAL"
    if text.startswith("fixed"):
        return "BINARY"
    if text.startswith("struct"):
        return "STRUCT"
    if text.startswith("list"):
        return "ARRAY"
    if text.startswith("map"):
        return "MAP"
    return _UC_TYPES.get(text, "USER_DEFINED_TYPE")


def view_sql(metadata) -> str | None:
    """The SQL of the current view version (the first SQL representation)."""
    version = next(v for v in metadata.versions if v.version_id == metadata.current_version_id)
    for representation in version.representations:
        representation = getattr(representation, "root", representation)
        if getattr(representation, "type", None) == "sql":
            return representation.sql
    return None


def columns_changed(before, after) -> bool:
    """Whether the UC columns of a table change from metadata `before` to `after`: they are the
    current schema with the current partition spec, and a schema or spec id names one immutable
    schema or spec."""
    return (before is None or before.current_schema_id != after.current_schema_id
            or before.default_spec_id != after.default_spec_id)


def only_referenced_snapshots(metadata_json: str) -> str:
    """`snapshots=refs`: keep the snapshots that a branch or tag points at."""
    data = json.loads(metadata_json)
    referenced = {ref["snapshot-id"] for ref in (data.get("refs") or {}).values()}
    if data.get("current-snapshot-id") is not None:
        referenced.add(data["current-snapshot-id"])
    data["snapshots"] = [s for s in data.get("snapshots") or [] if s["snapshot-id"] in referenced]
    return json.dumps(data)


# -- views ---------------------------------------------------------------------------------------
def _now_ms() -> int:
    return int(time.time() * 1000)


def _validated_view(data: dict) -> ViewMetadata:
    try:
        return ViewMetadata.model_validate(data)
    except ValidationError as exc:
        raise InvalidParameter(f"Invalid view metadata: {_describe(exc)}") from None


def create_view_metadata(*, schema, view_version, location: str, properties: dict) -> ViewMetadata:
    if not isinstance(schema, dict) or not isinstance(view_version, dict):
        raise InvalidParameter("schema and view-version must be objects.")
    schema = {**schema, "schema-id": 0}
    version = {**view_version, "version-id": 1, "schema-id": 0}
    version.setdefault("timestamp-ms", _now_ms())
    data = {
        "view-uuid": str(uuid.uuid4()),
        "format-version": 1,
        "location": location,
        "schemas": [schema],
        "current-version-id": 1,
        "versions": [version],
        "version-log": [{"timestamp-ms": version["timestamp-ms"], "version-id": 1}],
        "properties": properties or {},
    }
    return _validated_view(data)


VIEW_ACTIONS = {
    "assign-uuid", "upgrade-format-version", "add-schema", "set-location", "set-properties",
    "remove-properties", "add-view-version", "set-current-view-version",
}


def check_view_requirements(requirements, metadata: ViewMetadata) -> None:
    if requirements is None:
        return
    if not isinstance(requirements, list):
        raise InvalidParameter("requirements must be an array.")
    for requirement in requirements:
        kind = requirement.get("type") if isinstance(requirement, dict) else None
        if kind != "assert-view-uuid":
            raise InvalidParameter(f"Unknown view requirement {kind!r}.")
        if requirement.get("uuid") != metadata.view_uuid:
            raise CommitFailed(f"Requirement failed: view UUID does not match {requirement.get('uuid')}.")


def apply_view_updates(metadata: ViewMetadata, updates) -> ViewMetadata:
    if not isinstance(updates, list):
        raise InvalidParameter("updates must be an array.")
    check_ranges(updates, "updates")
    try:
        return _apply_view_updates(metadata, updates)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        # A field of the wrong shape (a schema that is not an object, removals that are not
        # a list, ...): bad input, whatever the exception the shape led to.
        raise InvalidParameter(f"The view updates cannot be applied: {type(exc).__name__}: {exc}") from None


def _apply_view_updates(metadata: ViewMetadata, updates: list) -> ViewMetadata:
    data: dict[str, Any] = json.loads(metadata.model_dump_json())
    last_schema_id = max(s["schema-id"] for s in data["schemas"])
    last_added_version = None
    added_schema_id = None
    for update in updates:
        action = update.get("action") if isinstance(update, dict) else None
        if action not in VIEW_ACTIONS:
            raise InvalidParameter(f"Unknown view update {action!r}.")
        if action == "assign-uuid":
            if update.get("uuid") != data["view-uuid"]:
                raise InvalidParameter("The UUID of a view cannot change.")
        elif action == "upgrade-format-version":
            if update.get("format-version") != 1:
                raise InvalidParameter("View format version 1 is the only one.")
        elif action == "add-schema":
            schema = dict(update.get("schema") or {})
            last_schema_id += 1
            schema["schema-id"] = last_schema_id
            data["schemas"].append(schema)
            added_schema_id = last_schema_id
        elif action == "set-location":
            if not isinstance(update.get("location"), str):
                raise InvalidParameter("set-location needs a location.")
            data["location"] = update["location"]
        elif action == "set-properties":
            if not isinstance(update.get("updates"), dict):
                raise InvalidParameter("set-properties needs updates.")
            _check_string_map(update)
            data["properties"].update(update["updates"])
        elif action == "remove-properties":
            for key in update.get("removals") or []:
                data["properties"].pop(key, None)
        elif action == "add-view-version":
            version = dict(update.get("view-version") or {})
            if version.get("schema-id") == -1:
                if added_schema_id is None:
                    raise InvalidParameter("schema-id -1 refers to a schema added in the same commit.")
                version["schema-id"] = added_schema_id
            version["version-id"] = max(v["version-id"] for v in data["versions"]) + 1
            version.setdefault("timestamp-ms", _now_ms())
            data["versions"].append(version)
            last_added_version = version["version-id"]
        elif action == "set-current-view-version":
            version_id = update.get("view-version-id")
            if version_id == -1:
                if last_added_version is None:
                    raise InvalidParameter("view-version-id -1 refers to a version added in the same commit.")
                version_id = last_added_version
            if version_id not in {v["version-id"] for v in data["versions"]}:
                raise InvalidParameter(f"Unknown view version {version_id}.")
            data["current-version-id"] = version_id
            data["version-log"].append({"timestamp-ms": _now_ms(), "version-id": version_id})
    return _validated_view(data)


def parse_view_metadata(text: str) -> ViewMetadata:
    return ViewMetadata.model_validate_json(text)
