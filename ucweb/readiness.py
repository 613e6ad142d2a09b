"""Whether the catalog can do its job now: `/readyz`, `manage.py ready` and the console's home page.

Each part answers {"status": "ok" | "unavailable" | ..., "detail": ...}:
- database: a statement answers;
- broker: the Celery broker accepts a connection (Redis), or its folder is writable (the embedded
  default);
- worker: at least one Celery worker wrote its heartbeat in the last
  UCWEB_HEARTBEAT_STALE_SECONDS and has not shut down;
- beat: a beat recorded a tick as recently, and one of them holds the schedule's lease;
- engine: what the live workers' maintenance engine can do (Spark for Iceberg maintenance).

The catalog is unavailable (503) when the database, the broker, the worker or the beat is: then
nothing is published, purged or maintained in the background. An engine that cannot run leaves it
`degraded` (200): every API works and Delta maintenance runs, but Iceberg maintenance runs are
SKIPPED, and the reason says why. The rows are written by the worker and the beat themselves
(maintenance.liveness); nothing here talks to them."""

from __future__ import annotations

import os
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

OK, UNAVAILABLE, DEGRADED = "ok", "unavailable", "degraded"
REQUIRED = ("database", "broker", "worker", "beat")


def report() -> dict:
    checks = {"database": database()}
    checks["broker"] = broker()
    if checks["database"]["status"] == OK:
        checks.update(background())
    else:
        reason = "unknown: the database does not answer"
        checks.update({name: {"status": UNAVAILABLE, "detail": reason} for name in ("worker", "beat", "engine")})
    if any(checks[name]["status"] != OK for name in REQUIRED):
        status = UNAVAILABLE
    elif checks["engine"]["status"] != OK:
        status = DEGRADED
    else:
        status = OK
    return {"status": status, "checks": checks}


def database() -> dict:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return {"status": UNAVAILABLE, "detail": f"{connection.vendor}: {exc}".strip()}
    return {"status": OK, "detail": connection.vendor}


def broker() -> dict:
    from ucweb.celery import app

    url = app.conf.broker_url or ""
    if url.startswith("filesystem://"):
        folder = app.conf.broker_transport_options.get("data_folder_in", "")
        if os.path.isdir(folder) and os.access(folder, os.W_OK):
            return {"status": OK, "detail": "the embedded broker (a folder of the var directory)"}
        return {"status": UNAVAILABLE, "detail": f"the broker folder {folder} is missing or not writable"}
    scheme = url.split("://", 1)[0] or "unknown"
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=2)
    except Exception as exc:  # noqa: BLE001 - whatever the transport raises, the broker is away
        return {"status": UNAVAILABLE, "detail": f"{scheme}: {type(exc).__name__}: {exc}"}
    return {"status": OK, "detail": scheme}


def background() -> dict:
    from maintenance.models import Lease, ProcessHeartbeat

    now = timezone.now()
    fresh = now - timedelta(seconds=settings.UCWEB_HEARTBEAT_STALE_SECONDS)
    alive = ProcessHeartbeat.objects.filter(seen_at__gte=fresh, stopped_at__isnull=True)
    workers = list(alive.filter(kind=ProcessHeartbeat.Kind.WORKER).order_by("name"))
    beats = list(alive.filter(kind=ProcessHeartbeat.Kind.BEAT).order_by("name"))
    checks = {}
    if workers:
        checks["worker"] = {"status": OK, "detail": f"{len(workers)} worker(s) alive",
                            "workers": [{"name": row.name, "seen": row.seen_at.isoformat()} for row in workers]}
    else:
        checks["worker"] = {"status": UNAVAILABLE, "detail": _gone("Celery worker", ProcessHeartbeat.Kind.WORKER)}
    leader = Lease.objects.filter(name=Lease.BEAT, expires_at__gte=now).values_list("holder", flat=True).first()
    if beats and leader:
        checks["beat"] = {"status": OK, "detail": f"{leader} sends the schedule",
                          "last_tick": max(row.seen_at for row in beats).isoformat()}
    else:
        checks["beat"] = {"status": UNAVAILABLE, "detail": _gone("beat", ProcessHeartbeat.Kind.BEAT)}
    checks["engine"] = engine(workers)
    return checks


def _gone(what: str, kind: str) -> str:
    from maintenance.models import ProcessHeartbeat

    row = ProcessHeartbeat.objects.filter(kind=kind).order_by("-seen_at").first()
    if row is None:
        return f"no {what} has ever reported (is it running?)"
    if row.stopped_at:
        return f"the last {what} ({row.name}) shut down at {row.stopped_at.isoformat()}"
    return (f"no {what} reported in the last {settings.UCWEB_HEARTBEAT_STALE_SECONDS} s; the last one "
            f"({row.name}) at {row.seen_at.isoformat()}")


def engine(workers: list) -> dict:
    """Iceberg maintenance's engine, as the live workers found it (the best of them)."""
    engines = [(row.details or {}).get("engine") or {} for row in workers]
    if not engines:
        return {"status": UNAVAILABLE, "detail": "unknown: no worker is alive"}
    for found in engines:
        if found.get("status") == OK:
            return {"status": OK, "detail": found.get("reason", "")}
    checking = [found for found in engines if found.get("status") == "checking"]
    if checking:
        return {"status": "checking", "detail": checking[0].get("reason", "")}
    return {"status": UNAVAILABLE, "detail": engines[0].get("reason", "not reported")}
