"""`Idempotency-Key` on mutating Iceberg requests: the final response is stored per principal and
key and replayed for a repeat of the same request; a 5xx (or a throttle) is never stored, so
the client may retry it for real."""

from __future__ import annotations

import json
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from commits.models import IdempotencyKey
from ucweb.errors import CatalogError, InvalidParameter, UnprocessableEntity

REPLAYABLE_4XX = {400, 404, 405, 406, 409, 410, 422}
HEADER = "HTTP_IDEMPOTENCY_KEY"


class Replay(Exception):
    def __init__(self, record: IdempotencyKey):
        self.record = record


class InFlight(CatalogError):
    status = 409
    error_code = "ABORTED"
    iceberg_type = "CommitFailedException"


def lifetime() -> timedelta:
    return timedelta(seconds=settings.UCWEB_IDEMPOTENCY_LIFETIME_SECONDS)


def claim(request, principal_name: str) -> IdempotencyKey | None:
    """Called before the view runs: a stored final response raises Replay; a fresh key is
    claimed (a pending row) and returned so that `settle` can record the outcome."""
    key = request.META.get(HEADER)
    if not key:
        return None
    if len(key) > 255:
        raise InvalidParameter("Idempotency-Key must be at most 255 characters.")
    IdempotencyKey.objects.filter(created_at__lt=timezone.now() - lifetime()).delete()
    try:
        with transaction.atomic():
            return IdempotencyKey.objects.create(
                key=key, principal=principal_name, method=request.method, path=request.path
            )
    except IntegrityError:
        pass
    record = IdempotencyKey.objects.get(principal=principal_name, key=key)
    if record.method != request.method or record.path != request.path:
        raise UnprocessableEntity("This Idempotency-Key was used for another request.")
    if record.status is None:
        raise InFlight("A request with this Idempotency-Key is still in progress.")
    raise Replay(record)


def settle(record: IdempotencyKey, response) -> None:
    status = response.status_code
    if 200 <= status < 300 or status in REPLAYABLE_4XX:
        body = getattr(response, "data", None)
        if body is None and getattr(response, "content", b""):
            try:
                body = json.loads(response.content)
            except ValueError:
                body = None
        IdempotencyKey.objects.filter(pk=record.pk).update(status=status, response=body)
    else:
        IdempotencyKey.objects.filter(pk=record.pk).delete()


def release(record: IdempotencyKey) -> None:
    """Forgets a claimed key whose request ended without a final response (a server error)."""
    IdempotencyKey.objects.filter(pk=record.pk, status__isnull=True).delete()
