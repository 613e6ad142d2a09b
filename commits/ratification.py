"""How a catalog-managed Delta table moves from version v-1 to v: the one ratification both
commit APIs (`/delta/preview/commits` in commits.delta, `/delta/v1` in commits.delta_v1) run.

A worked sequence. Table T is created at version 0 (its `0.json` is published by the client
before POST /tables), so latest_version = 0 and latest_published_version = 0.

    client A: write _staged_commits/1.<uuid-a>.json, POST commit {version 1, file 1.<uuid-a>}
              → row lock on T; 1 == 0 + 1 → ratified; latest_version = 1
    client B: write _staged_commits/1.<uuid-b>.json, POST commit {version 1, file 1.<uuid-b>}
              → row lock (waits for A); 1 <= latest 1 and the file differs → 409 ALREADY_EXISTS;
              B rebuilds its snapshot from GET commits and retries as version 2
    client A: lost the response, sends {version 1, file 1.<uuid-a>} again → same file → 200
    client A: copies 1.<uuid-a>.json to _delta_log/00000000000000000001.json, then
              POST commit {latest_published_version: 1} → commit 1 marked published
    client C: POST commit {version 5} while latest is 2 → 400 (a gap is never ratified)

A table registered before its version 0 existed (Sail creates the table, then writes 0.json)
starts with latest_published_version = None. Its first backfill report or its first commit makes
the catalog read and check `_delta_log/00000000000000000000.json` (under the same lock); a missing
or non-catalog-managed version 0 is a 400 and nothing is ratified on top of it.

Every decision happens in one transaction that holds the table row's lock
(`select_for_update`), so for each version exactly one proposal wins and no version is skipped.
The rows a request writes (the ratified commit, the table row, the audit event) go to the
database together at the end, in one statement (commits.one_statement). Ratified commits are
kept after publication (the table's history; some clients ask for a single published version
again) until `UCWEB_DELTA_COMMIT_RETENTION` trims the oldest published ones.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from catalog import authz, schema_contract
from catalog.choices import TableType
from catalog.models import Column, Principal, Table
from catalog.services import audit
from catalog.signals import publication_due
from catalog.storage import StorageError, storage_within
from commits import managed_tables, publication
from commits.formats.definition import DeltaDefinition, delta_changes, staged_delta_changes, staged_properties
from commits.formats.schema_evolution import delta_breaking_changes, delta_schema_fields
from commits.models import DeltaCommit
from commits.one_statement import save_with
from commits.staged import StagedCommit, check_maintenance_policy
from ucweb import metrics
from ucweb.errors import AlreadyExists, InvalidParameter, ResourceExhausted


def _recorded(declared: str | None) -> str:
    """What a commit row records of a commitInfo field: "" when it was not declared."""
    return (declared or "")[:255]


def _taken(table: Table, commit) -> AlreadyExists:
    """The refusal of a proposal of a version already taken, counted as a conflict (ucweb.metrics)."""
    metrics.commit_outcome("delta", "conflict")
    return AlreadyExists(f"Version {commit.version} of table {table.full_name} is already committed.")


def definition_of(table: Table) -> DeltaDefinition:
    """The table's definition as stored now (its columns read afresh: a request may have just
    replaced them)."""
    return DeltaDefinition.of(Column.objects.filter(table=table), table.properties)


def require_definition_rights(access: authz.Access, staged: StagedCommit | None,
                              before: DeltaDefinition | None = None) -> None:
    """Refuses a commit that changes the table's definition unless the caller may alter it (403,
    authz.require_alter), and one whose schema change the table's schema contract forbids, whoever
    the caller (400, catalog.schema_contract). Both look at what the request itself changed
    (`before`: the definition before the request's metadata was applied to the row) and at what
    the staged file's metaData or protocol action would change (a change hidden in a commit that
    adds files). Called in the transaction that applied the request, so a refusal leaves
    everything as it was. A data-only commit costs nothing here: the definition is read only when
    something could change it."""
    hidden = staged is not None and (staged.metadata is not None or staged.protocol is not None)
    if not hidden and before is None:
        return
    table = access.chain[0]
    now = definition_of(table)
    changes = delta_changes(before, now) if before is not None else []
    if hidden:
        changes += [change for change in staged_delta_changes(before or now, staged.metadata, staged.protocol)
                    if change not in changes]
    authz.require_alter(access, changes)
    _keep_the_contract(table, before or now, now, staged.metadata if staged is not None else None)


def _keep_the_contract(table: Table, before: DeltaDefinition, now: DeltaDefinition, metadata: dict | None) -> None:
    """The schema contract, held before the commit or set by it, against the schemas the commit
    leads to: the catalog's (`now`, after the request's metadata) and the staged metaData's."""
    after = now.properties
    if isinstance(metadata, dict):
        after = staged_properties(now, metadata)

    def breaking() -> list[str]:
        found = delta_breaking_changes(before.schema, now.schema)
        staged_fields = delta_schema_fields(metadata.get("schemaString")) if isinstance(metadata, dict) else None
        if staged_fields is not None:
            found += [change for change in delta_breaking_changes(before.schema, staged_fields) if change not in found]
        return found

    schema_contract.enforce(table, before.properties, after, breaking, applies=is_catalog_managed(table),
                            table_format="delta")


