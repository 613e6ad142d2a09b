"""Publish-verify: a ratified Delta commit is only safe to forget once `_delta_log/<v>.json`
holds exactly its bytes. For each table with ratified, unpublished commits older than
UCWEB_PUBLISH_VERIFY_AFTER_SECONDS, in version order:

- `<v>.json` exists and holds the ratified bytes (the SHA-256 recorded at ratification; for
  commits ratified before digests were recorded, the staged file or its size): it is published;
- `<v>.json` is missing and the staged file still holds the ratified bytes: the server publishes
  those bytes (put-if-absent); a staged file rewritten after ratification is never published;
- otherwise a TableAlert is raised and nothing past this version is marked published.

The storage is read without holding any lock; the result is applied under the table row's lock
only if the table did not move meanwhile, so a client's own backfill always wins the race."""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from catalog.models import Table
from catalog.storage import StorageError, storage_for
from commits.models import DeltaCommit
from commits.publication import log_file, read_if_present, staged_file
from maintenance.models import TableAlert

logger = logging.getLogger(__name__)


def _is_ratified(commit: DeltaCommit, data: bytes, staged: bytes | None) -> bool:
    """Whether `data` are the bytes that were ratified: their SHA-256 recorded at ratification;
    for commits ratified before digests were recorded, the staged file's bytes (or, when it is
    gone, its recorded size)."""
    if commit.file_sha256:
        return hashlib.sha256(data).hexdigest() == commit.file_sha256
    return data == staged if staged is not None else len(data) == commit.file_size


def _check(table: Table, commit: DeltaCommit) -> tuple[bool, str | None, str]:
    """(published?, alert kind or None, message) for one ratified commit."""
    published_url = log_file(table.storage_location, commit.version)
    staged_url = staged_file(table.storage_location, commit.file_name)
    published = read_if_present(published_url)
    staged = read_if_present(staged_url)
    if published is None and staged is not None:
        if commit.file_sha256 and not _is_ratified(commit, staged, None):
            # Rewritten after ratification: the catalog never publishes it, whatever it says now.
            return False, TableAlert.Kind.PUBLISHED_MISMATCH, (
                f"Version {commit.version}: {staged_url} is no longer the file that was ratified.")
        # The bytes just checked are the ones written: a rewrite in between changes nothing.
        storage_for(published_url).put_if_absent(published_url, staged)
        published = read_if_present(published_url)
    if published is None:
        return False, TableAlert.Kind.COMMIT_MISSING, (
            f"Version {commit.version}: neither {staged_url} nor {published_url} exists.")
    if not _is_ratified(commit, published, staged):
        return False, TableAlert.Kind.PUBLISHED_MISMATCH, (
            f"Version {commit.version}: {published_url} is not the ratified commit {commit.file_name}.")
    return True, None, ""


def _raise_alert(table: Table, version: int, kind: str, message: str) -> None:
    try:
        with transaction.atomic():
            TableAlert.objects.create(table=table, version=version, kind=kind, message=message)
    except IntegrityError:
        pass  # the same alert is open already
    logger.warning("table %s: %s", table.id, message)


def verify_table(table_id) -> int:
    """Returns how many versions it marked published."""
    table = Table.objects.filter(id=table_id).first()
    if table is None or table.latest_version is None:
        return 0
    seen_published = table.latest_published_version or 0
    pending = list(DeltaCommit.objects.filter(
        table=table, version__gt=seen_published, published_at__isnull=True).order_by("version"))
    verified = seen_published
    for commit in pending:
        if commit.version != verified + 1:
            break
        try:
            ok, kind, message = _check(table, commit)
        except StorageError as exc:
            logger.warning("publish-verify of %s v%s: %s", table.id, commit.version, exc)
            break
        if not ok:
            _raise_alert(table, commit.version, kind, message)
            break
        verified = commit.version
    if verified == seen_published:
        return 0
    with transaction.atomic():
        locked = Table.objects.select_for_update().filter(id=table.id).first()
        if locked is None or (locked.latest_published_version or 0) != seen_published:
            return 0  # the table moved (a client backfilled, or it was dropped): try again later
        DeltaCommit.objects.filter(table=locked, version__lte=verified, published_at__isnull=True).update(
            published_at=timezone.now())
        locked.latest_published_version = verified
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
