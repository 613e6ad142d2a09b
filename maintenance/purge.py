"""Deleting the files of dropped managed securables. Safe to run twice or concurrently: the row
is locked while its prefix is deleted, and deleting what is gone already is not an error.

A purge deletes only what was the dropped securable's own: a prefix that another live securable
holds part of (a table, volume, model or staging table inside it or around it, an external
location or managed area inside it) is refused and recorded, never deleted (catalog.locations)."""

import logging

from django.db import transaction
from django.utils import timezone

from catalog.locations import foreign_holder
from catalog.services import dropped
from catalog.storage import StorageError, storage_for
from maintenance import nudges
from maintenance.models import PurgeRequest

logger = logging.getLogger(__name__)


def request_purge(*, url: str, reason: str, requested_by: str = "") -> PurgeRequest:
    """Records the purge in the caller's transaction and nudges a worker once it commits."""
    purge = PurgeRequest.objects.create(url=url, reason=reason, requested_by=requested_by)
    transaction.on_commit(lambda: _nudge(purge.id))
    return purge


def _nudge(purge_id: int) -> None:
    nudges.enqueue("maintenance.purge_location", purge_id)


def run_purge(purge_id: int) -> bool:
    with transaction.atomic():
        purge = PurgeRequest.objects.select_for_update(skip_locked=True).filter(id=purge_id, done_at__isnull=True).first()
        if purge is None:
            return False
        purge.attempts += 1
        holder = foreign_holder(purge.url)
        if holder is not None:
            purge.done_at = timezone.now()
            purge.last_error = f"Refused: {purge.url} overlaps {holder}, which is still live; nothing was deleted."
            purge.save(update_fields=["attempts", "done_at", "last_error"])
            logger.warning("purge of %s refused: it overlaps %s", purge.url, holder)
            return False
        try:
            purge.files_deleted += storage_for(purge.url).delete_prefix(purge.url)
        except StorageError as exc:
            purge.last_error = str(exc)
            purge.save(update_fields=["attempts", "last_error"])
            logger.warning("purge of %s failed: %s", purge.url, exc)
            return False
        purge.done_at = timezone.now()
        purge.last_error = ""
        purge.save(update_fields=["attempts", "files_deleted", "done_at", "last_error"])
        return True


def run_pending_purges(limit: int = 100) -> int:
    ids = list(PurgeRequest.objects.filter(done_at__isnull=True).order_by("requested_at").values_list("id", flat=True)[:limit])
    return sum(1 for purge_id in ids if run_purge(purge_id))


def expire_dropped(now=None) -> int:
    """Tables and volumes dropped longer ago than UCWEB_DROP_RETENTION_SECONDS go for good: their
    rows are deleted and their managed files purged (the purges run once this commits)."""
    return dropped.purge_expired(now)


def expire_staging_tables(now=None) -> int:
    """Staging tables never finalized within UCWEB_STAGING_TTL_SECONDS are abandoned (some engines
    leave one behind per failed CTAS): their row goes and their files are purged."""
    from datetime import timedelta

    from django.conf import settings

    from catalog.models import StagingTable

    cutoff = (now or timezone.now()) - timedelta(seconds=settings.UCWEB_STAGING_TTL_SECONDS)
    expired = 0
    with transaction.atomic():
        rows = StagingTable.objects.select_for_update(skip_locked=True).filter(
            finalized_at__isnull=True, created_at__lt=cutoff)
        for staging in rows:
            request_purge(url=staging.staging_location, reason=f"expired staging table {staging.id}")
            staging.delete()
            expired += 1
    return expired
