"""How the background processes say they are alive, and how several beats share one schedule.

- A Celery worker writes its `ProcessHeartbeat` row when it is ready and then every
  UCWEB_HEARTBEAT_SECONDS from a thread of its own, with what its maintenance engine can do
  (Spark for Iceberg: Java, PySpark and the Iceberg runtime). A clean shutdown marks the row
  stopped; a killed worker's row simply goes stale.
- The beat scheduler (`LeaderScheduler`, CELERY_BEAT_SCHEDULER) records each tick in its own row
  and sends due tasks only while it holds the `beat` lease: every server may start a beat, and
  exactly one of them leads at a time; when the leader stops renewing, another takes over.

The web server's readiness (ucweb.readiness) only reads these rows."""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, close_old_connections, transaction
from django.utils import timezone
from django_celery_beat.schedulers import DatabaseScheduler

from maintenance.models import Lease, ProcessHeartbeat

logger = logging.getLogger(__name__)


def process_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def beat(kind: str, *, started_at, details: dict | None = None) -> None:
    """This process's row: seen now, with `details` when given."""
    now = timezone.now()
    defaults = {"seen_at": now, "stopped_at": None}
    if details is not None:
        defaults["details"] = details
    ProcessHeartbeat.objects.update_or_create(
        kind=kind, name=process_name(), defaults=defaults, create_defaults={**defaults, "started_at": started_at})


def stopped(kind: str) -> None:
    ProcessHeartbeat.objects.filter(kind=kind, name=process_name()).update(stopped_at=timezone.now())


# -- the worker -----------------------------------------------------------------------------------
class WorkerHeartbeat:
    """The thread that keeps this worker's row fresh; the engine is checked once, in the thread,
    so that a worker is ready at once even while the Iceberg runtime is still being assembled."""

    def __init__(self):
        self.started_at = timezone.now()
        self.engine = {"status": "checking", "reason": "the maintenance engine is being checked"}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="ucweb-heartbeat", daemon=True)

    def loop(self) -> None:
        self.write()
        self.engine = engine_status()
        announce_engine(self.engine)
        while True:
            self.write()
            if self.stop.wait(settings.UCWEB_HEARTBEAT_SECONDS):
                return

    def write(self) -> None:
        try:
            beat(ProcessHeartbeat.Kind.WORKER, started_at=self.started_at, details={"engine": self.engine})
        except Exception as exc:  # noqa: BLE001 - a database that is away now is tried again next beat
            logger.warning("could not record the worker's heartbeat: %s", exc)
        finally:
            close_old_connections()

    def shutdown(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        try:
            stopped(ProcessHeartbeat.Kind.WORKER)
        except Exception as exc:  # noqa: BLE001 - the row then goes stale instead
            logger.warning("could not record the worker's shutdown: %s", exc)


def engine_status() -> dict:
    """What Iceberg maintenance can run on in this process: {"status": "ok" | "unavailable",
    "reason", "master"}. Prepares the engine (the Iceberg runtime is assembled once per machine
    and cached) without starting Spark."""
    from maintenance.errors import Skip
    from maintenance.iceberg_ops import check_engine

    try:
        check_engine()
    except Skip as exc:
        return {"status": "unavailable", "reason": str(exc), "master": settings.UCWEB_SPARK_MASTER}
    return {"status": "ok", "reason": f"Spark ({settings.UCWEB_SPARK_MASTER}) with the Iceberg runtime",
            "master": settings.UCWEB_SPARK_MASTER}


def announce_engine(engine: dict) -> None:
    """One line on the worker's standard error, whatever its log level: whether Iceberg
    maintenance can run here is something whoever started the worker must see."""
    if engine["status"] == "ok":
        print(f"ucweb worker {process_name()}: Iceberg maintenance runs on {engine['reason']}.",
              file=sys.stderr, flush=True)
    else:
        print(f"ucweb worker {process_name()}: WARNING: Iceberg maintenance is unavailable, its runs are "
              f"SKIPPED: {engine['reason']}", file=sys.stderr, flush=True)


_heartbeat: WorkerHeartbeat | None = None


def worker_ready(sender=None, **kwargs) -> None:
    global _heartbeat
    _heartbeat = WorkerHeartbeat()
    _heartbeat.thread.start()
    print(f"ucweb worker {process_name()} is ready.", file=sys.stderr, flush=True)


def worker_shutdown(sender=None, **kwargs) -> None:
    if _heartbeat is not None:
        _heartbeat.shutdown()


# -- the beat --------------------------------------------------------------------------------------
def hold_lease(name: str, holder: str, seconds: float) -> bool:
    """Takes or renews the lease `name` for `holder`: True while `holder` holds it."""
    now = timezone.now()
    expires = now + timedelta(seconds=seconds)
    renewed = Lease.objects.filter(name=name, holder=holder).update(expires_at=expires) or \
        Lease.objects.filter(name=name, expires_at__lt=now).update(holder=holder, expires_at=expires)
    if renewed:
        return True
    try:
        with transaction.atomic():
            Lease.objects.create(name=name, holder=holder, expires_at=expires)
        return True
    except IntegrityError:
        return False  # another holder's, and not expired


class LeaderScheduler(DatabaseScheduler):
    """django-celery-beat's scheduler (the schedule lives in the database, edited in the console)
    that sends due tasks only while this beat holds the `beat` lease, and records its ticks."""

    def __init__(self, *args, **kwargs):
        self.started_at = timezone.now()
        self.leading = False
        super().__init__(*args, **kwargs)

    def tick(self, *args, **kwargs):
        period = settings.UCWEB_HEARTBEAT_SECONDS
        try:
            # The lease lasts as long as readiness takes a beat for alive: a tick held back by a
            # busy database (SQLite under a storm of commits) neither loses it nor turns readiness 503.
            leading = hold_lease(Lease.BEAT, process_name(), settings.UCWEB_HEARTBEAT_STALE_SECONDS)
            beat(ProcessHeartbeat.Kind.BEAT, started_at=self.started_at, details={"leading": leading})
        except Exception as exc:  # noqa: BLE001 - without the database nothing is sent; tried again
            logger.warning("beat could not reach the database: %s", exc)
            close_old_connections()
            return period
        if leading != self.leading:
            self.leading = leading
            print(f"ucweb beat {process_name()} {'leads' if leading else 'follows'} the schedule.",
                  file=sys.stderr, flush=True)
        if not leading:
            return period
        return min(super().tick(*args, **kwargs), period)

    def close(self):
        try:
            stopped(ProcessHeartbeat.Kind.BEAT)
            Lease.objects.filter(name=Lease.BEAT, holder=process_name()).delete()
        except Exception as exc:  # noqa: BLE001 - the lease then expires instead
            logger.warning("beat could not give up its lease: %s", exc)
        super().close()
