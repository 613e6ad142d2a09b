"""Publish-verify: a ratified Delta commit is only safe to forget once `_delta_log/<v>.json`
holds exactly its bytes. For each table with ratified, unpublished commits older than
UCWEB_PUBLISH_VERIFY_AFTER_SECONDS, the worker runs the publication loop of
commits.publication (the one a request runs at the bound) over them, in version order; the
first version that cannot be published raises a TableAlert and nothing past it is marked
published.

The storage is read without holding any lock; the result is applied under the table row's lock
only if the table did not move meanwhile, so a client's own backfill always wins the race."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from catalog.models import Table
from commits import publication
from commits.models import DeltaCommit
from maintenance.models import TableAlert

logger = logging.getLogger(__name__)


def _raise_alert(table: Table, commit: DeltaCommit, failure: publication.Failure) -> None:
    try:
        with transaction.atomic():
            TableAlert.objects.create(table=table, version=commit.version, kind=failure.kind,
                                      message=failure.message)
    except IntegrityError:
        pass  # the same alert is open already
    logger.warning("table %s: %s", table.id, failure.message)


def verify_table(table_id) -> int:
    """Returns how many versions it marked published."""
    table = Table.objects.filter(id=table_id).first()
    if table is None or table.latest_version is None:
        return 0
    seen_published = table.latest_published_version or 0
    verified = publication.publish_in_order(
        table, publication.unpublished(table).filter(published_at__isnull=True),
        on_failure=lambda commit, failure: _raise_alert(table, commit, failure))
    if verified == seen_published:
        return 0
    with transaction.atomic():
        locked = Table.objects.select_for_update().filter(id=table.id).first()
        if locked is None or (locked.latest_published_version or 0) != seen_published:
            return 0  # the table moved (a client backfilled, or it was dropped): try again later
        publication.mark_published(locked, verified)
        locked.save(update_fields=["latest_published_version"])
    return verified - seen_published


def tables_due(now=None):
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.UCWEB_PUBLISH_VERIFY_AFTER_SECONDS)
    return (
        DeltaCommit.objects.filter(published_at__isnull=True, ratified_at__lte=cutoff)
        .values_list("table_id", flat=True).distinct()
    )


def verify_all() -> int:
    return sum(verify_table(table_id) for table_id in list(tables_due()))
