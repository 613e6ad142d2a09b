"""The life of a maintenance run: PLANNED -> RUNNING -> SUCCEEDED / FAILED / SKIPPED.

- One run per table at a time: a plan becomes RUNNING in one UPDATE, and a partial unique
  constraint allows one RUNNING plan per table, whatever the worker.
- The RUNNING plan holds a lease that a heartbeat thread renews. A worker killed mid-run stops
  renewing; once the lease has expired, `reclaim_expired` puts the plan back to PLANNED (a new
  attempt). The executors never change a table before their one final commit, so a run killed at
  any point leaves the table as it was (at most unreferenced new files, which VACUUM removes).
- A failed attempt is retried with exponential backoff (UCWEB_MAINTENANCE_BACKOFF_SECONDS,
  doubled each attempt) up to UCWEB_MAINTENANCE_MAX_ATTEMPTS; a run past
  UCWEB_MAINTENANCE_TIME_LIMIT_SECONDS stops at its next batch and counts as failed.
- A conflict with a user's commit ends the run and plans the operation again.
- Every end of a run is an audit event of the catalog's service principal."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from catalog.choices import AuditOutcome, DataSourceFormat, TableType
from catalog.models import Principal, Table
from catalog.services import audit
from maintenance import policy as policies
from maintenance.errors import Conflict, LeaseLost, Skip, TimeLimitExceeded, describe
from maintenance.models import MaintenancePlan
from ucweb import metrics
from ucweb.errors import InvalidParameter

logger = logging.getLogger(__name__)
Status = MaintenancePlan.Status
Operation = MaintenancePlan.Operation
DELTA_OPERATIONS = {Operation.OPTIMIZE, Operation.VACUUM, Operation.CHECKPOINT, Operation.REMOVE_ORPHANS}
ICEBERG_OPERATIONS = {Operation.OPTIMIZE, Operation.EXPIRE_SNAPSHOTS, Operation.REMOVE_ORPHANS,
                      Operation.REWRITE_MANIFESTS}


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def operations_for(table: Table) -> set[str]:
    if table.data_source_format == DataSourceFormat.ICEBERG:
        return set(ICEBERG_OPERATIONS)
    if table.data_source_format == DataSourceFormat.DELTA and table.table_type == TableType.MANAGED:
        return set(DELTA_OPERATIONS)
    return set()


# -- planning ---------------------------------------------------------------------------------------
def request_run(*, table: Table, operation: str, requested_by: str = "", reason: str = "") -> MaintenancePlan:
    """The PLANNED plan of this operation on this table, due now (created when there is none)."""
    if operation not in Operation.values:
        raise ValueError(f"unknown operation {operation!r} (one of {', '.join(Operation.values)})")
    reason = reason or f"asked for by {requested_by or 'the catalog'}"
    for _ in range(3):
        try:
            with transaction.atomic():
                plan, created = MaintenancePlan.objects.get_or_create(
                    table=table, operation=operation, status=Status.PLANNED,
                    defaults={"reason": reason, "requested_by": requested_by})
                if not created:
                    plan.next_attempt_at = None
                    if requested_by:
                        plan.requested_by = requested_by
                    plan.save(update_fields=["next_attempt_at", "requested_by"])
                return plan
        except IntegrityError:
            continue
    raise RuntimeError("could not plan the run")


def request_run_as(*, caller: Principal, table: Table, operation: str, reason: str = "") -> MaintenancePlan:
    """A person asks for a run now (the console): they must see the table and hold MODIFY on it,
    as an engine's OPTIMIZE or VACUUM asks (owners and metastore admins may). Audited."""
    from catalog import authz
    from ucweb.errors import TableDoesNotExist

    authz.require(caller, table, authz.Action.WRITE, missing=TableDoesNotExist(f"Table {table.full_name} does not exist."),
                  refused=f"Missing MODIFY on table {table.full_name}: only its writers may ask for its maintenance.")
    if operation not in operations_for(table):
        raise InvalidParameter(f"{operation} does not apply to {table.full_name} "
                               f"({table.table_type} {table.data_source_format}).")
    with transaction.atomic():
        plan = request_run(table=table, operation=operation, requested_by=caller.name,
                           reason=reason or f"asked for by {caller.name}")
        audit.record(principal=caller.name, action="requestMaintenance", securable_type="table",
                     securable_name=table.full_name, securable_id=table.id,
                     details={"operation": operation, "plan": plan.id})
    return plan


# -- leases -------------------------------------------------------------------------------------------
def claim(plan_id: int, owner: str) -> MaintenancePlan | None:
    """PLANNED and due -> RUNNING under `owner`'s lease, or None (taken, not due, or another run
    of the same table holds it)."""
    now = timezone.now()
    try:
        with transaction.atomic():
            taken = MaintenancePlan.objects.filter(
                Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now), id=plan_id, status=Status.PLANNED,
            ).update(status=Status.RUNNING, lease_owner=owner, attempts=F("attempts") + 1, started_at=now,
                     finished_at=None, progress="starting",
                     lease_expires_at=now + timedelta(seconds=settings.UCWEB_MAINTENANCE_LEASE_SECONDS))
    except IntegrityError:
        return None  # another run of this table is RUNNING
    if not taken:
        return None
    return MaintenancePlan.objects.select_related("table__schema__catalog").get(id=plan_id)


