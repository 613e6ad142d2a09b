"""What maintenance a table gets, and with which figures: the one place that reads them.

The figures come from the settings (UCWEB_*), the Polaris policies that apply to the table
(attached to it, its namespace or its catalog; the deepest of each type wins) and the table's and
its schema's properties. Every executor and planner asks `for_table(table)`.

Policies: a system policy with `"enable": false` stops the catalog planning its operations for the
table (system.data-compaction: OPTIMIZE; system.snapshot-expiry: EXPIRE_SNAPSHOTS;
system.orphan-file-removal: REMOVE_ORPHANS and VACUUM; system.metadata-compaction:
REWRITE_MANIFESTS and CHECKPOINT); a run asked for by name still runs. A data-compaction policy's
`target_file_size_bytes` is the target file size unless a table property names one.

Table properties read (the first one present wins):
- target file size: `ucweb.maintenance.target-file-size-bytes`, `delta.targetFileSize`,
  `write.target-file-size-bytes` (Iceberg);
- Delta VACUUM retention: `delta.deletedFileRetentionDuration` ("interval 7 days");
- Delta log retention: `delta.logRetentionDuration`;
- Iceberg snapshot expiry: `history.expire.max-snapshot-age-ms`, `history.expire.min-snapshots-to-keep`;
- orphan retention: `ucweb.maintenance.orphan-retention-hours`;
- `ucweb.maintenance.enabled=false` turns the catalog's own runs off for the table (a run asked
  for by name still runs)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields

from django.conf import settings

_INTERVAL = re.compile(r"^\s*(?:interval\s+)?(\d+)\s*(millisecond|second|minute|hour|day|week)s?\s*$", re.I)
_UNIT_HOURS = {"millisecond": 1 / 3_600_000, "second": 1 / 3600, "minute": 1 / 60, "hour": 1, "day": 24, "week": 168}


# The operations each system policy type governs.
POLICY_OPERATIONS = {
    "system.data-compaction": ("OPTIMIZE",),
    "system.snapshot-expiry": ("EXPIRE_SNAPSHOTS",),
    "system.orphan-file-removal": ("REMOVE_ORPHANS", "VACUUM"),
    "system.metadata-compaction": ("REWRITE_MANIFESTS", "CHECKPOINT"),
}


def _shown(label: str, form: str | None = None):
    """A figure the table's console page shows, under `label` (`form` "size": in bytes)."""
    return field(metadata={"label": label, "form": form})


@dataclass(frozen=True)
class MaintenancePolicy:
    enabled: bool = _shown("catalog runs maintenance on its own")
    target_file_bytes: int = _shown("target file size", "size")
    small_file_bytes: int
    min_input_files: int = _shown("fewest files compacted together")
    vacuum_retention_hours: float = _shown("VACUUM keeps removed files for (hours)")
    log_retention_hours: float = _shown("Delta log kept for (hours)")
    snapshot_max_age_hours: float = _shown("Iceberg snapshots kept for (hours)")
    snapshots_min_keep: int = _shown("Iceberg snapshots always kept")
    orphan_retention_hours: float = _shown("orphan files kept for (hours)")
    checkpoint_interval: int
    disabled_operations: frozenset = frozenset()

    def as_dict(self) -> dict:
        return asdict(self)

    def shown(self) -> list[tuple[str, object, str | None]]:
        """(label, value, form) of each figure the console shows, in declaration order."""
        return [(f.metadata["label"], getattr(self, f.name), f.metadata["form"]) for f in fields(self)
                if "label" in f.metadata]


def parse_interval_hours(text) -> float | None:
    """Delta's "interval 7 days" (or "168 hours") in hours; None when it is not one."""
    match = _INTERVAL.match(str(text or ""))
    if not match:
        return None
    return int(match.group(1)) * _UNIT_HOURS[match.group(2).lower()]


def _int(value) -> int | None:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def _first(properties: dict, keys, parse, default):
    for key in keys:
        if key in properties:
            value = parse(properties[key])
            if value is not None:
                return value
    return default


def _from_policies(table) -> tuple[frozenset, int | None]:
    """(operations turned off, target file size) from the Polaris policies that apply."""
    from catalog.services.policies import effective_policies
    from ucweb.errors import InvalidParameter

    disabled, target = set(), None
    for policy_type, applicable in effective_policies(table).items():
        try:
            content = applicable.content
        except InvalidParameter:
            continue  # content that no longer validates says nothing
        if content.get("enable") is False:
            disabled.update(POLICY_OPERATIONS.get(policy_type, ()))
        size = content.get("target_file_size_bytes")
        if policy_type == "system.data-compaction" and isinstance(size, int | float) and not isinstance(size, bool):
            target = int(size) if size > 0 else None
    return frozenset(disabled), target


def for_table(table) -> MaintenancePolicy:
    properties = {**(table.schema.properties or {}), **(table.properties or {})}
    disabled, policy_target = _from_policies(table)
    max_age_ms = _first(properties, ["history.expire.max-snapshot-age-ms"], _int, None)
    return MaintenancePolicy(
        enabled=str(properties.get("ucweb.maintenance.enabled", "true")).strip().lower() != "false",
        target_file_bytes=max(1, _first(
            properties,
            ["ucweb.maintenance.target-file-size-bytes", "delta.targetFileSize", "write.target-file-size-bytes"],
            _int, policy_target or settings.UCWEB_TARGET_FILE_BYTES)),
        small_file_bytes=settings.UCWEB_SMALL_FILE_BYTES,
        min_input_files=max(2, _first(properties, ["ucweb.maintenance.min-input-files"], _int, 2)),
        vacuum_retention_hours=_first(properties, ["delta.deletedFileRetentionDuration"], parse_interval_hours,
                                      settings.UCWEB_VACUUM_RETENTION_HOURS),
        log_retention_hours=_first(properties, ["delta.logRetentionDuration"], parse_interval_hours,
                                   settings.UCWEB_DELTA_LOG_RETENTION_HOURS),
        snapshot_max_age_hours=max_age_ms / 3_600_000 if max_age_ms is not None else settings.UCWEB_SNAPSHOT_MAX_AGE_HOURS,
        snapshots_min_keep=max(1, _first(properties, ["history.expire.min-snapshots-to-keep"], _int,
                                         settings.UCWEB_SNAPSHOTS_MIN_KEEP)),
        orphan_retention_hours=_first(properties, ["ucweb.maintenance.orphan-retention-hours"], _int,
                                      settings.UCWEB_ORPHAN_RETENTION_HOURS),
        checkpoint_interval=settings.UCWEB_CHECKPOINT_INTERVAL,
        disabled_operations=disabled,
    )
