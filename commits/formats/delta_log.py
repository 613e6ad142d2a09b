"""The Delta log, as pure functions: where each file of `_delta_log` lives, the actions of a
commit file, the checks a catalog-managed table's first commit must pass.

Every path here is relative to the table's location; callers join it to the location."""

from __future__ import annotations

import json
import uuid

from ucweb import client_json

CATALOG_MANAGED_FEATURES = ("catalogManaged", "catalogOwned-preview")
REQUIRED_FEATURES = ("inCommitTimestamp", "vacuumProtocolCheck")
TABLE_ID_PROPERTY = "io.unitycatalog.tableId"
MIN_READER_VERSION = 3
MIN_WRITER_VERSION = 7


LOG_DIR = "_delta_log"
STAGED_DIR = f"{LOG_DIR}/_staged_commits"
LAST_CHECKPOINT = f"{LOG_DIR}/_last_checkpoint"


def commit_path(version: int) -> str:
    """The published commit of `version`: `_delta_log/00000000000000000001.json`."""
    return f"{LOG_DIR}/{version:020d}.json"


FIRST_COMMIT = commit_path(0)


# A staged commit's name is one path segment, and local file systems refuse a segment longer than
# 255 bytes (NAME_MAX): such a name is the client's mistake, refused before storage is asked.
MAX_FILE_NAME_BYTES = 255


def staged_path(file_name: str) -> str:
    return f"{STAGED_DIR}/{file_name}"


def staged_file_name(version: int, unique: str) -> str:
    """The name a writer gives its proposal of `version` (`<v>.<uuid>.json`)."""
    return f"{version:020d}.{unique}.json"


def checkpoint_path(version: int) -> str:
    """A classic single-file checkpoint."""
    return f"{LOG_DIR}/{version:020d}.checkpoint.parquet"


def log_file_version(name: str) -> int | None:
    """The version a file of `_delta_log` (or of `_staged_commits`) belongs to, from its name."""
    prefix = name[:20]
    return int(prefix) if len(prefix) == 20 and prefix.isdigit() else None


def is_staged(url: str) -> bool:
    """Whether a file URL under the table lies in `_staged_commits`."""
    return f"/{STAGED_DIR}/" in url


class DeltaLogError(ValueError):
    """The log does not say what a catalog-managed table needs; the message says which part."""


def parse_actions(data: bytes) -> list[dict]:
    """A commit file is newline-delimited JSON, one action per line."""
    actions = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DeltaLogError("the commit file is not UTF-8 text") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            action = client_json.loads(line)
        except json.JSONDecodeError as exc:
            raise DeltaLogError(f"line {number} of the commit file is not JSON: {exc.msg}") from None
        except client_json.TooDeep as exc:
            raise DeltaLogError(f"line {number} of the commit file: {exc}") from None
        if not isinstance(action, dict):
            raise DeltaLogError(f"line {number} of the commit file is not a JSON object")
        actions.append(action)
    return actions


def encode_actions(actions: list[dict]) -> bytes:
    """A commit file's bytes: one compact JSON action per line."""
    return ("\n".join(json.dumps(a, separators=(",", ":")) for a in actions) + "\n").encode()


def first(actions: list[dict], kind: str) -> dict | None:
    for action in actions:
        if kind in action:
            value = action[kind]
            return value if isinstance(value, dict) else None
    return None


def commit_timestamp(info: dict) -> int:
    """A commitInfo's in-commit timestamp (its wall-clock timestamp when it has none)."""
    return int(info.get("inCommitTimestamp") or info.get("timestamp") or 0)


def validate_catalog_managed(actions: list[dict], *, table_id: str) -> tuple[dict, dict]:
    """Checks the protocol and metadata of version 0 against the managed-table spec and returns
    them. Raises DeltaLogError naming every requirement that is not met."""
    protocol = first(actions, "protocol")
    metadata = first(actions, "metaData")
    if protocol is None:
        raise DeltaLogError("version 0 has no protocol action")
    if metadata is None:
        raise DeltaLogError("version 0 has no metaData action")
    problems = []
    reader = protocol.get("minReaderVersion")
    writer = protocol.get("minWriterVersion")
    if not isinstance(reader, int) or reader < MIN_READER_VERSION:
        problems.append(f"minReaderVersion must be at least {MIN_READER_VERSION} (is {reader})")
    if not isinstance(writer, int) or writer < MIN_WRITER_VERSION:
        problems.append(f"minWriterVersion must be at least {MIN_WRITER_VERSION} (is {writer})")
    writer_features = set(protocol.get("writerFeatures") or [])
    reader_features = set(protocol.get("readerFeatures") or [])
    if not writer_features.intersection(CATALOG_MANAGED_FEATURES):
        problems.append("the table feature catalogManaged is missing")
    elif not reader_features.intersection(CATALOG_MANAGED_FEATURES):
        problems.append("catalogManaged must be a reader feature too")
    for feature in REQUIRED_FEATURES:
        if feature not in writer_features:
            problems.append(f"the table feature {feature} is missing")
    if "vacuumProtocolCheck" in writer_features and "vacuumProtocolCheck" not in reader_features:
        problems.append("vacuumProtocolCheck must be a reader feature too")
    configuration = metadata.get("configuration") or {}
    if not isinstance(configuration, dict):
        problems.append("metaData.configuration must be an object")
        configuration = {}
    declared_id = configuration.get(TABLE_ID_PROPERTY)
    if declared_id != table_id:
        problems.append(f"{TABLE_ID_PROPERTY} must be {table_id} (is {declared_id})")
    if str(configuration.get("delta.enableInCommitTimestamps", "")).lower() != "true":
        problems.append("delta.enableInCommitTimestamps must be true")
    if problems:
        raise DeltaLogError("; ".join(problems))
    return protocol, metadata


# -- deletion vectors ---------------------------------------------------------------------------
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _z85_decode(text: str) -> bytes:
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for char in text[i:i + 5]:
            value = value * 85 + _Z85.index(char)
        out += value.to_bytes(4, "big")
    return bytes(out)


def deletion_vector_path(dv: dict) -> str | None:
    """The file a deletion vector descriptor names (relative to the table, or absolute); None
    for an inline one."""
    kind, where = dv.get("storageType"), dv.get("pathOrInlineDv") or ""
    if kind == "u" and len(where) >= 20:
        prefix, encoded = where[:-20], where[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=_z85_decode(encoded))}.bin"
        return f"{prefix}/{name}" if prefix else name
    if kind == "p":
        return where
    return None
