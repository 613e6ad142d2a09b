"""How a catalog-managed Delta table moves from version v-1 to v.

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

    Sail:     POST /tables (columns, no 0.json yet) → latest 0, published None
              writes _delta_log/00000000000000000000.json
              POST commit {version 1, latest_backfilled_version 0}
              → 0.json checked → published 0; 1 == 0 + 1 → ratified; latest_version = 1

Every decision happens in one transaction that holds the table row's lock
(`select_for_update`), so for each version exactly one proposal wins and no version is skipped.
Ratified commits are kept after publication (the table's history; some clients ask for a single
published version again) until `UCWEB_DELTA_COMMIT_RETENTION` trims the oldest published ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalog import resolve
from catalog.choices import Privilege, SecurableType, TableType
from catalog.models import Principal, Table
from catalog.services import audit, grants, managed_tables
from catalog.services.common import validate_properties
from catalog.services.tables import replace_columns, validate_columns
from catalog.storage import InvalidStorageUrl, StorageError, StorageObjectNotFound, join, normalize, storage_for
from catalog.asset_selectors import parse_uuid
from commits import delta_log, publication
from commits.models import CommitReport, DeltaCommit
from ucweb.errors import (
    AlreadyExists,
    InvalidParameter,
    PermissionDenied,
    ResourceExhausted,
    TableDoesNotExist,
    TemporarilyUnavailable,
)

REQUIRED_PROPERTIES = (
    delta_log.TABLE_ID_PROPERTY,
    "delta.enableInCommitTimestamps",
    "delta.feature.catalogManaged",
    "delta.feature.inCommitTimestamp",
    "delta.feature.vacuumProtocolCheck",
)


# -- parsing requests --------------------------------------------------------------------------------
def _int(value, field: str, *, minimum: int | None = None, required: bool = True) -> int | None:
    if value is None:
        if required:
            raise InvalidParameter(f"{field} is required.")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.lstrip("-").isdigit():
            value = int(value)
        else:
            raise InvalidParameter(f"{field} must be an integer.")
    if not -(2**63) <= value < 2**63:
        raise InvalidParameter(f"{field} is out of range.")
    if minimum is not None and value < minimum:
        raise InvalidParameter(f"{field} must be at least {minimum} (is {value}).")
    return value


@dataclass(frozen=True)
class CommitInfo:
    version: int
    timestamp: int
    file_name: str
    file_size: int
    file_modification_timestamp: int

    @classmethod
    def parse(cls, data) -> CommitInfo:
        if not isinstance(data, dict):
            raise InvalidParameter("commit_info must be an object.")
        file_name = data.get("file_name")
        if not isinstance(file_name, str) or not file_name:
            raise InvalidParameter("commit_info.file_name is required.")
        if "/" in file_name or "\\" in file_name or file_name in (".", "..") or "\x00" in file_name:
            raise InvalidParameter("commit_info.file_name must be a single file name, not a path.")
        return cls(
            version=_int(data.get("version"), "commit_info.version", minimum=1),
            timestamp=_int(data.get("timestamp"), "commit_info.timestamp", minimum=1),
            file_name=file_name,
            file_size=_int(data.get("file_size"), "commit_info.file_size", minimum=1),
            file_modification_timestamp=_int(
                data.get("file_modification_timestamp"), "commit_info.file_modification_timestamp", minimum=1
            ),
        )


@dataclass(frozen=True)
class MetadataChange:
    description: str | None
    has_description: bool
    columns: list[dict] | None
    properties: dict | None

    @classmethod
    def parse(cls, data) -> MetadataChange:
        if not isinstance(data, dict):
            raise InvalidParameter("metadata must be an object.")
        description = data.get("description")
        if description is not None and not isinstance(description, str):
            raise InvalidParameter("metadata.description must be a string.")
        return cls(
            description=description,
            has_description="description" in data,
            columns=_parse_schema(data.get("schema"), data.get("partition_columns")),
            properties=_parse_properties(data.get("properties")),
        )


def _parse_schema(schema, partition_columns) -> list[dict] | None:
    """`schema` arrives as an array of columns (seed 000) or as {columns: [...]} (the SDK); a
    column is a ColumnInfo (`type_name`/`type_text`) or a Delta field (`type`)."""
    if schema is None:
        return None
    if isinstance(schema, dict):
        schema = schema.get("columns")
    if not isinstance(schema, list):
        raise InvalidParameter("metadata.schema must be an array of columns or {columns: [...]}.")
    if partition_columns is not None and (
        not isinstance(partition_columns, list) or not all(isinstance(c, str) for c in partition_columns)
    ):
        raise InvalidParameter("metadata.partition_columns must be an array of column names.")
    columns = []
    for position, column in enumerate(schema):
        if isinstance(column, dict) and "type" in column and "type_name" not in column:
            try:
                columns.append(delta_log.field_to_column(column, position, partition_columns or []))
            except delta_log.DeltaLogError as exc:
                raise InvalidParameter(f"metadata.schema: {exc}.") from None
        else:
            columns.append(column)
    return validate_columns(columns)


def _parse_properties(properties) -> dict | None:
    if properties is None:
        return None
    if isinstance(properties, dict) and set(properties) == {"properties"} and isinstance(properties["properties"], dict):
        properties = properties["properties"]
    return validate_properties(properties, field="metadata.properties")


def _parse_uniform(uniform) -> dict | None:
    if uniform is None:
        return None
    iceberg = uniform.get("iceberg") if isinstance(uniform, dict) else None
    if not isinstance(iceberg, dict):
        raise InvalidParameter("uniform must be {iceberg: {...}}.")
    location = iceberg.get("metadata_location")
    if not isinstance(location, str) or not location:
        raise InvalidParameter("uniform.iceberg.metadata_location is required.")
    converted_at = iceberg.get("converted_delta_timestamp")
    if not isinstance(converted_at, str) or not converted_at:
        raise InvalidParameter("uniform.iceberg.converted_delta_timestamp is required.")
    clean = {
        "metadata_location": location,
        "converted_delta_version": _int(
            iceberg.get("converted_delta_version"), "uniform.iceberg.converted_delta_version", minimum=0
        ),
        "converted_delta_timestamp": converted_at,
    }
    base = _int(iceberg.get("base_converted_delta_version"), "uniform.iceberg.base_converted_delta_version",
                minimum=0, required=False)
    if base is not None:
        clean["base_converted_delta_version"] = base
    return clean


def _table_id(value) -> str:
    return str(parse_uuid(value, field="table_id"))


def _same_location(table: Table, table_uri) -> None:
    if not isinstance(table_uri, str) or not table_uri:
        raise InvalidParameter("table_uri is required.")
    try:
        matches = normalize(table_uri) == normalize(table.storage_location or "")
    except InvalidStorageUrl:
        matches = False
    if not matches:
        raise InvalidParameter(f"table_uri {table_uri} does not match the location of table {table.id}.")


def _locked_table(table_id: str, *, for_update: bool) -> Table:
    queryset = Table.objects.select_related("schema__catalog")
    if for_update:
        queryset = queryset.select_for_update(of=("self",))
    table = queryset.filter(id=table_id).first()
    if table is None:
        raise _missing(table_id)
    return table


def _missing(table_id) -> TableDoesNotExist:
    return TableDoesNotExist(f"Table {table_id} does not exist.")


def _authorize(caller: Principal, table: Table, privilege: str) -> None:
    """A table the caller may not see answers as one that does not exist (catalog.resolve)."""
    access = grants.Access.load(caller, table)
    if resolve.hidden_level(access, SecurableType.TABLE) is not None:
        raise resolve.hidden(_missing(table.id))
    access.require(access.has(privilege), f"Missing {privilege} on table {table.full_name}.")


def _is_catalog_managed(table: Table) -> bool:
    return table.table_type == TableType.MANAGED and table.latest_version is not None


# -- write commit ------------------------------------------------------------------------------------
def write_commit(*, caller: Principal, body: dict, by_catalog: bool = False) -> None:
    """Ratify and/or backfill. `by_catalog` is the catalog's own maintenance commit (OPTIMIZE,
    VACUUM): the same lock, version rule and audit as a client's, without the client maintenance
    policy, which reserves exactly those operations for the catalog. No API view passes it."""
    table_id = _table_id(body.get("table_id"))
    commit = CommitInfo.parse(body["commit_info"]) if body.get("commit_info") is not None else None
    published = body.get("latest_published_version", body.get("latest_backfilled_version"))
    published = _int(published, "latest_published_version", minimum=0, required=False)
    metadata = MetadataChange.parse(body["metadata"]) if body.get("metadata") is not None else None
    uniform = _parse_uniform(body.get("uniform"))
    if commit is None and published is None:
        raise InvalidParameter("At least one of commit_info and latest_published_version is required.")
    if commit is None and (metadata is not None or uniform is not None):
        raise InvalidParameter("metadata and uniform need a commit_info: a backfill carries no metadata.")

    # The staged file is read before the table is locked (it is named by the client), from the
    # location the request names; under the lock that location is checked to be the table's, so
    # the bytes read here are the ones being ratified (their digest is recorded with the commit).
    staged = read_staged_commit(body.get("table_uri"), commit.file_name) if commit is not None else None
    if by_catalog and staged is not None:
        # The catalog's own maintenance commit: the operations the policy reserves are its own.
        staged = dataclasses.replace(staged, operation=None)

    with transaction.atomic():
        table = _locked_table(table_id, for_update=True)
        _authorize(caller, table, Privilege.MODIFY)
        if not _is_catalog_managed(table):
            raise InvalidParameter(f"Table {table.full_name} is not a catalog-managed Delta table.")
        _same_location(table, body.get("table_uri"))
        changed = []
        if published is not None:
            changed += _backfill(table, published)
        if commit is not None:
            changed += _ratify(table, commit, caller=caller, metadata=metadata, uniform=uniform, staged=staged)
        if "latest_version" in changed:
            _nudge_publication(table)
        if changed:
            table.save(update_fields=sorted(set(changed)))
            audit.record(
                principal=caller.name, action="commitDelta", securable_type="table",
                securable_name=table.full_name, securable_id=table.id,
                details={"version": commit.version if commit else None, "published": published},
            )


def _confirm_version_zero(table: Table) -> list[str]:
    """For a table registered before its version 0 was written: check that version 0 is there
    now and describes this catalog-managed table, then count it as published."""
    if table.latest_published_version is not None:
        return []
    try:
        managed_tables.check_version_zero(table.storage_location, table.id)
    except InvalidParameter as exc:
        raise InvalidParameter(f"Version 0 of table {table.full_name} is not usable: {exc.message}") from None
    table.latest_published_version = 0
    return ["latest_published_version"]


# -- maintenance policy ----------------------------------------------------------------------------
# Seed 000: clients may run checkpoints, log compaction and version checksums; OPTIMIZE, VACUUM,
# REORG and metadata cleanup belong to the catalog. Two ways say otherwise, resolved as one policy:
# - the table or schema property ucweb.maintenance.client-operations lists operations clients may run;
# - a Polaris policy of the matching type (OPTIMIZE and REORG: system.data-compaction; VACUUM:
#   system.orphan-file-removal) applies to the table: `enable: false` says the catalog does not run
#   it, so clients may; `enable: true` says the catalog does, so clients may not.
# The deepest statement wins (table, then schema/namespace, then catalog); at the same level the
# property does. Example: a catalog-wide data-compaction policy with enable=true reserves OPTIMIZE,
# and the property client-operations=OPTIMIZE on one schema gives it back to clients there.
CATALOG_OPERATIONS = {"OPTIMIZE": "OPTIMIZE", "VACUUM START": "VACUUM", "VACUUM END": "VACUUM", "REORG": "REORG"}
POLICY_PROPERTY = grants.POLICY_PROPERTY_PREFIX + "client-operations"
POLICY_TYPES = {"OPTIMIZE": "system.data-compaction", "REORG": "system.data-compaction",
                "VACUUM": "system.orphan-file-removal"}


@dataclass(frozen=True)
class StagedCommit:
    """A staged commit file as it was read for ratification: its bytes' size and SHA-256, and the
    `commitInfo.operation` it declares; or why it cannot be ratified (`problem`)."""

    file_name: str
    size: int = 0
    sha256: str = ""
    operation: str | None = None
    txn_id: str | None = None  # commitInfo.txnId: the same data when a client retries
    problem: str | None = None
    unavailable: bool = False

    def require(self, *, declared_size: int | None) -> None:
        """Raises unless this file may be ratified: it exists, is a Delta commit, and has the
        size the request declared (when it declares one)."""
        if self.unavailable:
            raise TemporarilyUnavailable(self.problem)
        if self.problem is not None:
            raise InvalidParameter(self.problem)
        if declared_size is not None and declared_size != self.size:
            raise InvalidParameter(
                f"Staged commit {self.file_name} has {self.size} bytes, the request declares {declared_size}."
            )


def read_staged_commit(table_uri, file_name: str) -> StagedCommit:
    """Reads `<table_uri>/_delta_log/_staged_commits/<file_name>` once; nothing is raised here, so
    that the checks that come first under the table's lock (conflicts, gaps) answer first."""
    if not isinstance(table_uri, str) or not table_uri:
        return StagedCommit(file_name, problem="table_uri is required.")
    try:
        url = join(normalize(table_uri), "_delta_log", "_staged_commits", file_name)
        data = storage_for(url).read(url)
    except StorageObjectNotFound:
        return StagedCommit(file_name, problem=(
            f"Staged commit {file_name} does not exist: write it to _delta_log/_staged_commits/ "
            f"of the table before proposing it."))
    except InvalidStorageUrl:
        return StagedCommit(file_name, problem=f"table_uri {table_uri} is not a storage location.")
    except StorageError as exc:
        return StagedCommit(file_name, problem=f"Staged commit {file_name} cannot be read: {exc}", unavailable=True)
    try:
        actions = delta_log.parse_actions(data)
    except delta_log.DeltaLogError as exc:
        return StagedCommit(file_name, size=len(data), problem=f"Staged commit {file_name} is not a Delta commit: {exc}.")
    info = delta_log.first(actions, "commitInfo") or {}
    operation, txn_id = info.get("operation"), info.get("txnId")
    return StagedCommit(
        file_name, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
        operation=operation if isinstance(operation, str) else None,
        txn_id=txn_id if isinstance(txn_id, str) and len(txn_id) <= 255 else None,
    )


