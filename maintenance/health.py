"""From commit reports to table health and maintenance plans.

A report's file-size histogram describes the table's live files after that commit, so the latest
one gives files and bytes live and the share of small files. Plans:
- OPTIMIZE when at least UCWEB_OPTIMIZE_MIN_FILES files are live and the share of files smaller
  than UCWEB_SMALL_FILE_BYTES reaches UCWEB_OPTIMIZE_SMALL_FILE_SHARE;
- CHECKPOINT when UCWEB_CHECKPOINT_INTERVAL versions passed since the last checkpoint
  (`_delta_log/_last_checkpoint`, or version 0);
- VACUUM when files were removed longer ago than UCWEB_VACUUM_RETENTION_HOURS and no VACUUM has
  been planned since.
A plan is created once; while it is PLANNED it is not planned again.

Iceberg tables are planned from their current metadata: OPTIMIZE when the current snapshot has at
least UCWEB_OPTIMIZE_MIN_FILES data files of a small average size, EXPIRE_SNAPSHOTS when snapshots
are older than the policy's maximum age and more than its minimum are kept, REMOVE_ORPHANS once
per orphan retention period. A table whose policy says `enabled=false` is not planned."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncHour
from django.utils import timezone

from catalog.models import Table
from catalog.storage import StorageError, join, storage_within
from commits.formats import delta_log
from commits.models import CommitReport, DeltaCommit
from maintenance.models import MaintenancePlan, TableHealth

logger = logging.getLogger(__name__)


def small_file_share(histogram: dict | None, small_bytes: int) -> tuple[int, int, float]:
    """(files, bytes, share of files in bins that end at or below `small_bytes`)."""
    if not histogram:
        return 0, 0, 0.0
    boundaries, counts, sizes = histogram["sorted_bin_boundaries"], histogram["file_counts"], histogram["total_bytes"]
    files = sum(counts)
    small = sum(count for index, count in enumerate(counts)
                if index + 1 < len(boundaries) and boundaries[index + 1] <= small_bytes)
    return files, sum(sizes), (small / files if files else 0.0)


def last_checkpoint_version(location: str) -> int:
    url = join(location, delta_log.LAST_CHECKPOINT)
    try:
        return int(json.loads(storage_within(location).read(url)).get("version", 0))
    except (StorageError, ValueError, TypeError, AttributeError):
        return 0


def _plan(planned: list[str], table: Table, operation: str, reason: str) -> None:
    """Plans `operation` (once: an open plan is kept) unless a policy that applies to the table
    turns it off; what is planned is added to `planned`."""
    from maintenance import policy as policies

    if operation in policies.for_table(table).disabled_operations:
        return
    with transaction.atomic():
        MaintenancePlan.objects.get_or_create(
            table=table, operation=operation, status=MaintenancePlan.Status.PLANNED, defaults={"reason": reason})
    planned.append(operation)


def refresh_table(table: Table, now=None) -> list[str]:
    """Recomputes the health of one table and returns the operations planned for it."""
    now = now or timezone.now()
    reports = CommitReport.objects.filter(table=table)
    latest = reports.exclude(file_size_histogram=None).order_by("-commit_version", "-received_at").first()
    totals = reports.aggregate(
        added=Sum("num_files_added"), removed=Sum("num_files_removed"), bytes_added=Sum("num_bytes_added"),
        bytes_removed=Sum("num_bytes_removed"), inserted=Sum("num_rows_inserted"),
        deleted=Sum("num_rows_removed"), updated=Sum("num_rows_updated"),
    )
    files, size, share = small_file_share(latest.file_size_histogram if latest else None, settings.UCWEB_SMALL_FILE_BYTES)
    if latest is None:
        # No client reported file sizes (most do not): the catalog reads the table's own log.
        files, size, share = live_file_sizes(table)
    day_ago = now - timedelta(hours=24)
    hourly = (
        DeltaCommit.objects.filter(table=table, ratified_at__gte=day_ago)
        .annotate(hour=TruncHour("ratified_at")).values("hour").annotate(n=Count("version")).order_by("hour")
    )
    rate = [{"hour": row["hour"].isoformat(), "commits": row["n"]} for row in hourly]
    TableHealth.objects.update_or_create(table=table, defaults={
        "files_live": max(files, 0), "bytes_live": max(size, 0), "small_file_share": share,
        "rows_inserted": totals["inserted"] or 0, "rows_removed": totals["deleted"] or 0,
        "rows_updated": totals["updated"] or 0, "commits_last_day": sum(r["commits"] for r in rate),
        "last_report_version": reports.order_by("-commit_version").values_list("commit_version", flat=True).first(),
        "histogram": latest.file_size_histogram if latest else None, "commit_rate": rate,
    })

    planned = []
    if files >= settings.UCWEB_OPTIMIZE_MIN_FILES and share >= settings.UCWEB_OPTIMIZE_SMALL_FILE_SHARE:
        _plan(planned, table, MaintenancePlan.Operation.OPTIMIZE,
              f"{share:.0%} of {files} live files are smaller than {settings.UCWEB_SMALL_FILE_BYTES} bytes "
              f"(threshold {settings.UCWEB_OPTIMIZE_SMALL_FILE_SHARE:.0%}).")
    if table.latest_version is not None and table.storage_location:
        since = table.latest_version - last_checkpoint_version(table.storage_location)
        if since >= settings.UCWEB_CHECKPOINT_INTERVAL:
            _plan(planned, table, MaintenancePlan.Operation.CHECKPOINT,
                  f"{since} versions since the last checkpoint (interval {settings.UCWEB_CHECKPOINT_INTERVAL}).")
    retention = now - timedelta(hours=settings.UCWEB_VACUUM_RETENTION_HOURS)
    last_vacuum = MaintenancePlan.objects.filter(table=table, operation=MaintenancePlan.Operation.VACUUM) \
        .order_by("-created_at").values_list("created_at", flat=True).first()
    removals = reports.filter(num_files_removed__gt=0, received_at__lte=retention)
    if last_vacuum is not None:
        removals = removals.filter(received_at__gt=last_vacuum)
    removed = removals.aggregate(files=Sum("num_files_removed"), bytes=Sum("num_bytes_removed"))
    if removed["files"]:
        _plan(planned, table, MaintenancePlan.Operation.VACUUM,
              f"{removed['files']} files ({removed['bytes'] or 0} bytes) were removed more than "
              f"{settings.UCWEB_VACUUM_RETENTION_HOURS} hours ago.")
    return planned


def _size_figures(sizes: list[int], small_bytes: int) -> tuple[int, int, float]:
    """(files, bytes, share of files smaller than `small_bytes`)."""
    small = sum(1 for size in sizes if size < small_bytes)
    return len(sizes), sum(sizes), (small / len(sizes) if sizes else 0.0)


def live_file_sizes(table: Table) -> tuple[int, int, float]:
    """Files, bytes and small-file share of a managed Delta table's live files, from its log."""
    from commits.delta_state import read_state

    if table.latest_version is None or not table.storage_location:
        return 0, 0, 0.0
    try:
        state = read_state(table)
    except (StorageError, ValueError) as exc:
        logger.warning("health of %s: its log could not be read: %s", table.full_name, exc)
        return 0, 0, 0.0
    return _size_figures([int(add.get("size") or 0) for add in state.live.values()], settings.UCWEB_SMALL_FILE_BYTES)


