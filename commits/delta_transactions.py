"""Multi-table Delta transactions: commits to several catalog-managed Delta tables ratified all
together or not at all, through either Delta API (`POST /delta/preview/transactions/commit` with
seed 000's commit requests, `POST /delta/v1/transactions/commit` with spec 1.0's updateTable
requests).

Each table's request is what its API accepts for one table, and is applied by that API's own
code (commits.delta.apply, commits.delta_v1.update.apply: the same ratification, authorization,
policy, contract and definition checks). What a transaction adds:

- its tables are locked in one statement, in the order of their ids (catalog.rows, the order the
  Iceberg multi-table commit locks in), so two transactions over overlapping tables never wait
  on each other, and a one-table commit locks one row;
- every table's request is applied under those locks in one database transaction: any refusal
  rolls all of them back, and names the table it was refused on (`commits[1] (table <id>): ...`);
- the transaction id is recorded in the same database transaction, first (an in-flight one with
  the same id waits for it): the same id with the same body is answered as the first time and
  nothing is ratified again; with another body it is refused (409). A refused transaction
  records nothing, so its id may be sent again;
- a transaction id is kept for UCWEB_IDEMPOTENCY_LIFETIME_SECONDS (as an Iceberg Idempotency-Key);
- at most MOST_TABLES_PER_TRANSACTION tables, each at most once (400 otherwise);
- one audit event per table (the API's own, with the transaction id) and one for the transaction.

Published `_delta_log` files follow from ratified rows only (commits.publication), so a table's
version of a transaction is never published unless all of its versions were ratified.

A worked sequence. Tables A (latest 4) and B (latest 7):

    writer 1: id t1, A v5 + B v8 → lock A, B (by id) → both ratified → {A: 5, B: 8}
    writer 2: id t2, B v8 + A v5 → waits on the locks, then A v5 is taken → 409, nothing changes
    writer 1: id t1 again (lost the answer) → {A: 5, B: 8}, nothing ratified again
    writer 2: id t2, A v6 + B v9 → ratified
"""

from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from catalog import lookup_errors, rows
from catalog.choices import AuditAction, Privilege
from catalog.models import Principal, Table
from catalog.names import quote_part
from catalog.services import audit
from commits import delta
from commits import transaction_wire as wire
from commits.delta_v1.tables import require, table_for
from commits.delta_v1.update import apply as apply_update
from commits.models import DeltaTransaction
from commits.staged import read_staged_commit
from ucweb.bodies import read
from ucweb.errors import CatalogError, CommitFailed, InvalidParameter

PREVIEW, V1 = "preview", "v1"


def _digest(body: dict) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode(
        "utf-8", "surrogatepass")).hexdigest()


@contextmanager
def naming(where: str):
    """A refusal of one table's request names it: its place in the request, and the table."""
    try:
        yield
    except CatalogError as exc:
        if not exc.message.startswith(where.split(" ")[0]):
            exc.message = f"{where}: {exc.message}"
        raise


def _no_table_twice(keys: list, labels: list[str]) -> None:
    seen = {}
    for index, key in enumerate(keys):
        if key in seen:
            raise InvalidParameter(f"{labels[index]} names the same table as {labels[seen[key]]}: a transaction "
                                   "commits to each table at most once.")
        seen[key] = index


def _forget_old() -> None:
    """Forgets (up to 100) transaction ids older than UCWEB_IDEMPOTENCY_LIFETIME_SECONDS, skipping
    any another request holds: the cleanup never waits on, nor deadlocks with, another request."""
    cutoff = timezone.now() - timedelta(seconds=settings.UCWEB_IDEMPOTENCY_LIFETIME_SECONDS)
    old = DeltaTransaction.objects.filter(created_at__lt=cutoff).order_by("pk")
    if connection.features.has_select_for_update_skip_locked:
        old = old.select_for_update(skip_locked=True)
    ids = list(old.values_list("pk", flat=True)[:100])
    if ids:
        DeltaTransaction.objects.filter(pk__in=ids).delete()


