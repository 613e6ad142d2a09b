"""What a table's console page shows: its history as one timeline with any two versions compared
(table_history), lineage, a preview of its rows for a principal that may read them, the DDL that
makes a table like it, its history in its own format (Delta commits, or Iceberg snapshots, refs
and metadata history), health and maintenance, and the policies that apply."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from django.apps import apps
from django.utils.safestring import mark_safe

from catalog import rows
from catalog.admin import charts, ddl, lineage, preview, table_history
from catalog.choices import DataSourceFormat
from catalog.services import policies

COMMITS_SHOWN = 25


def _when(ms) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, UTC) if isinstance(ms, int) else None


NOT_SENT, NOT_RECORDED = "not sent", "not recorded"


def declared(value: str | None) -> str:
    """A commitInfo field a Delta commit row recorded, as the console shows it: the client's own
    word, "not sent" when it declared none, "not recorded" for commits ratified before ucweb
    recorded it (commits.models.DeltaCommit)."""
    if value is None:
        return NOT_RECORDED
    return value or NOT_SENT


def delta_section(table) -> dict:
    commits = list(table.delta_commits.order_by("-version")[:COMMITS_SHOWN])
    rows = [{
        "version": c.version,
        "operation": declared(c.operation),
        "engine": declared(c.engine_info),
        "time": _when(c.timestamp),
        "ratified_by": c.ratified_by,
        "ratified_at": c.ratified_at,
        "published": c.published_at is not None,
        "published_at": c.published_at,
        "file_name": c.file_name,
        "file_size": charts.human_bytes(c.file_size),
    } for c in commits]
    timestamps = list(table.delta_commits.values_list("timestamp", flat=True))
    reports = [{
        "version": r.commit_version,
        "files_added": r.num_files_added,
        "bytes_added": charts.human_bytes(r.num_bytes_added) if r.num_bytes_added is not None else None,
        "files_removed": r.num_files_removed,
        "rows_inserted": r.num_rows_inserted,
        "rows_updated": r.num_rows_updated,
        "rows_removed": r.num_rows_removed,
        "received_at": r.received_at,
        "reported_by": r.reported_by,
    } for r in table.commit_reports.order_by("-commit_version", "-received_at")[:10]]
    return {
        "commits": rows,
        "reports": reports,
        "total": table.delta_commits.count(),
        "latest_version": table.latest_version,
        "latest_published_version": table.latest_published_version,
        "catalog_managed": table.latest_version is not None,
        "rate_chart": mark_safe(charts.commit_rate(table.full_name, timestamps)),  # noqa: S308 - built escaped
    }


def iceberg_section(table) -> dict | None:
    stored = getattr(table, "iceberg", None)
    if stored is None:
        return None
    try:
        metadata = json.loads(stored.metadata_json)
    except ValueError:
        return {"metadata_location": stored.metadata_location, "error": "the stored metadata is not valid JSON"}
    snapshots = sorted(metadata.get("snapshots") or [], key=lambda s: s.get("timestamp-ms") or 0)
    current = metadata.get("current-snapshot-id")
    shown = [{
        "snapshot_id": s.get("snapshot-id"),
        "parent_id": s.get("parent-snapshot-id"),
        "time": _when(s.get("timestamp-ms")),
        "operation": (s.get("summary") or {}).get("operation", "—"),
        "summary": {k.replace("-", "_"): v for k, v in (s.get("summary") or {}).items() if k != "operation"},
        "current": s.get("snapshot-id") == current,
        "manifest_list": s.get("manifest-list"),
    } for s in reversed(snapshots)]
    refs = [{"name": name, "type": ref.get("type"), "snapshot_id": ref.get("snapshot-id"),
             "max_ref_age_ms": ref.get("max-ref-age-ms")}
            for name, ref in sorted((metadata.get("refs") or {}).items())]
    history = [{"time": _when(entry.get("timestamp-ms")), "metadata_file": entry.get("metadata-file")}
               for entry in reversed(metadata.get("metadata-log") or [])]
    history.insert(0, {"time": _when(metadata.get("last-updated-ms")), "metadata_file": stored.metadata_location,
                       "current": True})
    timestamps = [s.get("timestamp-ms") for s in snapshots]
    summaries = [{"snapshot_id": s.get("snapshot-id"), "summary": s.get("summary") or {}} for s in snapshots]
    return {
        "metadata_location": stored.metadata_location,
        "format_version": metadata.get("format-version"),
        "table_uuid": metadata.get("table-uuid"),
        "current_snapshot_id": current,
        "snapshots": shown[:COMMITS_SHOWN],
        "snapshot_count": len(snapshots),
        "refs": refs,
        "history": history[:COMMITS_SHOWN],
        "rate_chart": mark_safe(charts.commit_rate(table.full_name, timestamps)),  # noqa: S308
        "size_chart": mark_safe(charts.size_over_snapshots(table.full_name, summaries)),  # noqa: S308
    }


def _model(app_label: str, name: str):
    try:
        return apps.get_model(app_label, name)
    except LookupError:
        return None


def health_section(table) -> dict:
    """Health, maintenance plans and their runs, and alerts."""
    section = {"health": None, "plans": [], "alerts": [], "charts": ""}
    health_model = _model("maintenance", "TableHealth")
    if health_model is not None:
        health = health_model.objects.filter(table=table).first()
        if health is not None:
            section["health"] = {
                "files_live": health.files_live,
                "bytes_live": charts.human_bytes(health.bytes_live),
                "small_file_share": charts.percent(health.small_file_share),
                "commits_last_day": health.commits_last_day,
                "rows": f"{health.rows_inserted:,} inserted, {health.rows_updated:,} updated, "
                        f"{health.rows_removed:,} removed",
                "updated_at": health.updated_at,
            }
            section["charts"] = mark_safe(charts.file_size_histogram(table.full_name, health.histogram))  # noqa: S308
    plan_model = _model("maintenance", "MaintenancePlan")
    if plan_model is not None:
        section["plans"] = list(plan_model.objects.filter(table=table).order_by("-created_at")[:10])
    alert_model = _model("maintenance", "TableAlert")
    if alert_model is not None:
        section["alerts"] = list(alert_model.objects.filter(table=table, resolved_at=None)[:10])
    return section


def policies_section(table) -> list[dict]:
    """Polaris policies that apply to the table: attached to it, or inherited from its schema or
    catalog (the deepest of each type wins)."""
    levels = ("catalog", "namespace", "table")
    return [
        {"name": applicable.policy.name, "type": policy_type,
         "where": f"{levels[applicable.level]}{' (inherited)' if applicable.inherited else ''}"}
        for policy_type, applicable in sorted(policies.effective_policies(table).items())
    ]


def table_sections(table) -> dict:
    is_iceberg = table.data_source_format == DataSourceFormat.ICEBERG
    is_delta = table.data_source_format == DataSourceFormat.DELTA or table.latest_version is not None
    return {
        "delta": delta_section(table) if is_delta and not is_iceberg else None,
        "iceberg": iceberg_section(table) if is_iceberg else None,
        "health": health_section(table),
        "policies": policies_section(table),
    }


def page_sections(caller, table, query) -> dict:
    """Everything the page shows about `table` to `caller`, given the page's query (`a` and `b`:
    two versions to compare; `preview`: read the first rows)."""
    timeline = table_history.history_section(table, query)
    writers = list(dict.fromkeys(e["who"] for e in (timeline or {}).get("timeline", []) if e.get("who")))[:5]
    section = lineage.lineage_section(caller, table, writers)
    section["graph"] = mark_safe(section["graph"])  # noqa: S308 - built escaped
    return {
        **table_sections(table),
        "history": timeline,
        "lineage": section,
        "preview": preview.preview_section(caller, table, requested=query.get("preview") == "1"),
        "ddl": ddl.create_table(table, rows.columns_of(table)),
    }
