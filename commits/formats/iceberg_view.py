"""Iceberg view metadata, pure: creating it, checking a commit's requirements and applying its
updates (pyiceberg models view metadata but does not update it). No I/O, no ORM."""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import ValidationError
from pyiceberg.view.metadata import ViewMetadata

from commits.formats.iceberg import check_ranges, check_string_map, describe
from commits.formats.iceberg_json import now_ms
from ucweb.errors import CommitFailed, InvalidParameter


def _validated_view(data: dict) -> ViewMetadata:
    try:
        return ViewMetadata.model_validate(data)
    except ValidationError as exc:
        raise InvalidParameter(f"Invalid view metadata: {describe(exc)}") from None


def create_view_metadata(*, schema, view_version, location: str, properties: dict) -> ViewMetadata:
    if not isinstance(schema, dict) or not isinstance(view_version, dict):
        raise InvalidParameter("schema and view-version must be objects.")
    schema = {**schema, "schema-id": 0}
    version = {**view_version, "version-id": 1, "schema-id": 0}
    version.setdefault("timestamp-ms", now_ms())
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
            check_string_map(update)
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
            version.setdefault("timestamp-ms", now_ms())
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
            data["version-log"].append({"timestamp-ms": now_ms(), "version-id": version_id})
    return _validated_view(data)


def parse_view_metadata(text: str) -> ViewMetadata:
    return ViewMetadata.model_validate_json(text)
