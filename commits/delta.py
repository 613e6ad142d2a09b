"""The legacy commit API (seed 000 `/delta/commit`, `/delta/preview/commits`, `/delta/metrics`):
a table addressed by id and location; ratification and publication are commits.ratification's,
shared with the Delta REST API (commits.delta_v1)."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from catalog import authz, locations, policy_properties, rows
from catalog.authz import Action
from catalog.choices import Privilege
from catalog.models import Principal, Table
from catalog.services.tables import replace_columns
from catalog.storage import InvalidStorageUrl, normalize
from commits import delta_wire as wire
from commits.formats import delta_log
from commits.models import CommitReport, DeltaCommit
from commits.ratification import Ratification, definition_of, is_catalog_managed, require_definition_rights
from commits.staged import read_staged_commit
from ucweb.bodies import read
from ucweb.errors import InvalidParameter, TableDoesNotExist

REQUIRED_PROPERTIES = (
    delta_log.TABLE_ID_PROPERTY,
    "delta.enableInCommitTimestamps",
    "delta.feature.catalogManaged",
    "delta.feature.inCommitTimestamp",
    "delta.feature.vacuumProtocolCheck",
)


def _same_location(table: Table, table_uri: str) -> None:
    try:
        matches = normalize(table_uri) == normalize(table.storage_location or "")
    except InvalidStorageUrl:
        matches = False
    if not matches:
        raise InvalidParameter(f"table_uri {table_uri} does not match the location of table {table.id}.")


def _table(caller: Principal, table_id: str, privilege: str, *, for_update: bool = False,
           commit=None, commits: tuple[int, int] | None = None) -> tuple[Table, authz.Access]:
    """The table and the caller's access to it, in one query (with whether `commit` is ratified
    already, for a proposal, or the ratified `commits` between two versions: catalog.rows). A
    table the caller may not see answers as one that does not exist (catalog.resolve)."""
    ratified = (commit.version, commit.file_name) if commit is not None else None
    found = rows.tables(caller, rows.BY_ID, [rows.table_id(table_id)], for_update=for_update, ratified=ratified,
                        commits=commits)
    return access_to(caller, table_id, privilege, found)


def access_to(caller: Principal, table_id: str, privilege: str, found: list[Table]) -> tuple[Table, authz.Access]:
    missing = TableDoesNotExist(f"Table {table_id} does not exist.")
    if not found:
        raise missing
    table = found[0]
    access = authz.require(caller, table, Action.SEE, access=authz.access_to_read(caller, table), missing=missing)
    access.require(access.has(privilege), f"Missing {privilege} on table {table.full_name}.")
    return table, access


# -- write commit ------------------------------------------------------------------------------------
class Proposal:
    """A commit request read and checked for itself (before any table is read): what `apply`
    then does to the table under its lock."""

    def __init__(self, body: dict, where: str = ""):
        self.request = request = read(wire.DeltaCommitRequest, body, where)
        self.commit, self.metadata = request.commit_info, request.metadata
        self.uniform = request.uniform.stored() if request.uniform is not None else None
        self.published = _published(request, body)
        if self.commit is None and self.published is None:
            raise InvalidParameter("At least one of commit_info and latest_published_version is required.")
        if self.commit is None and (self.metadata is not None or self.uniform is not None):
            raise InvalidParameter("metadata and uniform need a commit_info: a backfill carries no metadata.")

    def staged(self):
        """The staged file, read before the table is locked (it is named by the client), from the
        location the request names; under the lock that location is checked to be the table's, so
        the bytes read here are the ones being ratified (their digest is recorded with the commit)."""
        commit = self.commit
        return read_staged_commit(self.request.table_uri, commit.file_name) if commit is not None else None


def write_commit(*, caller: Principal, body: dict, by_catalog: bool = False) -> None:
    """Ratify and/or backfill. `by_catalog` is the catalog's own maintenance commit (OPTIMIZE,
    VACUUM): the same lock, version rule and audit as a client's, without the client maintenance
    policy, which reserves exactly those operations for the catalog. No API view passes it."""
    proposal = Proposal(body)
    commit = proposal.commit
    before = None
    if commit is not None:
        # A version taken already is refused before the lock (Ratification.refuse_a_taken_version),
        # after the checks the locked path makes first, and before the staged file is read.
        before, _ = _managed_table(caller, proposal.request.table_id, proposal.request.table_uri, commit=commit)
        Ratification(before, caller).refuse_a_taken_version(commit, reported=proposal.published)
    staged = proposal.staged()
    with transaction.atomic():
        table, access = _locked_table(caller, proposal, before)
        apply(caller, table, access, proposal, staged, by_catalog=by_catalog)


def apply(caller: Principal, table: Table, access: authz.Access, proposal: Proposal, staged, *,
          by_catalog: bool = False, details: dict | None = None) -> None:
    """Ratifies and/or backfills `proposal` on `table`, whose row the caller's transaction holds
    locked (the one request's row, or each table of a multi-table transaction)."""
    commit, metadata, uniform, published = proposal.commit, proposal.metadata, proposal.uniform, proposal.published
    if uniform is not None:
        uniform["metadata_location"] = locations.file_inside_table(
            uniform["metadata_location"], table.storage_location, field="uniform.iceberg.metadata_location")
    ratification = Ratification(table, caller)
    if published is not None:
        ratification.backfill(published)
    if commit is not None and not ratification.is_replay(commit):
        before = definition_of(table) if metadata is not None else None
        ratification.ratify(commit, staged, by_catalog=by_catalog)
        if metadata is not None:
            _apply_metadata(ratification, metadata, access)
        require_definition_rights(access, staged, before)
        if uniform is not None:
            table.uniform_iceberg = uniform
            ratification.change("uniform_iceberg")
    ratification.save(action="commitDelta", details={
        "version": commit.version if commit else None, "published": published, **(details or {})})


def _managed_table(caller: Principal, table_id: str, table_uri: str, *, for_update: bool = False, commit=None):
    table, access = _table(caller, table_id, Privilege.MODIFY, for_update=for_update, commit=commit)
    check_managed(table, table_uri)
    return table, access


def check_managed(table: Table, table_uri: str) -> None:
    if not is_catalog_managed(table):
        raise InvalidParameter(f"Table {table.full_name} is not a catalog-managed Delta table.")
    _same_location(table, table_uri)


def _locked_table(caller: Principal, proposal: Proposal, before: Table | None) -> tuple[Table, authz.Access]:
    """The table row, locked. A proposal of the next version of the row read without the lock
    (`before`) is locked at that version (catalog.rows.BY_ID_AT_VERSION): when the version moved
    while the lock was awaited, the proposal lost the race and is refused without the lock."""
    request, commit = proposal.request, proposal.commit
    if before is not None and commit.version == before.latest_version + 1:
        at_version = [rows.table_id(before.id), before.latest_version]
        found = rows.tables(caller, rows.BY_ID_AT_VERSION, at_version, for_update=True)
        if found:
            table, access = access_to(caller, request.table_id, Privilege.MODIFY, found)
            check_managed(table, request.table_uri)
            return table, access
        moved, _ = _managed_table(caller, request.table_id, request.table_uri, commit=commit)
        # a retry of the winner goes on, and so does a proposal with a new backfill report
        Ratification(moved, caller).refuse_a_taken_version(commit, reported=proposal.published)
    return _managed_table(caller, request.table_id, request.table_uri, for_update=True)


def _published(request: wire.DeltaCommitRequest, body: dict) -> int | None:
    """latest_published_version, or its other name latest_backfilled_version; when both are sent,
    a null latest_published_version still means none, and two numbers must agree."""
    published, backfilled = request.latest_published_version, request.latest_backfilled_version
    if published is not None and backfilled is not None and published != backfilled:
        raise InvalidParameter(f"latest_published_version {published} and latest_backfilled_version {backfilled} "
                               "differ; they name the same version.")
    return published if "latest_published_version" in body else backfilled


def _apply_metadata(ratification: Ratification, metadata: wire.DeltaMetadata, access: authz.Access) -> None:
    table = ratification.table
    if metadata.has_description:
        table.comment = metadata.description
        ratification.change("comment")
    if metadata.properties is not None:
        missing = [key for key in REQUIRED_PROPERTIES if key in table.properties and key not in metadata.properties]
        if missing:
            raise InvalidParameter(
                f"metadata.properties must keep the managed-table properties: {', '.join(missing)}."
            )
        declared = metadata.properties.get(delta_log.TABLE_ID_PROPERTY)
        if declared is not None and declared != str(table.id):
            raise InvalidParameter(f"{delta_log.TABLE_ID_PROPERTY} must stay {table.id}.")
        policy_properties.require_unchanged_or_owner(access, table.properties, metadata.properties)
        table.properties = metadata.properties
        ratification.change("properties")
    if metadata.columns is not None:
        replace_columns(table, metadata.columns)


# -- get commits --------------------------------------------------------------------------------------
def get_commits(*, caller: Principal, params: dict) -> dict:
    request = read(wire.DeltaGetCommitsParameters, params)
    start, end = request.start_version or 0, request.end_version
    if end is not None and end < start:
        raise InvalidParameter(f"end_version {end} is below start_version {start}.")
    bound = start + settings.UCWEB_DELTA_COMMITS_PAGE_SIZE - 1 if end is None else min(
        end, start + settings.UCWEB_DELTA_COMMITS_PAGE_SIZE - 1)
    table, _ = _table(caller, request.table_id, Privilege.SELECT, commits=(start, bound))  # one query
    _same_location(table, request.table_uri)
    if not is_catalog_managed(table):
        return {"commits": [], "latest_table_version": -1}
    found = getattr(table, "ratified_commits", None)
    if found is None:  # read with the row on PostgreSQL only
        found = list(DeltaCommit.objects.filter(table=table, version__gte=start, version__lte=min(
            bound, table.latest_version)).order_by("version").values(*rows.COMMIT_FIELDS))
    return {"commits": found, "latest_table_version": table.latest_version}


# -- metrics ------------------------------------------------------------------------------------------
def write_metrics(*, caller: Principal, body: dict) -> CommitReport | None:
    request = read(wire.DeltaMetricsRequest, body)
    report = request.report.commit_report if request.report is not None else None
    table, _ = _table(caller, request.table_id, Privilege.SELECT)
    _same_location(table, request.table_uri)
    if report is None:
        return None
    if not is_catalog_managed(table):
        raise InvalidParameter(f"Table {table.full_name} is not a catalog-managed Delta table.")
    if report.commit_version > table.latest_version:
        raise InvalidParameter(
            f"commit_version {report.commit_version} is above the latest version {table.latest_version}."
        )
    return CommitReport.objects.create(table=table, reported_by=caller.name, **report.model_dump())