def reclaim_expired(now=None) -> int:
    """Runs whose worker stopped renewing the lease become PLANNED again (or FAILED after the
    last attempt)."""
    now = now or timezone.now()
    count = 0
    for plan in MaintenancePlan.objects.filter(status=Status.RUNNING, lease_expires_at__lt=now):
        message = f"the worker {plan.lease_owner} stopped during attempt {plan.attempts} (its lease expired)"
        with transaction.atomic():
            locked = MaintenancePlan.objects.select_for_update().filter(
                id=plan.id, status=Status.RUNNING, lease_expires_at__lt=now).first()
            if locked is None:
                continue
            _retry_or_fail(locked, message)
            count += 1
    return count


def _retry_or_fail(plan: MaintenancePlan, message: str, *, final: bool = False) -> None:
    """A failed attempt: PLANNED again with backoff, or FAILED after the last attempt (or when
    `final`) or when the operation was planned again meanwhile (that plan carries on)."""
    if final or plan.attempts >= settings.UCWEB_MAINTENANCE_MAX_ATTEMPTS:
        _finish(plan, Status.FAILED, message)
        return
    try:
        with transaction.atomic():
            _retry_later(plan, message)
    except IntegrityError:
        plan.refresh_from_db()
        _finish(plan, Status.FAILED, message + "; planned again")


def _retry_later(plan: MaintenancePlan, message: str) -> None:
    backoff = settings.UCWEB_MAINTENANCE_BACKOFF_SECONDS * 2 ** max(plan.attempts - 1, 0)
    plan.status = Status.PLANNED
    plan.outcome = message
    plan.lease_owner = ""
    plan.lease_expires_at = None
    plan.next_attempt_at = timezone.now() + timedelta(seconds=backoff)
    plan.progress = f"attempt {plan.attempts} failed; next attempt in {backoff} s"
    plan.save(update_fields=["status", "outcome", "lease_owner", "lease_expires_at", "next_attempt_at", "progress"])
    metrics.MAINTENANCE_RUNS.labels(plan.operation, "retried").inc()
    _audit(plan, AuditOutcome.FAILED)


def _finish(plan: MaintenancePlan, status: str, outcome: str, after: dict | None = None) -> None:
    plan.status = status
    plan.outcome = outcome
    plan.finished_at = timezone.now()
    plan.lease_owner = ""
    plan.lease_expires_at = None
    plan.progress = status.lower()
    fields = ["status", "outcome", "finished_at", "lease_owner", "lease_expires_at", "progress"]
    if after is not None:
        plan.after = after
        fields.append("after")
    with transaction.atomic():  # the run's end and its audit (and change) event, together
        plan.save(update_fields=fields)
        _audit(plan, AuditOutcome.FAILED if status == Status.FAILED else AuditOutcome.SUCCESS)
    metrics.MAINTENANCE_RUNS.labels(plan.operation, status.lower()).inc()


def _audit(plan: MaintenancePlan, outcome: str) -> None:
    table = plan.table
    audit.record(
        principal=settings.UCWEB_MAINTENANCE_PRINCIPAL, action=f"maintenance{plan.operation.title().replace('_', '')}",
        securable_type="table", securable_name=table.full_name, securable_id=table.id, outcome=outcome,
        details={"plan": plan.id, "status": plan.status, "attempt": plan.attempts, "outcome": plan.outcome,
                 "before": plan.before, "after": plan.after, "duration_seconds": plan.duration_seconds,
                 "requested_by": plan.requested_by},
    )


class RunContext:
    """What an executor sees of its run: progress, the time limit, the lease."""

    def __init__(self, plan: MaintenancePlan, owner: str, on_progress=None):
        self.plan_id = plan.id
        self.owner = owner
        self.on_progress = on_progress
        self.deadline = time.monotonic() + settings.UCWEB_MAINTENANCE_TIME_LIMIT_SECONDS
        self.lost = threading.Event()
        self.stopped = threading.Event()
        self._heartbeat = threading.Thread(target=self._beat, daemon=True)

    def _update(self, **values) -> bool:
        lease = timezone.now() + timedelta(seconds=settings.UCWEB_MAINTENANCE_LEASE_SECONDS)
        return bool(MaintenancePlan.objects.filter(id=self.plan_id, status=Status.RUNNING, lease_owner=self.owner)
                    .update(lease_expires_at=lease, **values))

    def _beat(self) -> None:
        interval = max(settings.UCWEB_MAINTENANCE_LEASE_SECONDS / 3, 0.5)
        try:
            while not self.stopped.wait(interval):
                if not self._update():
                    self.lost.set()
                    return
        finally:
            connection.close()

    def start(self):
        self._heartbeat.start()

    def stop(self):
        self.stopped.set()
        self._heartbeat.join()

    def check(self) -> None:
        if self.lost.is_set():
            raise LeaseLost("another worker took this run over")
        if time.monotonic() > self.deadline:
            raise TimeLimitExceeded(
                f"the run went past its time limit of {settings.UCWEB_MAINTENANCE_TIME_LIMIT_SECONDS} s")

    def progress(self, text: str) -> None:
        self.check()
        if not self._update(progress=text[:255]):
            self.lost.set()
            raise LeaseLost("another worker took this run over")
        if self.on_progress:
            self.on_progress(text)

    def before(self, figures: dict) -> None:
        MaintenancePlan.objects.filter(id=self.plan_id).update(before=figures)


