"""Publishing ratified Delta commits from the request that needs it.

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
was read back and holds exactly the staged bytes (or, when the staged file is gone, the recorded
size).
"""

from __future__ import annotations

import hashlib
import logging

from django.utils import timezone

from catalog.models import Table
from catalog.storage import StorageError, StorageObjectNotFound, join, storage_for
from commits.models import DeltaCommit

logger = logging.getLogger(__name__)


def log_file(location: str, version: int) -> str:
    return join(location, "_delta_log", f"{version:020d}.json")


def staged_file(location: str, file_name: str) -> str:
    return join(location, "_delta_log", "_staged_commits", file_name)


def read_if_present(url: str) -> bytes | None:
    try:
        return storage_for(url).read(url)
    except StorageObjectNotFound:
        return None


def holds_ratified_bytes(commit: DeltaCommit, data: bytes) -> bool:
    """Whether `data` is what was ratified: the SHA-256 recorded at ratification (the size for
    commits ratified before digests were recorded)."""
    if commit.file_sha256:
        return hashlib.sha256(data).hexdigest() == commit.file_sha256
    return len(data) == commit.file_size


def publish_one(location: str, commit: DeltaCommit) -> bool:
    """Makes sure `_delta_log/<v>.json` is this ratified commit; True when it is (now or before).
    Never overwrites an existing log file, and never publishes a staged file rewritten after it
    was ratified."""
    published_url = log_file(location, commit.version)
    published = read_if_present(published_url)
    if published is None:
        staged = read_if_present(staged_file(location, commit.file_name))
        if staged is None or not holds_ratified_bytes(commit, staged):
            return False
        storage_for(published_url).put_if_absent(published_url, staged)  # the bytes just checked
        published = read_if_present(published_url)
        if published is None:
            return False
    return holds_ratified_bytes(commit, published)


def publish_oldest(table: Table, *, limit: int) -> int:
    """Publishes up to `limit` of the oldest ratified, unpublished commits of a table whose row
    the caller holds locked, in version order, stopping at the first that cannot be published.
    Records the progress on the row (the caller saves `latest_published_version`); returns how
    many versions became published."""
    start = table.latest_published_version or 0
    pending = list(
        DeltaCommit.objects.filter(table=table, version__gt=start, version__lte=start + limit)
        .order_by("version")
        .only("id", "version", "file_name", "file_size", "file_sha256")
    )
    done = start
    for commit in pending:
        if commit.version != done + 1:
            break
        try:
            ok = publish_one(table.storage_location, commit)
        except StorageError as exc:
            logger.warning("inline publication of %s v%s: %s", table.id, commit.version, exc)
            break
        if not ok:
            break
        done = commit.version
    if done == start:
        return 0
    DeltaCommit.objects.filter(table=table, version__gt=start, version__lte=done, published_at__isnull=True).update(
        published_at=timezone.now()
    )
    table.latest_published_version = done
    return done - start
