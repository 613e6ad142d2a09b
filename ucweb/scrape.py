"""`GET /metrics`: the Prometheus exposition of ucweb.metrics, added up over the server's processes,
with what is read at scrape time (the unpublished Delta backlog, the Celery queue depth).

Access: `Authorization: Bearer <token>` with UCWEB_METRICS_TOKEN (a scraper's, which grants
nothing else) or a metastore admin's API token; 401 without a valid token, 403 for anyone else."""

from __future__ import annotations

import hmac
import json
import logging
import os
import struct
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.db.models import F, Sum
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from kombu.exceptions import ChannelError
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.mmap_dict import MmapedDict

from catalog.models import Table
from catalog.services import principals
from ucweb import metrics
from ucweb.errors import Unauthenticated

logger = logging.getLogger(__name__)
MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"


class CatalogState:
    """Gauges read when Prometheus asks, from the database and the broker every server shares
    (so each server reports the same values)."""

    def collect(self):
        backlog = GaugeMetricFamily("ucweb_delta_unpublished_commits",
                                    "Ratified Delta commits not yet published to _delta_log, over all tables.")
        behind = Table.objects.filter(latest_version__isnull=False, latest_published_version__isnull=False,
                                      latest_version__gt=F("latest_published_version"))
        total = behind.aggregate(total=Sum(F("latest_version") - F("latest_published_version")))["total"]
        backlog.add_metric([], total or 0)
        yield backlog
        depth = queue_depth()
        if depth is not None:
            queued = GaugeMetricFamily("ucweb_celery_queue_depth", "Tasks waiting in the broker's queue.",
                                       labels=["queue"])
            queued.add_metric([depth[0]], depth[1])
            yield queued


def queue_depth() -> tuple[str, int] | None:
    """(queue, messages waiting) as the broker counts them (Redis: the list's length); None when
    the broker does not answer (readiness says so)."""
    from ucweb.celery import app

    queue = app.conf.task_default_queue
    try:
        with app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=2)
            try:
                return queue, conn.default_channel.queue_declare(queue=queue, passive=True).message_count
            except ChannelError:  # Redis keeps no empty list: a queue with nothing waiting is "not found"
                return queue, 0
    except Exception as exc:  # noqa: BLE001 - whatever the transport raises, the depth is unknown
        logger.info("the queue depth is unknown: %s", exc)
        return None


def forget_dead_processes(directory: str) -> None:
    """The live gauges of processes that are gone (a web worker killed and replaced) stop counting.
    Counters and histograms of a process that is gone stay: they are totals. Two scrapes may forget
    the same process at once: a file the other one removed first is forgotten already."""
    for path in Path(directory).glob("gauge_live*_*.db"):
        try:
            pid = int(path.stem.rsplit("_", 1)[1])
        except ValueError:
            continue  # not a file prometheus-client names
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            try:
                multiprocess.mark_process_dead(pid, directory)
            except FileNotFoundError:
                pass
        except PermissionError:
            pass  # alive, another user's


def readable(path: str) -> bool:
    """Whether the collector can add up this process's file. A process killed at any moment may
    leave one it cannot: empty (killed after creating it and before sizing it), or cut short or
    overwritten so that its length field, a key or a value cannot be read. Such a file is left out
    of the scrape (and said in the log) rather than failing it for every other process's metrics."""
    try:
        for key, value, _timestamp, _position in MmapedDict.read_all_values_from_file(path):
            metric_name, name, labels, _help = json.loads(key)
            if not (isinstance(metric_name, str) and isinstance(name, str) and isinstance(labels, dict)
                    and all(isinstance(v, str) for v in labels.values())):
                raise ValueError(f"unexpected key {key!r}")
            if "le" in labels:
                float(labels["le"])
            float(value)
    except FileNotFoundError:
        return False  # a dead process's live gauges, forgotten since the listing
    except (OSError, struct.error, RuntimeError, UnicodeDecodeError, ValueError, TypeError) as exc:
        logger.warning("metrics file %s left out of the scrape, it cannot be read: %s", path, exc)
        return False
    return True


class ProcessFiles(multiprocess.MultiProcessCollector):
    """prometheus-client's multiprocess collector over the files it can read (see readable)."""

    def collect(self):
        files = [str(path) for path in sorted(Path(self._path).glob("*.db")) if readable(str(path))]
        return self.merge(files, accumulate=True)


def exposition() -> bytes:
    registry = CollectorRegistry()
    directory = os.environ.get(MULTIPROCESS_DIR)
    if directory:
        forget_dead_processes(directory)
        ProcessFiles(registry, path=directory)
    else:
        registry.register(SingleProcess())
    registry.register(CatalogState())
    return generate_latest(registry)


class SingleProcess:
    """This process's own metrics (a server without PROMETHEUS_MULTIPROC_DIR, e.g. runserver)."""

    def collect(self):
        return REGISTRY.collect()


def allowed(request) -> JsonResponse | None:
    """None when the request may read the metrics, else the refusal."""
    scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return refusal(401, "UNAUTHENTICATED", "Send 'Authorization: Bearer <token>' (UCWEB_METRICS_TOKEN or a "
                                               "metastore admin's token).")
    if settings.UCWEB_METRICS_TOKEN and hmac.compare_digest(token.encode(), settings.UCWEB_METRICS_TOKEN.encode()):
        return None
    try:
        principal = principals.principal_for_token(token)
    except Unauthenticated as exc:
        return refusal(401, "UNAUTHENTICATED", exc.message)
    if not principal.is_metastore_admin:
        return refusal(403, "PERMISSION_DENIED", "Only a metastore admin or the metrics token may read /metrics.")
    return None


def refusal(status: int, code: str, message: str) -> JsonResponse:
    response = JsonResponse({"error_code": code, "message": message}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="ucweb"'
    return response


@csrf_exempt  # a bearer token, no cookie, is what it reads: other methods get their 405
@require_GET
def metrics_view(request):
    refused = allowed(request)
    if refused is not None:
        return refused
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)


_pool_gauges: tuple[int, int, int] | None = None  # what this process's pool gauges hold


def observe_pool() -> None:
    """This process's connection pool use after a request (PostgreSQL with UCWEB_DB_POOL_SIZE)."""
    pool = getattr(connection, "pool", None) if connection.vendor == "postgresql" else None
    if pool is None:
        return
    global _pool_gauges
    stats = pool.get_stats()
    size = stats.get("pool_size", 0)
    observed = (size, size - stats.get("pool_available", 0), stats.get("requests_waiting", 0))
    if observed == _pool_gauges:
        return
    # A gauge's write is a locked write to this process's file (PROMETHEUS_MULTIPROC_DIR): only a
    # change is written, which after most requests there is not
    for label, value in zip(("open", "in_use", "waiting"), observed):
        metrics.DB_POOL_CONNECTIONS.labels(label).set(value)
    _pool_gauges = observed
