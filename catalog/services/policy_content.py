"""The content rules of Apache Polaris's system policy types, encoded from the JSON schemas Polaris
publishes for them (`schemas/policies/system/<type>/2025-02-03.json`). Every system type shares the
same frame:

    {"version": "2025-02-03",          optional, exactly this text
     "enable": true,                   required, a boolean
     "config": {"key": value, ...},    optional, an object
     ...type-specific fields}          nothing else: unknown fields are refused

and adds its own fields:
- system.data-compaction: `target_file_size_bytes` (a number); config values may be anything;
- system.metadata-compaction and system.snapshot-expiry: config values are strings, numbers or
  booleans;
- system.orphan-file-removal: `older_than` (a number, a Unix timestamp) and `location` (a string);
  config values are strings, numbers or booleans.
"""

from __future__ import annotations

from catalog.choices import PolicyType
from ucweb import client_json
from ucweb.errors import InvalidParameter

SCHEMA_VERSION = "2025-02-03"


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_scalar(value) -> bool:
    return isinstance(value, str | bool) or _is_number(value)


# type -> (its own fields and their checks, whether config values must be scalars)
_RULES: dict[str, tuple[dict, bool]] = {
    PolicyType.DATA_COMPACTION: ({"target_file_size_bytes": (_is_number, "a number")}, False),
    PolicyType.METADATA_COMPACTION: ({}, True),
    PolicyType.SNAPSHOT_EXPIRY: ({}, True),
    PolicyType.ORPHAN_FILE_REMOVAL: (
        {"older_than": (_is_number, "a number"), "location": (lambda v: isinstance(v, str), "a string")},
        True,
    ),
}


def validate_policy_type(value) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidParameter("type must be a policy type.")
    if value not in PolicyType.values:
        raise InvalidParameter(f"Unknown policy type {value!r}; supported: {', '.join(PolicyType.values)}.")
    return value


def parse_content(policy_type: str, content) -> dict:
    """The content of a policy of `policy_type` as an object, or InvalidParameter saying what is
    wrong with it."""
    if not isinstance(content, str) or not content.strip():
        raise InvalidParameter(f"content is required for a {policy_type} policy (a JSON object).")
    try:
        document = client_json.loads(content)
    except client_json.TooDeep as exc:
        raise InvalidParameter(f"content: {exc}.") from None
    except ValueError as exc:
        raise InvalidParameter(f"content is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise InvalidParameter("content must be a JSON object.")
    own_fields, scalar_config = _RULES[policy_type]
    allowed = {"version", "enable", "config", *own_fields}
    extra = sorted(set(document) - allowed)
    if extra:
        raise InvalidParameter(
            f"content of a {policy_type} policy has unknown fields: {', '.join(extra)} "
            f"(allowed: {', '.join(sorted(allowed))}).")
    if "enable" not in document:
        raise InvalidParameter(f"content of a {policy_type} policy needs the field enable.")
    if not isinstance(document["enable"], bool):
        raise InvalidParameter("content.enable must be a boolean.")
    if "version" in document and document["version"] != SCHEMA_VERSION:
        raise InvalidParameter(f"content.version must be {SCHEMA_VERSION!r}.")
    for field, (check, what) in own_fields.items():
        if field in document and not check(document[field]):
            raise InvalidParameter(f"content.{field} must be {what}.")
    if "config" in document:
        config = document["config"]
        if not isinstance(config, dict):
            raise InvalidParameter("content.config must be an object.")
        if scalar_config:
            for key, value in config.items():
                if not _is_scalar(value):
                    raise InvalidParameter(f"content.config.{key} must be a string, a number or a boolean.")
    return document