def _once(caller: Principal, api: str, transaction_id: str, body: dict, run) -> dict:
    """`run()` in a database transaction that first records the transaction id; the stored answer
    when the id was committed already with the same body."""
    digest = _digest(body)
    with transaction.atomic():
        _forget_old()
        try:
            with transaction.atomic():
                record = DeltaTransaction.objects.create(principal=caller.name, api=api, transaction_id=transaction_id,
                                                         body_sha256=digest)
        except IntegrityError:
            record = None
        if record is None:
            done = DeltaTransaction.objects.get(principal=caller.name, api=api, transaction_id=transaction_id)
            if done.body_sha256 != digest:
                raise CommitFailed(f"Transaction {transaction_id} was committed already with another body; a "
                                   "transaction id names one transaction. Send a new id.")
            return done.response
        answer, tables = run()
        record.response = answer
        record.save(update_fields=["response"])
        audit.record(principal=caller.name, action=AuditAction.COMMIT_DELTA_TRANSACTION, securable_type="",
                     securable_name=transaction_id, details={"api": api, "tables": tables})
        return answer


def _locked(caller: Principal, ids: list) -> dict[str, Table]:
    """The tables of `ids`, locked in the order of their ids (catalog.rows), by id."""
    found = rows.tables(caller, rows.by_ids(len(ids)), [rows.table_id(i) for i in ids], for_update=True)
    return {str(table.id): table for table in found}


# -- seed 000 ---------------------------------------------------------------------------------------
def commit_preview(*, caller: Principal, body: dict) -> dict:
    request = read(wire.DeltaTransactionRequest, body)
    proposals = []
    for index, item in enumerate(request.commits):
        with naming(f"commits[{index}]"):
            proposals.append(delta.Proposal(item, f"commits[{index}]"))
    ids = [proposal.request.table_id for proposal in proposals]
    labels = [f"commits[{index}] (table {table_id})" for index, table_id in enumerate(ids)]
    _no_table_twice(ids, labels)

    def run():
        staged = []
        for label, proposal in zip(labels, proposals):
            with naming(label):
                staged.append(proposal.staged())
        locked = _locked(caller, ids)
        done = []
        for label, table_id, proposal, read_staged in zip(labels, ids, proposals, staged):
            with naming(label):
                table, access = delta.access_to(caller, table_id, Privilege.MODIFY,
                                                [locked[table_id]] if table_id in locked else [])
                delta.check_managed(table, proposal.request.table_uri)
                delta.apply(caller, table, access, proposal, read_staged,
                            details={"transaction_id": request.transaction_id})
            done.append({"table_id": table_id, "latest_table_version": table.latest_version})
        return {"transaction_id": request.transaction_id, "commits": done}, done

    return _once(caller, PREVIEW, request.transaction_id, body, run)


# -- managed tables spec 1.0 ------------------------------------------------------------------------
def commit_v1(*, caller: Principal, body: dict) -> dict:
    request = read(wire.DeltaCommitTransactionRequest, body)
    changes = []
    for index, item in enumerate(request.table_changes):
        with naming(f"table-changes[{index}]"):
            changes.append(read(wire.DeltaTableChange, item, f"table-changes[{index}]"))
    labels = [f"table-changes[{index}] ({change.identifier.label})" for index, change in enumerate(changes)]
    _no_table_twice([change.identifier.label for change in changes], labels)

    def run():
        found, staged = [], []
        for label, change in zip(labels, changes):
            name = change.identifier
            with naming(label):
                table = table_for(caller, name.catalog, name.schema_name, name.name)
                require(caller, table, Privilege.MODIFY)
                commit = change.updates.commit
                staged.append(read_staged_commit(table.storage_location, commit.file_name) if commit else None)
            found.append(table)
        ids = [str(table.id) for table in found]
        _no_table_twice(ids, labels)  # one table under two spellings of its schema's name
        locked = _locked(caller, ids)  # (an answer of results: no table's commits)
        done = []
        for label, table_id, change, read_staged in zip(labels, ids, changes, staged):
            name = change.identifier
            with naming(label):
                if table_id not in locked:  # dropped since it was read
                    raise lookup_errors.table_not_found(name.catalog, quote_part(name.schema_name), name.name)
                table = locked[table_id]
                apply_update(caller, table, change, read_staged, details={"transaction_id": request.transaction_id})
            done.append({"identifier": name.model_dump(by_alias=True), "table-uuid": table_id,
                         "latest-table-version": table.latest_version})
        return {"transaction-id": request.transaction_id, "results": done}, done

    return _once(caller, V1, request.transaction_id, body, run)
