"""The updates a data or property commit sends (snapshots, refs, properties, statistics), applied
to Iceberg table metadata in its JSON form, with pyiceberg's rules for each of them
(`update_table_metadata`: the same checks, the same snapshot log, metadata log and
last-updated-ms), so that a commit neither parses the whole metadata into models nor deep-copies
it. Pure: no I/O, no ORM. Whatever this module does not know, or any check that fails, is left to
pyiceberg's models (`iceberg.next_metadata`), so that rare updates and every error stay
pyiceberg's own.
"""

from __future__ import annotations

import time

from pydantic import ValidationError
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.table.refs import SnapshotRef


def now_ms() -> int:
    return int(time.time() * 1000)


def dump(model) -> dict:
    return model.model_dump(mode="json", by_alias=True)


def applied(data, requirements, updates, metadata_location: str) -> dict | None:
    """The metadata after `updates`, when `data` is in the form this module knows and every
    requirement holds; None when the commit is pyiceberg's to apply."""
    if not _in_json_form(data) or not all(_holds(requirement, data) for requirement in requirements):
        return None
    try:
        return _apply_json(data, updates, metadata_location)
    except (_ByModel, TypeError, KeyError):  # TypeError, KeyError: a shape the JSON path does not know
        return None


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
            written = dump(snapshot)
            snapshots[snapshot.snapshot_id] = written
            data["snapshots"] = [*data["snapshots"], written]
            data["last-updated-ms"] = snapshot.timestamp_ms
            data["last-sequence-number"] = sequence_number
            added.add(snapshot.snapshot_id)
            changed = True
        elif action == "set-snapshot-ref":
            try:
                ref = dump(SnapshotRef(snapshot_id=update.snapshot_id, snapshot_ref_type=update.type,
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
                    data["last-updated-ms"] = now_ms()
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
            data[field] = [*(s for s in data[field] if s["snapshot-id"] != statistics.snapshot_id), dump(statistics)]
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
        data["last-updated-ms"] = now_ms()
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
