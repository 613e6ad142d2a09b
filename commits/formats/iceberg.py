"""Iceberg metadata, pure: how a table (or view) moves from one metadata file to the next, with no
I/O and no ORM.

The rules of Iceberg metadata are pyiceberg's: requirements are pyiceberg's `TableRequirement`
models and are checked with their own `validate`, updates are pyiceberg's `TableUpdate` models
applied by `update_table_metadata`, and a new table gets fresh field, spec and sort-order ids from
`new_table_metadata` (Spark sends ids that start at 0). This module adds only what a catalog server
needs around them: parsing requests into those models with clear errors, naming the next metadata
file, and what the other APIs show of a table. The common updates applied on the metadata's JSON form are
`iceberg_json`; view metadata (which pyiceberg models but does not update) is `iceberg_view`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from pydantic import TypeAdapter, ValidationError
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil, TableMetadataV1, new_table_metadata
from pyiceberg.table.sorting import SortOrder
from pyiceberg.table.update import TableRequirement, TableUpdate, update_table_metadata
from pyiceberg.view.metadata import ViewMetadata

from commits.formats import iceberg_json
from ucweb.errors import CommitFailed, InvalidParameter

_REQUIREMENTS = TypeAdapter(list[TableRequirement])
_UPDATES = TypeAdapter(list[TableUpdate])


def describe(error: ValidationError) -> str:
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


def check_string_map(update: dict) -> None:
    """Properties are a map of strings to strings (pyiceberg would turn any value into its str)."""
    if update.get("action") == "set-properties":
        values = update.get("updates")
        if isinstance(values, dict) and not all(isinstance(v, str) for v in values.values()):
            raise InvalidParameter("set-properties: every property value must be a string.")


def _parse_models(data, *, field: str, noun: str, needs: str, adapter: TypeAdapter) -> list:
    """`requirements` or `updates` as pyiceberg's models, with errors that name what is wrong."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise InvalidParameter(f"{field} must be an array.")
    for item in data:
        if not isinstance(item, dict) or needs.split()[-1] not in item:
            raise InvalidParameter(f"Each {noun} needs {needs}.")
        check_string_map(item)
    check_ranges(data, field)
    try:
        models = adapter.validate_python(data)
    except ValidationError as exc:
        raise InvalidParameter(f"Invalid or unknown {noun}: {describe(exc)}") from None
    except (IcebergValidationError, ValueError, TypeError) as exc:
        # pyiceberg's own validators (a decimal precision of 99, fixed[-1]) raise its own error.
        raise InvalidParameter(f"Invalid {noun}: {exc}") from None
    # What pydantic made of the input (a numeric string becomes a number) is checked too.
    check_ranges([iceberg_json.dump(model) for model in models], field)
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


def files_referenced(metadata: dict) -> list[str]:
    """The manifest lists (a format-1 snapshot may list its manifests instead) and statistics
    files that table metadata in its JSON form references: what the table's readers open and its
    snapshot expiry deletes."""
    named = []
    for snapshot in metadata.get("snapshots") or []:
        named += [snapshot["manifest-list"]] if "manifest-list" in snapshot else snapshot.get("manifests") or []
    named += [item.get("statistics-path") for field in ("statistics", "partition-statistics")
              for item in metadata.get(field) or []]
    return named


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
        raise InvalidParameter(f"Invalid table definition: {describe(exc)}") from None
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
    properties_before = dict(data.get("properties") or {}) if isinstance(data, dict) else {}
    applied = iceberg_json.applied(data, requirements, updates, metadata_location)
    if applied is not None:
        return Step(properties_before, Metadata(data=applied), False)
    current = parse_metadata(text)
    check_requirements(requirements, current)
    metadata = apply_updates(current, updates, metadata_location=metadata_location)
    return Step(dict(current.properties), Metadata(model=metadata), columns_changed(current, metadata))


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
