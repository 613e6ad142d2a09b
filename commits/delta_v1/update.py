"""updateTable of the Delta REST API: requirements and updates applied in a fixed order under
the table row's lock, in one transaction:

    (with an add-commit, before the lock: the same checks on the row read without it, a version
    taken already refused, the staged commit read) → lock the row → assert-table-uuid → replay?
    (add-commit of a version already ratified with the same file name: the whole request is a
    no-op, 200) → assert-etag → metadata actions on the
    row → managed-table contract on the result → set-latest-backfilled-version → add-commit
    (commits.ratification: next version, maintenance policy, the bound with server-side
    publication) → uniform → save, audit

A worked sequence (etag E0 after createTable, version 0):

    writer A: add-commit v1 (data only)                → 200, latest 1, etag still E0
    writer B: assert-etag E0, add-commit v1            → 409 CommitVersionConflictException
    writer B: reload, assert-etag E0, add-commit v2    → 200 (data-only commits never move the etag)
    writer C: assert-etag E0, set-columns + add-commit v3 → 200, etag E1
    writer A: assert-etag E0, set-properties + add-commit v4 → 409 UpdateRequirementConflict

The legacy `/delta/preview/commits` path runs the same Ratification under the same lock, so a
commit ratified here is listed there and the other way round.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone
from pydantic_core import to_json

from catalog import authz, policy_properties, rows
from catalog.choices import Privilege
from catalog.models import Principal, Table
from catalog.services import tables
from commits import publication
from commits.delta_v1.tables import COMMIT_KEYS, describe, etag, require, require_delta, table_for
from commits.delta_v1.update_wire import LOG_REPRESENTED, DeltaUpdates, DeltaUpdateTableRequest
from commits.delta_v1.wire import (
    CommitVersionConflict, RequirementFailed, check_contract, millis, parse_columns, parse_uniform, render_columns,
)
from commits.formats import delta_protocol as dp
from commits.models import DeltaCommit
from commits.ratification import Ratification, definition_of, is_catalog_managed, require_definition_rights
from commits.staged import StagedCommit, read_staged_commit
from ucweb.bodies import read
from ucweb.errors import AlreadyExists, InvalidParameter


def _apply_metadata(table: Table, update: DeltaUpdates, access: authz.Access, *, version: int,
                    timestamp: int) -> list[str]:
    properties = dict(table.properties or {})
    changed = []
    if update.set_properties:
        properties.update(update.set_properties.updates)
    for key in update.remove_properties.removals if update.remove_properties else []:
        properties.pop(key, None)
    if update.protocol is not None:
        dp.set_protocol(properties, update.protocol)
    for domain, value in (update.set_domain_metadata.updates.stored() if update.set_domain_metadata else {}).items():
        properties[dp.DOMAINS[domain]] = value
    for domain in update.remove_domain_metadata.domains if update.remove_domain_metadata else []:
        properties.pop(dp.DOMAINS[domain], None)
    if update.set_columns or update.set_partition_columns:
        columns_now, partitions_now = render_columns(table)
        partitions = update.set_partition_columns.partition_columns if update.set_partition_columns else partitions_now
        columns = parse_columns(update.set_columns.columns if update.set_columns else columns_now,
                                partitions, field="set-columns.columns")
        tables.replace_columns(table, columns)
        rows.forget_columns(table)
    if update.set_table_comment:
        table.comment = update.set_table_comment.comment
        changed.append("comment")
    policy_properties.require_unchanged_or_owner(access, table.properties or {}, properties)
    properties[dp.LAST_UPDATE_VERSION] = str(version)
    properties[dp.LAST_COMMIT_TIMESTAMP] = str(timestamp)
    table.properties = properties
    return changed + ["properties"]


def _check_backfill(table: Table, version: int) -> None:
    """Never forget a ratified commit whose `_delta_log/<v>.json` was not seen: each newly
    reported version must be published (the server publishes it from the staged file when it
    can); otherwise the report is refused and the catalog keeps the commits."""
    start = table.latest_published_version or 0
    if version <= start or version > table.latest_version:
        return  # a no-op, or refused by the ratification with its own message
    done = publication.publish_in_order(table, publication.unpublished(table, until=version), strict=True)
    if done < version:
        missing = done + 1
        file_name = DeltaCommit.objects.filter(table=table, version=missing).values_list("file_name", flat=True).first()
        raise InvalidParameter(
            f"Version {missing} of table {table.full_name} is not published: "
            f"{publication.log_file(table.storage_location, missing)} is missing or differs from "
            f"the ratified commit {file_name}, and the server cannot publish it. The catalog keeps "
            "its record of it."
        )


def _ratified_once(table: Table, txn_id: str | None, version: int) -> None:
    """A client that lost the response to an accepted add-commit may rebuild its transaction on
    the next version (delta-io/delta#7700). The same commitInfo.txnId is the same data: refused."""
    if txn_id is None:
        return
    earlier = (DeltaCommit.objects.filter(table=table, txn_id=txn_id).exclude(version=version)
               .values_list("version", flat=True).first())
    if earlier is not None:
        raise CommitVersionConflict(
            f"Transaction {txn_id} was ratified already as version {earlier} of table {table.full_name}; "
            "it is not ratified again."
        )


def _check_uniform(table: Table, update: DeltaUpdates) -> dict | None:
    uniform = parse_uniform(update.add_commit.uniform, location=table.storage_location, field="add-commit.uniform")
    if dp.uniform_enabled(table.properties or {}) != (uniform is not None):
        raise InvalidParameter("add-commit.uniform is required exactly when the table's properties after "
                               f"this request enable UniForm ({dp.UNIFORM_PROPERTY} includes iceberg).")
    stored = table.uniform_iceberg or {}
    base = (uniform or {}).get("base_converted_delta_version")
    if base is not None and base != stored.get("converted_delta_version"):
        raise RequirementFailed(
            f"uniform.iceberg.base-converted-delta-version {base} is not the stored converted-delta-version "
            f"{stored.get('converted_delta_version')}.")
    return uniform


def _check_actions(table: Table, update: DeltaUpdates, asserted: dict) -> bool:
    """The requirements and the actions' fit to the table; returns whether it is catalog-managed."""
    if str(table.id) != asserted["assert-table-uuid"]:
        raise RequirementFailed(f"assert-table-uuid failed: table {table.full_name} is {table.id}.")
    managed = is_catalog_managed(table)
    if not managed and (update.commit is not None or update.backfilled is not None):
        raise InvalidParameter(f"Table {table.full_name} is not a catalog-managed table: add-commit and "
                               "set-latest-backfilled-version are for managed tables only.")
    if managed and update.snapshot is not None:
        raise InvalidParameter("update-metadata-snapshot-version is for external tables only.")
    if managed and update.commit is None:
        lone = [a for a in LOG_REPRESENTED if a in update.names]
        if lone:
            raise InvalidParameter(f"{', '.join(lone)} must travel with the add-commit whose staged commit "
                                   "writes the same change to the Delta log.")
    return managed


def _check_etag(table: Table, asserted: dict) -> None:
    if "assert-etag" in asserted and asserted["assert-etag"] != etag(table):
        raise RequirementFailed(f"assert-etag failed: the metadata of table {table.full_name} changed.")


def _before_the_lock(caller: Principal, catalog: str, schema: str, name: str, update: DeltaUpdates,
                     asserted: dict) -> tuple[StagedCommit, Table | None]:
    """An add-commit's work that the row lock does not protect, done before it is taken: on the
    row read without the lock, the checks the locked path makes first, then a version taken
    already is refused (Ratification.refuse_a_taken_version; for a commit that changes nothing
    else, a backfill report already known included, whose answer under the lock would be the same
    409), then the staged commit is read from storage (its location never changes), so no storage
    read happens under the lock. Returns the staged commit, and the row read when the commit is its
    next version and changes nothing else (`_locked_table` locks it at that version)."""
    commit = update.commit
    table = table_for(caller, catalog, schema, name, ratified=(commit.version, commit.file_name))
    require(caller, table, Privilege.MODIFY)
    require_delta(table)
    _check_actions(table, update, asserted)
    ratification = Ratification(table, caller)
    refusable = not update.changes_metadata and ratification.knows_published(update.backfilled)
    if refusable and not ratification.is_replay(update.commit):
        _check_etag(table, asserted)
        _check_uniform(table, update)
        _refuse_a_taken_version(ratification, update.commit)
    staged = read_staged_commit(table.storage_location, update.commit.file_name)
    at_next_version = refusable and update.commit.version == (table.latest_version or 0) + 1
    return staged, table if at_next_version and table.latest_version is not None else None


def _refuse_a_taken_version(ratification: Ratification, commit) -> None:
    try:
        ratification.refuse_a_taken_version(commit)
    except AlreadyExists as exc:
        raise CommitVersionConflict(exc.message) from None


def _locked_table(caller: Principal, catalog: str, schema: str, name: str, update: DeltaUpdates,
                  before: Table | None) -> Table:
    """The table row, locked, with its unpublished commits. An add-commit of the next version of
    the row read without the lock (`before`) locks the row at that version
    (catalog.rows.BY_ID_AT_VERSION): when the version moved while the lock was awaited, the
    proposal lost the race and is refused without the lock."""
    if before is not None:
        # With its columns: the answer's. Read in the statement's snapshot, which may predate the
        # lock's wait, they are still the row's: a catalog-managed table's columns change only
        # with its version (a commit's metadata, under this lock), and a row whose version moved
        # is not returned.
        at_version = [rows.table_id(before.id), before.latest_version]
        found = rows.tables(caller, rows.BY_ID_AT_VERSION, at_version, for_update=True, pending=COMMIT_KEYS,
                            columns=True)
        if found:
            return found[0]
        commit = update.commit
        moved = table_for(caller, catalog, schema, name, ratified=(commit.version, commit.file_name))
        _refuse_a_taken_version(Ratification(moved, caller), commit)
    return table_for(caller, catalog, schema, name, for_update=True, pending=True)


def update_table(*, caller: Principal, catalog: str, schema: str, name: str, body: dict) -> dict:
    request = read(DeltaUpdateTableRequest, body)
    asserted, update = request.requirements, request.updates
    staged, before = (_before_the_lock(caller, catalog, schema, name, update, asserted) if update.commit is not None
                      else (None, None))
    with transaction.atomic():
        table = _locked_table(caller, catalog, schema, name, update, before)
        apply(caller, table, request, staged)
    return _after(table)


def apply(caller: Principal, table: Table, request: DeltaUpdateTableRequest, staged: StagedCommit | None, *,
          details: dict | None = None) -> None:
    """The requirements and updates of `request` on `table`, whose row (read with its pending
    commits) the caller's transaction holds locked: the one request's row, or each table of a
    multi-table transaction. A replay of an accepted add-commit changes nothing."""
    asserted, update = request.requirements, request.updates
    access = require(caller, table, Privilege.MODIFY)
    require_delta(table)
    managed = _check_actions(table, update, asserted)
    ratification = Ratification(table, caller)
    if update.commit is not None and ratification.is_replay(update.commit):
        return  # an add-commit that was accepted already: the whole request is a no-op
    _check_etag(table, asserted)
    ratification.touch()
    version = update.commit.version if update.commit else (table.latest_version or 0)
    timestamp = update.commit.timestamp if update.commit else millis(timezone.now())
    if update.snapshot is not None:
        version, timestamp = update.snapshot
    before_definition = definition_of(table) if update.changes_metadata else None
    if update.changes_metadata:
        projected = dp.MIN_READER in (table.properties or {})
        ratification.change(*_apply_metadata(table, update, access, version=version, timestamp=timestamp))
        if managed and (projected or update.protocol is not None):
            check_contract(table.id, table.properties, update.protocol)
    elif update.snapshot is not None:
        table.properties = {**(table.properties or {}), dp.LAST_UPDATE_VERSION: str(version),
                            dp.LAST_COMMIT_TIMESTAMP: str(timestamp)}
        ratification.change("properties")
    require_definition_rights(access, staged, before_definition)
    uniform = _check_uniform(table, update) if update.commit is not None else None
    if update.backfilled is not None:
        _check_backfill(table, update.backfilled)
        ratification.backfill(update.backfilled)
    if update.commit is not None:
        _ratified_once(table, staged.txn_id, update.commit.version)
        try:
            ratification.ratify(update.commit, staged, txn_id=staged.txn_id)
        except AlreadyExists as exc:
            raise CommitVersionConflict(exc.message) from None
        if uniform is not None:
            table.uniform_iceberg = uniform
            ratification.change("uniform_iceberg")
    ratification.save(action="updateDeltaTable", details={
        "actions": sorted(update.names), "version": update.commit.version if update.commit else None,
        "backfilled": update.backfilled, **(details or {})})
    table.pending = _pending_after(table, ratification)


def _pending_after(table: Table, ratification: Ratification) -> rows.PendingCommits | None:
    """The commits after latest_published_version once `ratification` is saved: the commits read
    with the row and the ones it ratified, when the row was read with them and publication did not
    move since (else None: the answer reads them)."""
    before = getattr(table, "pending", None)
    if before is None or table.latest_published_version != ratification.published_before:
        return None
    new = [to_json({key: getattr(row, field) for key, field in COMMIT_KEYS}).decode()
           for row in reversed(ratification.rows) if isinstance(row, DeltaCommit)]
    if not new:
        return before
    rest = "]" if before.count == 0 else "," + before.text[1:]  # the database's array: "[" first
    return rows.PendingCommits("[" + ",".join(new) + rest, before.count + len(new))


def _after(table: Table) -> dict:
    """The loadTable answer for a row already read (and, after an update, saved)."""
    if not rows.has_columns(table):
        rows.read_columns(table)
    return describe(table)