def clients_may_run(table: Table, reserved: str) -> bool:
    """Whether clients may commit the catalog-reserved operation `reserved` to `table`."""
    from catalog.services.policies import effective_policies

    allowed_at = -1  # the deepest level whose property lets clients run it
    for level, properties in ((2, table.properties), (1, table.schema.properties)):
        listed = {item.strip().upper() for item in str(properties.get(POLICY_PROPERTY, "")).split(",")}
        if reserved in listed:
            allowed_at = level
            break
    policy_type = POLICY_TYPES[reserved]
    chosen = effective_policies(table, policy_type=policy_type).get(policy_type)
    if chosen is None or chosen.level <= allowed_at:
        return allowed_at >= 0
    try:
        return chosen.content.get("enable") is False
    except InvalidParameter:
        return allowed_at >= 0  # content that no longer validates says nothing


def check_maintenance_policy(table: Table, operation: str | None) -> None:
    reserved = CATALOG_OPERATIONS.get((operation or "").strip().upper())
    if reserved is None or clients_may_run(table, reserved):
        return
    raise PermissionDenied(
        f"The maintenance policy of table {table.full_name} reserves {reserved} for the catalog "
        f"(clients may run checkpoints, log compaction and version checksums). A table or schema "
        f"property {POLICY_PROPERTY}={reserved}, or a {POLICY_TYPES[reserved]} policy with enable=false, "
        f"allows clients to run it."
    )


