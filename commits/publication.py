"""Publishing ratified Delta commits: the one loop that both the request that needs it and the
worker's publish-verify (maintenance.publish) run.

A table may hold at most UCWEB_MAX_UNPUBLISHED_COMMITS ratified commits that are not published.
Clients are expected to publish (copy `_staged_commits/<v>.<uuid>.json` to `_delta_log/<v>.json`)
and report it; the worker publishes for those who do not. Neither may be fast enough: when a
ratification would pass the bound, the server publishes the oldest ratified commits itself, in
the same request and under the same row lock, before it decides. A worked sequence with a bound
of 4 (half the bound: 2 commits per batch):

    latest 4, published 0, staged files 1..4 exist
    POST commit 5 → 4 unpublished = bound → publish 1 and 2 here (put-if-absent from the staged
                    file, then the bytes are compared) → published 2 → 5 is ratified
    staged file of 3 deleted by someone, 3.json absent → publishing stops at 3 → 429

So a client that never publishes never sees the 429 while the staged files exist, whatever the
worker's speed; the 429 remains for a table whose staged commits are gone (publication is then
impossible and the client must repair the log).

Nothing here forgets a commit: a version counts as published only once `_delta_log/<v>.json`
was read back and holds exactly the ratified bytes (the SHA-256 recorded at ratification; for
commits ratified before digests were recorded, the staged file's bytes or, when it is gone, the
recorded size). A staged file rewritten after ratification is never published.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Callable, Iterable

from django.utils import timezone

from catalog.models import Table
from catalog.storage import StorageError, StorageObjectNotFound, StorageOutsideRoot, join, storage_for, storage_within
from commits.formats import delta_log
from commits.models import DeltaCommit

logger = logging.getLogger(__name__)
# Why a version could not be published (the worker raises a TableAlert of this kind).
PUBLISHED_MISMATCH, COMMIT_MISSING = "PUBLISHED_MISMATCH", "COMMIT_MISSING"
COMMIT_FIELDS = ("id", "version", "file_name", "file_size", "file_sha256")


def log_file(location: str, version: int) -> str:
    return join(location, delta_log.commit_path(version))


def staged_file(location: str, file_name: str) -> str:
    return join(location, delta_log.staged_path(file_name))


def read_if_present(url: str, storage=None) -> bytes | None:
    try:
        return (storage or storage_for(url)).read(url)
    except StorageObjectNotFound:
        return None


def holds_ratified_bytes(commit: DeltaCommit, data: bytes, staged: bytes | None = None) -> bool:
    """Whether `data` is what was ratified: the SHA-256 recorded at ratification; for commits
    ratified before digests were recorded, the staged bytes when known, else the size."""
    if commit.file_sha256:
        return hashlib.sha256(data).hexdigest() == commit.file_sha256
    return data == staged if staged is not None else len(data) == commit.file_size


@dataclass(frozen=True)
class Failure:
    kind: str
    message: str


def publish_one(location: str, commit: DeltaCommit) -> Failure | None:
    """Makes sure `_delta_log/<v>.json` is this ratified commit; None when it is (now or before),
    else why not. Never overwrites an existing log file."""
    published_url, staged_url = log_file(location, commit.version), staged_file(location, commit.file_name)
    # Confined to the table: a log or staged file replaced by a symbolic link is neither read nor
    # written through.
    storage = storage_within(location)
    try:
        published = read_if_present(published_url, storage)
        staged = read_if_present(staged_url, storage) if published is None or not commit.file_sha256 else None
        if published is None and staged is not None:
            if not holds_ratified_bytes(commit, staged):
                return Failure(PUBLISHED_MISMATCH, f"Version {commit.version}: {staged_url} is no longer the file "
                                                   "that was ratified.")
            storage.put_if_absent(published_url, staged)  # the bytes just checked
            published = read_if_present(published_url, storage)
    except StorageOutsideRoot as exc:
        return Failure(PUBLISHED_MISMATCH, f"Version {commit.version}: its files lead outside the table's location "
                                           f"({exc}); nothing is published.")
    if published is None:
        return Failure(COMMIT_MISSING, f"Version {commit.version}: neither {staged_url} nor {published_url} exists.")
    if not holds_ratified_bytes(commit, published, staged):
        return Failure(PUBLISHED_MISMATCH, f"Version {commit.version}: {published_url} is not the ratified commit "
                                           f"{commit.file_name}.")
    return None


def publish_in_order(table: Table, commits: Iterable[DeltaCommit], *, strict: bool = False,
                     on_failure: Callable[[DeltaCommit, Failure], None] | None = None) -> int:
    """Publishes `commits` (ratified, in version order) from the version after the table's
    latest_published_version on, stopping at a gap or at the first that cannot be published
    (`on_failure` hears why; a storage error stops the loop too, unless `strict` lets it
    through). Returns the last version that is published. Reads and writes storage only: the
    caller records the progress (`mark_published`)."""
    done = table.latest_published_version or 0
    for commit in commits:
        if commit.version != done + 1:
            break
        try:
            failure = publish_one(table.storage_location, commit)
        except StorageError as exc:
            if strict:
                raise
            logger.warning("publication of %s v%s: %s", table.id, commit.version, exc)
            break
        if failure is not None:
            if on_failure is not None:
                on_failure(commit, failure)
            break
        done = commit.version
    return done


def unpublished(table: Table, *, until: int | None = None):
    """The ratified commits after the table's latest_published_version, oldest first."""
    start = table.latest_published_version or 0
    rows = DeltaCommit.objects.filter(table=table, version__gt=start).order_by("version").only(*COMMIT_FIELDS)
    return rows if until is None else rows.filter(version__lte=until)


def mark_published(table: Table, version: int) -> None:
    """Records on a locked row (the caller saves `latest_published_version`) that every version up
    to `version` is published."""
    DeltaCommit.objects.filter(table=table, version__lte=version, published_at__isnull=True).update(
        published_at=timezone.now())
    table.latest_published_version = version


def publish_oldest(table: Table, *, limit: int) -> int:
    """Publishes up to `limit` of the oldest unpublished commits of a table whose row the caller
    holds locked; returns how many versions became published."""
    start = table.latest_published_version or 0
    done = publish_in_order(table, unpublished(table, until=start + limit))
    if done == start:
        return 0
    mark_published(table, done)
    return done - start
