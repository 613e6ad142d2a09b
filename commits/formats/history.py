"""A table's history in words, as pure functions: what one Delta commit did (its operation, the
files, rows and bytes it added and removed), and how a schema or a set of properties changed from
one version to another, for Delta and Iceberg alike.

A column is `{"key", "name", "type", "nullable", "comment"}`: `key` follows a column through a
rename where the format can (Iceberg's field id), else it is the name (Delta without column
mapping), so a rename shows as one column dropped and one added."""

from __future__ import annotations

import json

from commits.formats.delta_log import DeltaLogError
from commits.formats.delta_types import type_text

# What a writer may put in commitInfo.operation that says nothing (delta-kernel's default, which
# DuckDB's Delta writer leaves in place).
UNDECLARED_OPERATIONS = frozenset({"", "UNKNOWN"})


# -- columns ----------------------------------------------------------------------------------------
def delta_columns(metadata: dict) -> list[dict]:
    """The columns of a Delta metaData action's schemaString (none when it is not a struct)."""
    try:
        schema = json.loads(metadata.get("schemaString") or "{}")
    except (TypeError, ValueError):
        return []
    if not isinstance(schema, dict) or not isinstance(schema.get("fields"), list):
        return []
    columns = []
    for field in schema.get("fields") or []:
        if not isinstance(field, dict):
            continue
        extra = field.get("metadata") if isinstance(field.get("metadata"), dict) else {}
        key = extra.get("delta.columnMapping.id", field.get("name"))
        try:
            text = type_text(field.get("type"))
        except DeltaLogError:
            text = json.dumps(field.get("type"), separators=(",", ":"))
        columns.append({"key": key, "name": field.get("name"), "type": text,
                        "nullable": bool(field.get("nullable", True)), "comment": extra.get("comment") or ""})
    return columns


def _iceberg_type(value) -> str:
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        return str(value)
    kind = value.get("type")
    if kind == "struct":
        return "struct<" + ",".join(f"{f.get('name')}:{_iceberg_type(f.get('type'))}"
                                    for f in value.get("fields") or []) + ">"
    if kind == "list":
        return f"list<{_iceberg_type(value.get('element'))}>"
    if kind == "map":
        return f"map<{_iceberg_type(value.get('key'))},{_iceberg_type(value.get('value'))}>"
    return json.dumps(value, separators=(",", ":"))


def iceberg_columns(schema: dict | None) -> list[dict]:
    """The columns of an Iceberg schema (metadata JSON), keyed by field id."""
    return [{"key": f.get("id"), "name": f.get("name"), "type": _iceberg_type(f.get("type")),
             "nullable": not f.get("required", False), "comment": f.get("doc") or ""}
            for f in (schema or {}).get("fields") or [] if isinstance(f, dict)]


def column_diff(before: list[dict] | None, after: list[dict]) -> list[dict]:
    """What changed from `before` to `after`, one entry a column: `{"change": "added" | "dropped" |
    "changed", "name", "type", "what"}`, `what` saying in words what changed. `before` None: every
    column of `after` is added (a table's first version)."""
    old = {c["key"]: c for c in before or []}
    new = {c["key"]: c for c in after}
    changes = []
    for column in after:
        previous = old.get(column["key"])
        if previous is None:
            changes.append({"change": "added", "name": column["name"], "type": column["type"],
                            "what": "" if column["nullable"] else "NOT NULL"})
            continue
        what = []
        if previous["name"] != column["name"]:
            what.append(f"renamed from {previous['name']}")
        if previous["type"] != column["type"]:
            what.append(f"type {previous['type']} → {column['type']}")
        if previous["nullable"] != column["nullable"]:
            what.append("now nullable" if column["nullable"] else "now NOT NULL")
        if previous["comment"] != column["comment"]:
            what.append(f"comment {previous['comment'] or '(none)'} → {column['comment'] or '(none)'}")
        if what:
            changes.append({"change": "changed", "name": column["name"], "type": column["type"],
                            "what": "; ".join(what)})
    for column in before or []:
        if column["key"] not in new:
            changes.append({"change": "dropped", "name": column["name"], "type": column["type"], "what": ""})
    return changes


def property_diff(before: dict | None, after: dict | None) -> list[dict]:
    """`{"key", "before", "after"}` for every property set, changed or removed (None: absent)."""
    before, after = before or {}, after or {}
    return [{"key": key, "before": before.get(key), "after": after.get(key)}
            for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]


# -- one Delta commit -----------------------------------------------------------------------------
def _records(add_or_remove: dict) -> int | None:
    stats = add_or_remove.get("stats")
    if not isinstance(stats, str):
        return None
    try:
        value = json.loads(stats).get("numRecords")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def delta_figures(actions: list[dict]) -> dict:
    """Files, bytes and rows a commit's add and remove actions add and remove. Rows come from the
    files' statistics (numRecords); None when a file has none (a remove seldom carries them)."""
    figures = {"files_added": 0, "files_removed": 0, "bytes_added": 0, "bytes_removed": 0,
               "rows_added": 0, "rows_removed": 0}
    for kind, suffix in (("add", "added"), ("remove", "removed")):
        for action in actions:
            item = action.get(kind)
            if not isinstance(item, dict):
                continue
            figures[f"files_{suffix}"] += 1
            figures[f"bytes_{suffix}"] += int(item.get("size") or 0)
            rows = _records(item)
            if rows is None or figures[f"rows_{suffix}"] is None:
                figures[f"rows_{suffix}"] = None
            else:
                figures[f"rows_{suffix}"] += rows
    return figures


def derived_operation(actions: list[dict]) -> str:
    """What a commit did, read from its actions, for a writer that did not say (commitInfo without
    an operation, or delta-kernel's UNKNOWN): WRITE (append), DELETE, WRITE (overwrite or update),
    OPTIMIZE-like rewrite, or a change of the definition."""
    adds = [a["add"] for a in actions if isinstance(a.get("add"), dict)]
    removes = [a["remove"] for a in actions if isinstance(a.get("remove"), dict)]
    changes_data = any(item.get("dataChange", True) for item in adds + removes)
    if adds and removes:
        return "WRITE (overwrite or update)" if changes_data else "rewrite without data change"
    if adds:
        return "WRITE (append)"
    if removes:
        return "DELETE"
    if any("metaData" in a or "protocol" in a for a in actions):
        return "change of definition"
    return "no file change"


def operation(declared: str | None, actions: list[dict] | None) -> tuple[str, bool]:
    """The operation to show and whether it is derived: the writer's word where it sent one that
    says something, else what its actions did (None when they could not be read)."""
    if declared and declared not in UNDECLARED_OPERATIONS:
        return declared, False
    if actions is None:
        return (declared or "not sent"), False
    return derived_operation(actions), True