def is_catalog_managed(table: Table) -> bool:
    return table.table_type == TableType.MANAGED and table.latest_version is not None


class Ratification:
    """What one request changes on a table row it holds locked: the fields of the row, and the
    new rows (the ratified commit), all written by `save` with the audit event."""

    def __init__(self, table: Table, caller: Principal):
        self.table, self.caller = table, caller
        self.changed: list[str] = []
        self.rows: list[Model] = []
        self.published_before = table.latest_published_version

    def change(self, *fields: str) -> None:
        self.changed += fields

    def touch(self) -> None:
        """The table changed at the caller's hand (a backfill report alone does not touch it)."""
        self.table.updated_at = timezone.now()
        self.table.updated_by = self.caller.name
        self.change("updated_at", "updated_by")

    # -- backfill ---------------------------------------------------------------------------
    def backfill(self, published: int) -> None:
        table = self.table
        if published > table.latest_version:
            raise InvalidParameter(
                f"latest_published_version {published} is above the latest version {table.latest_version}."
            )
        self._confirm_version_zero()
        if published <= table.latest_published_version:
            return  # already known; backfill reports may arrive late or twice
        publication.mark_published(table, published)
        self._trim_history()
        self.change("latest_published_version")

    # -- ratify -----------------------------------------------------------------------------
    def is_replay(self, commit) -> bool:
        """A proposal of a version already ratified for the same file: a retry, answered 200 with
        nothing changed. (Any other proposal of a taken version is refused by `ratify`.)"""
        if commit.version > self.table.latest_version:
            return False
        known = getattr(self.table, "ratified", None)  # read with the row (catalog.rows)
        if known is not None and known[:2] == (commit.version, commit.file_name):
            return known[2]
        return DeltaCommit.objects.filter(table=self.table, version=commit.version,
                                          file_name=commit.file_name).exists()

    def knows_published(self, reported: int | None) -> bool:
        """Whether a backfill report (`None`: none) names a version the row knows published
        already: the locked path does nothing with such a report (latest_published_version only
        grows), where a newer one may make it publish, or refuse the report first."""
        published = self.table.latest_published_version
        return reported is None or (published is not None and reported <= published)

    def refuse_a_taken_version(self, commit, *, reported: int | None = None) -> None:
        """Before the row lock, on the row read without it: latest_version only grows, so a
        proposal at or below the latest version read is taken for good, and is refused (409) with
        no lock taken and nothing written. A retry of a ratified commit (`is_replay`) goes on to
        the lock, which answers it as before, and so does a proposal whose backfill report
        (`reported`: delta-spark sends one with every commit) is news (`knows_published`). Losers
        of a race on a hot table thus cost about a read, and never queue on the lock behind its
        winner."""
        if not self.knows_published(reported):
            return
        if commit.version <= self.table.latest_version and not self.is_replay(commit):
            raise _taken(self.table, commit)

    def ratify(self, commit, staged: StagedCommit, *, txn_id: str | None = None, by_catalog: bool = False) -> None:
        """Ratifies `commit` as the next version (the caller asked `is_replay` first). `by_catalog`:
        the catalog's own maintenance commit, which the client maintenance policy does not apply to
        (it reserves exactly those operations for the catalog)."""
        table = self.table
        if commit.version <= table.latest_version:
            raise _taken(table, commit)
        if commit.version != table.latest_version + 1:
            raise InvalidParameter(
                f"Commit version {commit.version} is not the next version of table {table.full_name} "
                f"(expected {table.latest_version + 1})."
            )
        self._confirm_version_zero()
        staged.require(declared_size=commit.file_size)
        if not by_catalog:
            check_maintenance_policy(table, staged.operation)
        self._stay_under_the_bound()
        self.rows.append(DeltaCommit(
            table=table, version=commit.version, timestamp=commit.timestamp, file_name=commit.file_name,
            file_size=commit.file_size, file_modification_timestamp=commit.file_modification_timestamp,
            file_sha256=staged.sha256, ratified_by=self.caller.name, txn_id=txn_id,
            operation=_recorded(staged.operation), engine_info=_recorded(staged.engine_info),
        ))
        table.latest_version = commit.version
        self.touch()
        self.change("latest_version")
        self._nudge_publication()
        transaction.on_commit(lambda: metrics.commit_outcome("delta", "ratified"))

    def save(self, *, action: str, details: dict) -> None:
        """Writes what changed, with its audit event; nothing when nothing changed (a replay)."""
        if not self.changed:
            return
        table = self.table
        events = audit.rows(principal=self.caller.name, action=action, securable_type="table",
                            securable_name=table.full_name, securable_id=table.id, details=details)
        save_with(table, self.changed, [*self.rows, *events])

    # -- the rules around it ----------------------------------------------------------------
    def _confirm_version_zero(self) -> None:
        """For a table registered before its version 0 was written: check that version 0 is there
        now and describes this catalog-managed table, then count it as published."""
        table = self.table
        if table.latest_published_version is not None:
            return
        try:
            managed_tables.check_version_zero(table.storage_location, table.id)
        except InvalidParameter as exc:
            raise InvalidParameter(f"Version 0 of table {table.full_name} is not usable: {exc.message}") from None
        table.latest_published_version = 0
        self.change("latest_published_version")

    def _stay_under_the_bound(self) -> None:
        """At the bound of unpublished commits the server publishes the oldest ones itself (see
        commits.publication), so the bound never depends on a worker's speed; 429 only when none of
        them can be published (the staged file is gone and `_delta_log/<v>.json` is missing)."""
        table = self.table
        bound = settings.UCWEB_MAX_UNPUBLISHED_COMMITS
        unpublished = table.latest_version - table.latest_published_version
        if unpublished < bound:
            return
        publication.publish_oldest(table, limit=max(1, unpublished - bound // 2))
        unpublished = table.latest_version - table.latest_published_version
        if unpublished >= bound:
            metrics.commit_outcome("delta", "throttled")
            raise ResourceExhausted(
                f"Table {table.full_name} has {unpublished} ratified commits that are not published, and "
                f"version {table.latest_published_version + 1} cannot be published from its staged file; "
                f"publish it (latest_published_version) before committing more."
            )
        self._trim_history()
        self.change("latest_published_version")

    def _trim_history(self) -> None:
        table = self.table
        keep = settings.UCWEB_DELTA_COMMIT_RETENTION
        if keep is None:
            return
        cutoff = table.latest_published_version - keep
        # Never forget a commit whose `_delta_log/<v>.json` was not seen (a backfill report is the
        # client's word): the record goes only once the published file is there. Bounded per call.
        candidates = DeltaCommit.objects.filter(table=table, version__lte=cutoff, published_at__isnull=False)
        seen = None
        try:
            storage = storage_within(table.storage_location)
        except StorageError:
            return
        for version in candidates.order_by("version").values_list("version", flat=True)[:100]:
            url = publication.log_file(table.storage_location, version)
            try:
                if not storage.exists(url):
                    break
            except StorageError:
                break
            seen = version
        if seen is not None:
            candidates.filter(version__lte=seen).delete()

    def _nudge_publication(self) -> None:
        """A table whose unpublished commits reach half the limit gets publish-verify now (after
        the commit, in the background), so a client that never publishes does not run into the 429."""
        table = self.table
        unpublished = table.latest_version - (table.latest_published_version or 0)
        if unpublished >= max(1, settings.UCWEB_MAX_UNPUBLISHED_COMMITS // 2):
            table_id = str(table.id)
            transaction.on_commit(lambda: publication_due.send(sender=Table, table_id=table_id))
