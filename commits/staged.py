"""The staged commit a ratification is about, and the maintenance policy its operation must
pass. The file is read once, before the table row is locked; what it declares is checked under
the lock (commits.ratification)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from catalog.policy_properties import POLICY_PROPERTY_PREFIX
from catalog.models import Table
from catalog.storage import (
    InvalidStorageUrl,
    StorageError,
    StorageObjectNotFound,
    StorageOutsideRoot,
    join,
    normalize,
    storage_within,
)
from commits.formats import delta_log
from ucweb import metrics
from ucweb.errors import InvalidParameter, PermissionDenied, TemporarilyUnavailable


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
POLICY_PROPERTY = POLICY_PROPERTY_PREFIX + "client-operations"
POLICY_TYPES = {"OPTIMIZE": "system.data-compaction", "REORG": "system.data-compaction",
                "VACUUM": "system.orphan-file-removal"}


# delta-kernel-rs (the Delta writer of DuckDB's delta extension, among others) writes
# commitInfo.operation "UNKNOWN" when its engine names no operation (kernel/src/actions/mod.rs,
# CommitInfo::new), and always writes commitInfo.kernelVersion. DuckDB 1.5 names none: its commits
# say "UNKNOWN", and that word is the library's, not the client's.
KERNEL_PLACEHOLDER_OPERATION = "UNKNOWN"


@dataclass(frozen=True)
class StagedCommit:
    """A staged commit file as it was read for ratification: its bytes' size and SHA-256, and what
    its commitInfo declares (`operation`, `engine_info`: None when it declares none); or why it
    cannot be ratified (`problem`)."""

    file_name: str
    size: int = 0
    sha256: str = ""
    operation: str | None = None
    engine_info: str | None = None
    txn_id: str | None = None  # commitInfo.txnId: the same data when a client retries
    metadata: dict | None = None  # its metaData action, if any (commits.formats.definition)
    protocol: dict | None = None  # its protocol action, if any
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
        location = normalize(table_uri)
        url = join(location, delta_log.staged_path(file_name))
        # Confined to the table: a staged file that is a symbolic link to another table's commit
        # (or anywhere else) is not read as this table's.
        data = storage_within(location).read(url)
    except StorageOutsideRoot:
        return StagedCommit(file_name, problem=(
            f"Staged commit {file_name} leads outside the table's location (a symbolic link); it is not read."))
    except StorageObjectNotFound:
        return StagedCommit(file_name, problem=(
            f"Staged commit {file_name} does not exist: write it to {delta_log.STAGED_DIR}/ "
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
    txn_id, engine_info = info.get("txnId"), info.get("engineInfo")
    return StagedCommit(
        file_name, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
        operation=declared_operation(info),
        engine_info=engine_info if isinstance(engine_info, str) and engine_info else None,
        txn_id=txn_id if isinstance(txn_id, str) and len(txn_id) <= 255 else None,
        metadata=delta_log.first(actions, "metaData"), protocol=delta_log.first(actions, "protocol"),
    )


def declared_operation(commit_info: dict) -> str | None:
    """The operation a commitInfo declares, or None when its writer named none (no string, or
    delta-kernel-rs's placeholder for none)."""
    operation = commit_info.get("operation")
    if not isinstance(operation, str) or not operation:
        return None
    if operation == KERNEL_PLACEHOLDER_OPERATION and "kernelVersion" in commit_info:
        return None
    return operation


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
    metrics.commit_outcome("delta", "refused_by_policy")
    raise PermissionDenied(
        f"The maintenance policy of table {table.full_name} reserves {reserved} for the catalog "
        f"(clients may run checkpoints, log compaction and version checksums). A table or schema "
        f"property {POLICY_PROPERTY}={reserved}, or a {POLICY_TYPES[reserved]} policy with enable=false, "
        f"allows clients to run it."
    )