def _execute(plan: MaintenancePlan, ctx: RunContext) -> dict:
    table = plan.table
    if plan.operation not in operations_for(table):
        raise Skip(f"{plan.operation} does not apply to a {table.table_type} {table.data_source_format} table.")
    policy = policies.for_table(table)
    if table.data_source_format == DataSourceFormat.ICEBERG:
        from maintenance import iceberg_ops

        return iceberg_ops.run(plan.operation, table, policy, ctx)
    from maintenance import delta_ops

    if table.latest_version is None:
        raise Skip("not a catalog-managed Delta table")
    return delta_ops.run(plan.operation, table, policy, ctx)


def run_plan(plan_id: int, *, owner: str | None = None, on_progress=None) -> MaintenancePlan | None:
    """Runs one plan if it can be claimed; returns it in its new state (None: not claimed)."""
    owner = owner or default_owner()
    plan = claim(plan_id, owner)
    if plan is None:
        return None
    return _run_claimed(plan, owner, on_progress)


def run_now(*, table: Table, operation: str, requested_by: str, on_progress=None) -> MaintenancePlan | None:
    """Plans `operation` on `table` and runs it here, now: planned and claimed in one transaction,
    so no worker takes it in between. None when another run of the table holds it."""
    owner = default_owner()
    with transaction.atomic():
        plan = claim(request_run(table=table, operation=operation, requested_by=requested_by).id, owner)
    if plan is None:
        return None
    return _run_claimed(plan, owner, on_progress)


def _run_claimed(plan: MaintenancePlan, owner: str, on_progress) -> MaintenancePlan:
    plan_id = plan.id
    ctx = RunContext(plan, owner, on_progress)
    ctx.start()
    try:
        result = _execute(plan, ctx)
    except Skip as exc:
        ctx.stop()
        plan.refresh_from_db()
        _finish(plan, Status.SKIPPED, str(exc))
    except Conflict as exc:
        ctx.stop()
        plan.refresh_from_db()
        _conflicted(plan, str(exc))
    except LeaseLost as exc:
        ctx.stop()
        logger.warning("maintenance plan %s: %s", plan_id, exc)
    except Exception as exc:  # noqa: BLE001 - any failure of a run is recorded on the run
        ctx.stop()
        logger.exception("maintenance plan %s failed", plan_id)
        plan.refresh_from_db()
        if plan.status == Status.RUNNING and plan.lease_owner == owner:
            _retry_or_fail(plan, describe(exc), final=isinstance(exc, TimeLimitExceeded))
    else:
        ctx.stop()
        plan.refresh_from_db()
        plan.before = result.get("before", plan.before)
        plan.save(update_fields=["before"])
        after = {**(result.get("after") or {}), "duration_seconds": round(
            (timezone.now() - plan.started_at).total_seconds(), 3)}
        _finish(plan, Status.SUCCEEDED, result.get("summary", ""), after=after)
    plan.refresh_from_db()
    return plan


def _conflicted(plan: MaintenancePlan, message: str) -> None:
    """The run gives way to a user's commit; the operation is planned again."""
    _finish(plan, Status.SKIPPED, message)
    request_run(table=plan.table, operation=plan.operation, reason=f"planned again after: {message}")


def due(*, table: Table | None = None, operation: str | None = None, now=None):
    now = now or timezone.now()
    # A dropped table's plans wait: they run if it is restored, and go with its row when purged
    plans = MaintenancePlan.objects.filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now),
                                           status=Status.PLANNED, table__dropped_at__isnull=True)
    if table is not None:
        plans = plans.filter(table=table)
    if operation is not None:
        plans = plans.filter(operation=operation)
    return plans.order_by("created_at")


def run_due(*, table: Table | None = None, operation: str | None = None, limit: int = 20, on_progress=None,
            owner: str | None = None) -> list[MaintenancePlan]:
    reclaim_expired()
    done = []
    for plan_id in list(due(table=table, operation=operation).values_list("id", flat=True)[:limit]):
        result = run_plan(plan_id, owner=owner, on_progress=on_progress)
        if result is not None:
            done.append(result)
    return done