def _nudge_publication(table: Table) -> None:
    """A table whose unpublished commits reach half the limit gets publish-verify now (after the
    commit, in the background), so a client that never publishes does not run into the 429."""
    unpublished = table.latest_version - (table.latest_published_version or 0)
    if unpublished >= max(1, settings.UCWEB_MAX_UNPUBLISHED_COMMITS // 2):
        from catalog.signals import publication_due

        table_id = str(table.id)
        transaction.on_commit(lambda: publication_due.send(sender=Table, table_id=table_id))


def _ratify(table: Table, commit: CommitInfo, *, caller, metadata, uniform, staged: StagedCommit) -> list[str]:
    latest = table.latest_version
    if commit.version <= latest:
        existing = DeltaCommit.objects.filter(table=table, version=commit.version).only("file_name").first()
        if existing is not None and existing.file_name == commit.file_name:
            return []  # a retry of a commit that was ratified already
        raise AlreadyExists(f"Version {commit.version} of table {table.full_name} is already committed.")
    if commit.version != latest + 1:
        raise InvalidParameter(
            f"Commit version {commit.version} is not the next version of table {table.full_name} "
            f"(expected {latest + 1})."
        )
    confirmed = _confirm_version_zero(table)
    staged.require(declared_size=commit.file_size)
    check_maintenance_policy(table, staged.operation)
    confirmed += _stay_under_the_bound(table)
    DeltaCommit.objects.create(
        table=table,
        version=commit.version,
        timestamp=commit.timestamp,
        file_name=commit.file_name,
        file_size=commit.file_size,
        file_modification_timestamp=commit.file_modification_timestamp,
        file_sha256=staged.sha256,
        ratified_by=caller.name,
    )
    table.latest_version = commit.version
    changed = confirmed + ["latest_version", "updated_at", "updated_by"]
    table.updated_at = timezone.now()
    table.updated_by = caller.name
    if metadata is not None:
        changed += _apply_metadata(table, metadata, caller=caller)
    if uniform is not None:
        table.uniform_iceberg = uniform
        changed.append("uniform_iceberg")
    return changed


def _stay_under_the_bound(table: Table) -> list[str]:
    """At the bound of unpublished commits the server publishes the oldest ones itself (see
    commits.publication), so the bound never depends on a worker's speed; 429 only when none of
    them can be published (the staged file is gone and `_delta_log/<v>.json` is missing)."""
    bound = settings.UCWEB_MAX_UNPUBLISHED_COMMITS
    unpublished = table.latest_version - table.latest_published_version
    if unpublished < bound:
        return []
    publication.publish_oldest(table, limit=max(1, unpublished - bound // 2))
    unpublished = table.latest_version - table.latest_published_version
    if unpublished >= bound:
        raise ResourceExhausted(
            f"Table {table.full_name} has {unpublished} ratified commits that are not published, and "
            f"version {table.latest_published_version + 1} cannot be published from its staged file; "
            f"publish it (latest_published_version) before committing more."
        )
    _trim_history(table)
    return ["latest_published_version"]


def _apply_metadata(table: Table, metadata: MetadataChange, *, caller: Principal) -> list[str]:
    changed = []
    if metadata.has_description:
        table.comment = metadata.description
        changed.append("comment")
    if metadata.properties is not None:
        missing = [key for key in REQUIRED_PROPERTIES if key in table.properties and key not in metadata.properties]
        if missing:
            raise InvalidParameter(
                f"metadata.properties must keep the managed-table properties: {', '.join(missing)}."
            )
        declared = metadata.properties.get(delta_log.TABLE_ID_PROPERTY)
        if declared is not None and declared != str(table.id):
            raise InvalidParameter(f"{delta_log.TABLE_ID_PROPERTY} must stay {table.id}.")
        grants.require_policy_unchanged_or_owner(grants.Access.load(caller, table), table.properties,
                                                 metadata.properties)
        table.properties = metadata.properties
        changed.append("properties")
    if metadata.columns is not None:
        replace_columns(table, metadata.columns)
    return changed


def _backfill(table: Table, published: int) -> list[str]:
    if published > table.latest_version:
        raise InvalidParameter(
            f"latest_published_version {published} is above the latest version {table.latest_version}."
        )
    confirmed = _confirm_version_zero(table)
    if published <= table.latest_published_version:
        return confirmed  # already known; backfill reports may arrive late or twice
    DeltaCommit.objects.filter(table=table, version__lte=published, published_at__isnull=True).update(
        published_at=timezone.now()
    )
    table.latest_published_version = published
    _trim_history(table)
    return ["latest_published_version"]


def _trim_history(table: Table) -> None:
    keep = settings.UCWEB_DELTA_COMMIT_RETENTION
    if keep is None:
        return
    cutoff = table.latest_published_version - keep
    # Never forget a commit whose `_delta_log/<v>.json` was not seen (a backfill report is the
    # client's word): the record goes only once the published file is there. Bounded per call.
    candidates = DeltaCommit.objects.filter(table=table, version__lte=cutoff, published_at__isnull=False)
    seen = None
    for version in candidates.order_by("version").values_list("version", flat=True)[:100]:
        url = publication.log_file(table.storage_location, version)
        try:
            if not storage_for(url).exists(url):
                break
        except StorageError:
            break
        seen = version
    if seen is not None:
        candidates.filter(version__lte=seen).delete()


# -- get commits --------------------------------------------------------------------------------------
def get_commits(*, caller: Principal, params: dict) -> dict:
    table_id = _table_id(params.get("table_id"))
    start = _int(params.get("start_version"), "start_version", minimum=0, required=False) or 0
    end = _int(params.get("end_version"), "end_version", minimum=0, required=False)
    if end is not None and end < start:
        raise InvalidParameter(f"end_version {end} is below start_version {start}.")
    table = _locked_table(table_id, for_update=False)
    _authorize(caller, table, Privilege.SELECT)
    _same_location(table, params.get("table_uri"))
    if not _is_catalog_managed(table):
        return {"commits": [], "latest_table_version": -1}
    last = table.latest_version if end is None else min(end, table.latest_version)
    last = min(last, start + settings.UCWEB_DELTA_COMMITS_PAGE_SIZE - 1)
    rows = DeltaCommit.objects.filter(table=table, version__gte=start, version__lte=last).order_by("version")
    commits = [
        {
            "version": row.version,
            "timestamp": row.timestamp,
            "file_name": row.file_name,
            "file_size": row.file_size,
            "file_modification_timestamp": row.file_modification_timestamp,
        }
        for row in rows.only("version", "timestamp", "file_name", "file_size", "file_modification_timestamp")
    ]
    return {"commits": commits, "latest_table_version": table.latest_version}


# -- metrics ------------------------------------------------------------------------------------------
REPORT_COUNTERS = (
    "num_files_added",
    "num_bytes_added",
    "num_clustered_bytes_added",
    "num_files_removed",
    "num_bytes_removed",
    "num_clustered_bytes_removed",
    "num_rows_inserted",
    "num_rows_removed",
    "num_rows_updated",
)


def _histogram(data) -> dict | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise InvalidParameter("file_size_histogram must be an object.")
    arrays = {}
    for key in ("sorted_bin_boundaries", "file_counts", "total_bytes"):
        value = data.get(key)
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise InvalidParameter(f"file_size_histogram.{key} must be an array of integers.")
        if any(v < 0 for v in value):
            raise InvalidParameter(f"file_size_histogram.{key} must not hold negative numbers.")
        arrays[key] = value
    boundaries = arrays["sorted_bin_boundaries"]
    if not boundaries or boundaries[0] != 0:
        raise InvalidParameter("file_size_histogram.sorted_bin_boundaries must start at 0.")
    if any(later <= earlier for earlier, later in zip(boundaries, boundaries[1:])):
        raise InvalidParameter("file_size_histogram.sorted_bin_boundaries must be strictly increasing.")
    if not len(boundaries) == len(arrays["file_counts"]) == len(arrays["total_bytes"]):
        raise InvalidParameter("file_size_histogram arrays must have the same length.")
    return arrays


def write_metrics(*, caller: Principal, body: dict) -> CommitReport | None:
    table_id = _table_id(body.get("table_id"))
    report = body.get("report")
    if report is not None and not isinstance(report, dict):
        raise InvalidParameter("report must be an object.")
    commit_report = (report or {}).get("commit_report")
    if commit_report is not None and not isinstance(commit_report, dict):
        raise InvalidParameter("report.commit_report must be an object.")
    values = {}
    if commit_report is not None:
        values["commit_version"] = _int(commit_report.get("commit_version"), "commit_report.commit_version", minimum=0)
        for key in REPORT_COUNTERS:
            values[key] = _int(commit_report.get(key), f"commit_report.{key}", minimum=0, required=False)
        values["file_size_histogram"] = _histogram(commit_report.get("file_size_histogram"))
    table = _locked_table(table_id, for_update=False)
    _authorize(caller, table, Privilege.SELECT)
    _same_location(table, body.get("table_uri"))
    if commit_report is None:
        return None
    if not _is_catalog_managed(table):
        raise InvalidParameter(f"Table {table.full_name} is not a catalog-managed Delta table.")
    if values["commit_version"] > table.latest_version:
        raise InvalidParameter(
            f"commit_version {values['commit_version']} is above the latest version {table.latest_version}."
        )
    return CommitReport.objects.create(table=table, reported_by=caller.name, **values)
