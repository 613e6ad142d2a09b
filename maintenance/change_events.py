"""Change events, the delivering half: the worker drains the outbox (catalog.models.ChangeEvent)
to each configured sink, as CloudEvents in structured mode (the whole event as JSON,
`application/cloudevents+json`).

At least once: a row is marked delivered only after its sink acknowledged it, so a worker killed
between the two sends the event again, with the same id (JetStream drops it as a duplicate within
its window; a webhook deduplicates on the id). One drain at a time (a database lock); events go
out in `sequence` order, and an event that fails holds back the later events of its securable
(its `partition_key`) until it is delivered, retried after UCWEB_EVENTS_BACKOFF_SECONDS doubled
at each failure. A sink that cannot be reached holds back every event until the next drain."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import urllib.error
import urllib.request
from datetime import timedelta

import nats
from cloudevents.core.bindings.http import to_structured_event
from cloudevents.core.v1.event import CloudEvent
from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone
from nats.errors import MaxPayloadError
from nats.js.errors import BadRequestError, NotFoundError

from catalog.models import ChangeEvent

logger = logging.getLogger(__name__)

BATCH = 500
MAX_BACKOFF_SECONDS = 3600
_LOCK_KEY = 0x75637765626576  # the drain's PostgreSQL advisory lock
_local_lock = threading.Lock()  # elsewhere (SQLite): one worker process


class SinkUnavailable(Exception):
    """The sink cannot be reached at all: every event waits for the next drain."""


def cloud_event(row: ChangeEvent) -> CloudEvent:
    return CloudEvent(
        attributes={
            "id": str(row.event_id),
            "source": settings.UCWEB_EVENTS_SOURCE,
            "type": row.type,
            "subject": row.subject,
            "time": row.time,
            "datacontenttype": "application/json",
            # CloudEvents' partitioning extension: events of one key arrive in order.
            "partitionkey": row.partition_key,
        },
        data=row.data,
    )


class NatsSink:
    """JetStream: the stream UCWEB_EVENTS_NATS_STREAM (created, or extended, to hold the subjects),
    one subject per event type, the event id as `Nats-Msg-Id` so a redelivery is a duplicate."""

    name = "nats"

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.client = None
        self.stream = settings.UCWEB_EVENTS_NATS_STREAM
        self.subject = settings.UCWEB_EVENTS_NATS_SUBJECT

    def open(self) -> None:
        timeout = settings.UCWEB_EVENTS_TIMEOUT_SECONDS
        try:
            # One more try, then NoServersError (0 would mean trying forever); the next drain retries.
            self.client = self.loop.run_until_complete(asyncio.wait_for(nats.connect(
                settings.UCWEB_EVENTS_NATS_URL, connect_timeout=timeout, allow_reconnect=False,
                max_reconnect_attempts=1, reconnect_time_wait=0.1, error_cb=_quiet), 2 * timeout))
            self.jetstream = self.client.jetstream(timeout=timeout)
            self.loop.run_until_complete(self._ensure_stream())
        except Exception as exc:  # noqa: BLE001 - whatever stops the connection stops the sink
            self.close()
            raise SinkUnavailable(f"NATS at {settings.UCWEB_EVENTS_NATS_URL}: {exc!r}") from exc

    async def _ensure_stream(self) -> None:
        subjects = self.subject.replace("{type}", "*")
        try:
            info = await self.jetstream.stream_info(self.stream)
        except NotFoundError:
            await self.jetstream.add_stream(name=self.stream, subjects=[subjects])
            return
        existing = info.config.subjects or []
        if subjects not in existing:
            await self.jetstream.update_stream(info.config.evolve(subjects=[*existing, subjects]))

    def send(self, row: ChangeEvent) -> None:
        message = to_structured_event(cloud_event(row))
        try:
            self.loop.run_until_complete(self.jetstream.publish(
                self.subject.replace("{type}", row.type), message.body, stream=self.stream,
                headers={"Nats-Msg-Id": str(row.event_id), **message.headers}))
        except (MaxPayloadError, BadRequestError):
            raise  # this event's own: it is retried later, the others go on
        except Exception as exc:  # noqa: BLE001 - the server or JetStream is not answering
            raise SinkUnavailable(f"NATS at {settings.UCWEB_EVENTS_NATS_URL}: {exc!r}") from exc

    def close(self) -> None:
        if self.client is not None and not self.client.is_closed:
            with contextlib.suppress(Exception):
                self.loop.run_until_complete(self.client.close())
        self.loop.close()


async def _quiet(exc) -> None:
    logger.debug("NATS: %r", exc)


class WebhookSink:
    """An HTTP POST per event to UCWEB_EVENTS_WEBHOOK_URL; any 2xx answer acknowledges it."""

    name = "webhook"

    def open(self) -> None:
        pass

    def send(self, row: ChangeEvent) -> None:
        message = to_structured_event(cloud_event(row))
        request = urllib.request.Request(settings.UCWEB_EVENTS_WEBHOOK_URL, data=message.body,
                                         headers=message.headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=settings.UCWEB_EVENTS_TIMEOUT_SECONDS):
                pass
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"the webhook answered {exc.code} {exc.reason}") from None
        except OSError as exc:
            raise SinkUnavailable(f"webhook {settings.UCWEB_EVENTS_WEBHOOK_URL}: {exc}") from exc

    def close(self) -> None:
        pass


def configured_sinks() -> list:
    sinks = []
    if settings.UCWEB_EVENTS_NATS_URL:
        sinks.append(NatsSink())
    if settings.UCWEB_EVENTS_WEBHOOK_URL:
        sinks.append(WebhookSink())
    return sinks


@contextlib.contextmanager
def _the_drain():
    """True when this process holds the one drain, False when another does."""
    if connection.vendor != "postgresql":
        held = _local_lock.acquire(blocking=False)
        try:
            yield held
        finally:
            if held:
                _local_lock.release()
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [_LOCK_KEY])
        held = cursor.fetchone()[0]
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_LOCK_KEY])


def drain() -> int:
    """Delivers what is due to every configured sink; the number of deliveries. Then forgets the
    oldest delivered events beyond UCWEB_EVENTS_KEEP_DELIVERED."""
    sinks = configured_sinks()
    if not sinks:
        return 0
    delivered = 0
    with _the_drain() as held:
        if not held:
            return 0
        for sink in sinks:
            delivered += _drain_sink(sink)
        _forget_delivered([sink.name for sink in sinks])
    return delivered


def _drain_sink(sink) -> int:
    delivered_at = f"{sink.name}_delivered_at"
    try:
        sink.open()
    except SinkUnavailable as exc:
        logger.warning("change events wait: %s", exc)
        return 0
    delivered, after, held_back = 0, 0, set()
    try:
        while True:
            try:
                batch = _settled_batch(delivered_at, after)
            except OperationalError:  # writers held the outbox longer than the drain waits
                return delivered
            if not batch:
                return delivered
            for row in batch:
                after = row.sequence
                if row.partition_key in held_back:
                    continue
                retry_at = getattr(row, f"{sink.name}_retry_at")
                if retry_at is not None and retry_at > timezone.now():
                    held_back.add(row.partition_key)
                    continue
                try:
                    sink.send(row)
                except SinkUnavailable as exc:
                    logger.warning("change events wait: %s", exc)
                    return delivered
                except Exception as exc:  # noqa: BLE001 - the event is retried later, in order
                    _failed(row, sink.name, exc)
                    held_back.add(row.partition_key)
                    continue
                ChangeEvent.objects.filter(sequence=row.sequence).update(**{delivered_at: timezone.now()})
                delivered += 1
    finally:
        sink.close()


def _settled_batch(delivered_at: str, after: int) -> list[ChangeEvent]:
    """The next events not yet delivered, once no transaction that wrote one is still open.

    A sequence number is taken when an event is written, not when its transaction commits, so a
    later event of a securable can be visible while an earlier one is not yet (a maintenance run
    records its event beside commits to the same table, without the table's lock): reading then
    would send the later one first. On PostgreSQL the read waits, for at most a moment, until the
    open writers of the outbox have committed (EXCLUSIVE mode lets no new one in meanwhile, and
    lets readers be); SQLite has one writer at a time, so its numbers are in commit order."""
    unsent = (ChangeEvent.objects.filter(**{f"{delivered_at}__isnull": True, "sequence__gt": after})
              .order_by("sequence"))
    if connection.vendor != "postgresql":
        return list(unsent[:BATCH])
    with transaction.atomic(), connection.cursor() as cursor:
        # Shorter than deadlock_timeout (1 s): a writer that waits on something this drain
        # holds up is never the one PostgreSQL aborts; the drain gives up and comes back.
        cursor.execute("SET LOCAL lock_timeout = '200ms'")
        cursor.execute(f"LOCK TABLE {ChangeEvent._meta.db_table} IN EXCLUSIVE MODE")
        return list(unsent[:BATCH])


def _failed(row: ChangeEvent, sink: str, exc: Exception) -> None:
    attempts = getattr(row, f"{sink}_attempts") + 1
    backoff = min(MAX_BACKOFF_SECONDS, settings.UCWEB_EVENTS_BACKOFF_SECONDS * 2 ** (attempts - 1))
    logger.warning("change event %s (%s %s) not delivered to %s, attempt %d, again in %ds: %s",
                   row.event_id, row.type, row.subject, sink, attempts, backoff, exc)
    ChangeEvent.objects.filter(sequence=row.sequence).update(**{
        f"{sink}_attempts": F(f"{sink}_attempts") + 1,
        f"{sink}_retry_at": timezone.now() + timedelta(seconds=backoff),
        "last_error": f"{sink}: {exc}"[:2000],
    })


def _forget_delivered(sinks: list[str]) -> None:
    delivered = ChangeEvent.objects.filter(**{f"{sink}_delivered_at__isnull": False for sink in sinks})
    newest_forgotten = (delivered.order_by("-sequence")
                        .values_list("sequence", flat=True)[settings.UCWEB_EVENTS_KEEP_DELIVERED:][:1])
    delivered.filter(sequence__lte=newest_forgotten).delete()