def iceberg_file_sizes(table: Table) -> list[int] | None:
    """The sizes of the data files of an Iceberg table's current snapshot, read from its manifests
    with the server's own storage access, confined to the table's location (a manifest list may
    name another table's manifests); None when they cannot be read."""
    from pyiceberg.manifest import DataFileContent
    from pyiceberg.table.metadata import TableMetadataUtil

    from catalog.storage.iceberg_io import live_entries

    metadata = TableMetadataUtil.parse_raw(table.iceberg.metadata_json)
    snapshot = metadata.current_snapshot()
    if snapshot is None:
        return []
    try:
        entries = live_entries(snapshot, storage_within(table.storage_location or metadata.location))
        return [entry.data_file.file_size_in_bytes for entry in entries
                if entry.data_file.content == DataFileContent.DATA]
    except (StorageError, OSError, ValueError) as exc:
        logger.warning("health of %s: its manifests could not be read: %s", table.full_name, exc)
        return None


def refresh_iceberg_table(table: Table, now=None) -> list[str]:
    from maintenance import policy as policies

    now = now or timezone.now()
    policy = policies.for_table(table)
    if not policy.enabled:
        return []
    metadata = json.loads(table.iceberg.metadata_json)
    snapshots = metadata.get("snapshots") or []
    current = next((s for s in snapshots if s.get("snapshot-id") == metadata.get("current-snapshot-id")), None)
    planned = []
    summary = (current or {}).get("summary") or {}
    files, size = int(summary.get("total-data-files", 0) or 0), int(summary.get("total-files-size", 0) or 0)
    sizes = iceberg_file_sizes(table) if current else []
    share = _size_figures(sizes, policy.small_file_bytes)[2] if sizes is not None else (
        1.0 if files and size / files < policy.small_file_bytes else 0.0)
    day_ago_ms = (now - timedelta(hours=24)).timestamp() * 1000
    TableHealth.objects.update_or_create(table=table, defaults={
        "files_live": files, "bytes_live": size, "small_file_share": share,
        "rows_inserted": int(summary.get("total-records", 0) or 0),
        "commits_last_day": sum(1 for s in snapshots if s.get("timestamp-ms", 0) >= day_ago_ms),
        "last_report_version": (current or {}).get("sequence-number"),
    })
    if files >= settings.UCWEB_OPTIMIZE_MIN_FILES and share >= settings.UCWEB_OPTIMIZE_SMALL_FILE_SHARE:
        _plan(planned, table, MaintenancePlan.Operation.OPTIMIZE,
              f"{share:.0%} of {files} data files are smaller than {policy.small_file_bytes} bytes "
              f"(threshold {settings.UCWEB_OPTIMIZE_SMALL_FILE_SHARE:.0%}).")
    cutoff_ms = now.timestamp() * 1000 - policy.snapshot_max_age_hours * 3_600_000
    old = [s for s in snapshots if s.get("timestamp-ms", 0) < cutoff_ms and s is not current]
    if old and len(snapshots) > policy.snapshots_min_keep:
        _plan(planned, table, MaintenancePlan.Operation.EXPIRE_SNAPSHOTS,
              f"{len(old)} of {len(snapshots)} snapshots are older than {policy.snapshot_max_age_hours:g} hours.")
    recent = MaintenancePlan.objects.filter(
        table=table, operation=MaintenancePlan.Operation.REMOVE_ORPHANS,
        created_at__gt=now - timedelta(hours=policy.orphan_retention_hours)).exists()
    if snapshots and not recent:
        _plan(planned, table, MaintenancePlan.Operation.REMOVE_ORPHANS,
              f"no orphan removal in the last {policy.orphan_retention_hours:g} hours.")
    return planned


def refresh_all() -> int:
    from catalog.choices import DataSourceFormat, TableType
    from maintenance import policy as policies

    # Managed Delta tables, whether or not a client reports metrics (the catalog reads the log).
    delta = Table.objects.filter(Q(id__in=CommitReport.objects.values("table_id")) | Q(
        data_source_format=DataSourceFormat.DELTA, table_type=TableType.MANAGED))
    count = 0
    for table in delta.select_related("schema"):
        if policies.for_table(table).enabled:
            count += _refreshed(refresh_table, table)
    iceberg = Table.objects.filter(data_source_format=DataSourceFormat.ICEBERG, iceberg__isnull=False) \
        .exclude(table_type=TableType.VIEW).select_related("schema", "iceberg")
    for table in iceberg:
        count += _refreshed(refresh_iceberg_table, table)
    return count


def _refreshed(refresh, table: Table) -> int:
    """1 once `refresh(table)` is done; 0 when the table was dropped meanwhile (its health row or
    plan then refers to a row that is gone)."""
    try:
        with transaction.atomic():
            refresh(table)
    except IntegrityError:
        if Table.objects.filter(id=table.id).exists():
            raise
        return 0
    return 1
