"""What maintenance a table gets, and with which figures: the one place that reads them.

Today the figures come from the settings (UCWEB_*) and the table's own properties; Polaris
policies attached to the catalog, namespace or table will plug in here, and every executor and
planner keeps asking `for_table(table)`.

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
from dataclasses import asdict, dataclass

from django.conf import settings

_INTERVAL = re.compile(r"^\s*(?:interval\s+)?(\d+)\s*(millisecond|second|minute|hour|day|week)s?\s*$", re.I)
_UNIT_HOURS = {"millisecond": 1 / 3_600_000, "second": 1 / 3600, "minute": 1 / 60, "hour": 1, "day": 24, "week": 168}


@dataclass(frozen=True)
class MaintenancePolicy:
    enabled: bool
    target_file_bytes: int
    small_file_bytes: int
    min_input_files: int
    vacuum_retention_hours: float
    log_retention_hours: float
    snapshot_max_age_hours: float
    snapshots_min_keep: int
    orphan_retention_hours: float
    checkpoint_interval: int

    def as_dict(self) -> dict:
        return asdict(self)


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


def for_table(table) -> MaintenancePolicy:
    properties = {**(table.schema.properties or {}), **(table.properties or {})}
    max_age_ms = _first(properties, ["history.expire.max-snapshot-age-ms"], _int, None)
    return MaintenancePolicy(
        enabled=str(properties.get("ucweb.maintenance.enabled", "true")).strip().lower() != "false",
        target_file_bytes=max(1, _first(
            properties,
            ["ucweb.maintenance.target-file-size-bytes", "delta.targetFileSize", "write.target-file-size-bytes"],
            _int, settings.UCWEB_TARGET_FILE_BYTES)),
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
    )
