"""Server-side scan planning of the Iceberg REST API (planTableScan, fetchPlanningResult,
cancelPlanning, fetchScanTasks).

Planning is a read: it needs what loadTable needs (SELECT or MODIFY on the table and its USE
chain), and a table the caller may not see answers as one that does not exist. The server reads
the snapshot's manifest list and manifests through the catalog's storage (confined to the table's
location), prunes them with pyiceberg's planner for the request's filter, and answers "completed"
at once. A worked example, with a page size of 1000 and 2,500 matching files:

    POST .../tables/t/plan {"filter": ...}
      -> {"status": "completed", "plan-id": "Xy..", "file-scan-tasks": [1000 tasks],
          "plan-tasks": ["Xy...1", "Xy...2"], "storage-credentials": [...]}
    POST .../tables/t/tasks {"plan-task": "Xy...1"} -> {"file-scan-tasks": [1000 tasks]}
    POST .../tables/t/tasks {"plan-task": "Xy...2"} -> {"file-scan-tasks": [500 tasks]}

The plan id is 256 random bits, kept with the principal and the table that planned it until
UCWEB_SCAN_PLAN_LIFETIME_SECONDS pass; an unknown, expired, cancelled or another principal's plan
id (or plan task) answers 404 alike. Expired plans are deleted as new ones are made."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pyiceberg.table.metadata import TableMetadataUtil

from catalog.choices import AuditAction, SecurableType
from catalog.models import Principal, ScanPlan, ScanPlanPage
from catalog.services import audit, iceberg, iceberg_credentials
from catalog.services import iceberg_scan_tasks as tasks
from catalog.storage import StorageError, StorageOutsideRoot, storage_within
from catalog.storage.iceberg_io import ReadOnlyFileIO
from ucweb.errors import InvalidParameter, PlanDoesNotExist, PlanTaskDoesNotExist, TemporarilyUnavailable

PLAN_TASK_SEPARATOR = "."


def _record(caller: Principal, action: AuditAction, table, details: dict) -> None:
    audit.record(principal=caller.name, action=action, securable_type=SecurableType.TABLE,
                 securable_name=table.full_name, securable_id=table.id, details=details)


def _completed(plan: ScanPlan, first_page: dict, credentials: list | None) -> dict:
    answer = {"status": "completed", "plan-id": plan.id, **first_page}
    if plan.pages > 1:
        answer["plan-tasks"] = [f"{plan.id}{PLAN_TASK_SEPARATOR}{number}" for number in range(1, plan.pages)]
    if credentials:
        answer["storage-credentials"] = credentials
    return answer


def _credentials(loaded: iceberg.Loaded, plan: ScanPlan, *, caller: Principal,
                 delegation: iceberg_credentials.Delegation) -> list | None:
    if not plan.credentials_scope:
        return None
    return iceberg_credentials.scan_credentials(loaded, caller=caller, delegation=delegation,
                                                url=plan.credentials_scope)


def _scope(table_location: str, file_pages: list[dict]) -> str:
    """What the plan's keys open: the deepest folder of the table holding every file the plan
    returns (data and delete files), or nothing for a plan without files."""
    paths = [task["data-file"]["file-path"] for page in file_pages for task in page["file-scan-tasks"]]
    paths += [delete["file-path"] for page in file_pages for delete in page.get("delete-files", ())]
    folder = tasks.common_folder(paths)
    if folder is None:
        return ""
    root = table_location.rstrip("/")
    if folder == root or folder.startswith(root + "/"):
        return folder
    return root


def plan_scan(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict,
              delegation: iceberg_credentials.Delegation) -> dict:
    """planTableScan: the first page of the plan, the plan tasks of the others, and (when the
    client asked for vended credentials and the table is on S3) read-only keys for its files."""
    loaded = iceberg.load_table(caller=caller, prefix=prefix, namespace=namespace, name=name)
    table = loaded.table
    if not isinstance(body, dict):
        raise InvalidParameter("The request body must be a JSON object.")
    metadata = TableMetadataUtil.parse_raw(loaded.metadata_json)
    scan = tasks.read_request(body, metadata)
    try:
        root = table.storage_location or metadata.location
        planned = tasks.plan(scan, ReadOnlyFileIO(storage_within(root)), root)
    except StorageOutsideRoot as exc:  # the snapshot is wrong, not the storage: no retry helps
        raise InvalidParameter(f"A manifest of table {table.full_name} lies outside its location; "
                               f"nothing is planned: {exc}") from None
    except (StorageError, OSError) as exc:
        raise TemporarilyUnavailable(f"The manifests of table {table.full_name} could not be read: {exc}") from None
    file_pages = tasks.pages(planned, max(settings.UCWEB_SCAN_PLAN_PAGE_SIZE, 1))
    now = timezone.now()
    plan = ScanPlan(id=secrets.token_urlsafe(32), table=table, principal=caller.name, created_at=now,
                    expires_at=now + timedelta(seconds=settings.UCWEB_SCAN_PLAN_LIFETIME_SECONDS),
                    snapshot_id=scan.snapshot.snapshot_id if scan.snapshot is not None else None,
                    pages=len(file_pages), credentials_scope=_scope(table.storage_location or "", file_pages))
    with transaction.atomic():
        ScanPlan.objects.filter(expires_at__lte=now).delete()
        plan.save(force_insert=True)
        ScanPlanPage.objects.bulk_create(ScanPlanPage(plan=plan, number=number, tasks=page)
                                         for number, page in enumerate(file_pages))
        _record(caller, AuditAction.PLAN_ICEBERG_SCAN, table, {
            "plan_id": plan.id, "snapshot_id": plan.snapshot_id, "files": len(planned), "pages": plan.pages})
    return _completed(plan, file_pages[0], _credentials(loaded, plan, caller=caller, delegation=delegation))


def _live_plan(caller: Principal, table, plan_id) -> ScanPlan | None:
    if not isinstance(plan_id, str) or not plan_id or len(plan_id) > 64 or not plan_id.isprintable():
        return None
    return ScanPlan.objects.filter(id=plan_id, table=table, principal=caller.name,
                                   expires_at__gt=timezone.now()).first()


def fetch_plan(*, caller: Principal, prefix: str, namespace: str, name: str, plan_id: str,
               delegation: iceberg_credentials.Delegation) -> dict:
    """fetchPlanningResult: the completed plan again, with fresh keys."""
    loaded = iceberg.load_table(caller=caller, prefix=prefix, namespace=namespace, name=name)
    plan = _live_plan(caller, loaded.table, plan_id)
    if plan is None:
        raise PlanDoesNotExist(f"Plan {plan_id[:64]} does not exist.")
    first = ScanPlanPage.objects.filter(plan=plan, number=0).first()
    if first is None:  # cancelled meanwhile
        raise PlanDoesNotExist(f"Plan {plan_id[:64]} does not exist.")
    with transaction.atomic():
        _record(caller, AuditAction.FETCH_ICEBERG_SCAN_PLAN, loaded.table, {"plan_id": plan.id})
    return _completed(plan, first.tasks, _credentials(loaded, plan, caller=caller, delegation=delegation))


@transaction.atomic
def cancel_plan(*, caller: Principal, prefix: str, namespace: str, name: str, plan_id: str) -> None:
    """cancelPlanning: the plan and its pages are deleted."""
    table = iceberg.load_table(caller=caller, prefix=prefix, namespace=namespace, name=name).table
    plan = _live_plan(caller, table, plan_id)
    if plan is None:
        raise PlanDoesNotExist(f"Plan {plan_id[:64]} does not exist.")
    plan.delete()
    _record(caller, AuditAction.CANCEL_ICEBERG_SCAN_PLAN, table, {"plan_id": plan_id})


def fetch_tasks(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict) -> dict:
    """fetchScanTasks: the page a plan task names."""
    table = iceberg.load_table(caller=caller, prefix=prefix, namespace=namespace, name=name).table
    plan_task = body.get("plan-task") if isinstance(body, dict) else None
    if not isinstance(plan_task, str) or not plan_task:
        raise InvalidParameter("plan-task is required: a plan task of a planTableScan answer.")
    plan_id, _, number = plan_task.rpartition(PLAN_TASK_SEPARATOR)
    missing = PlanTaskDoesNotExist(f"Plan task {plan_task[:80]} does not exist.")
    if not number.isascii() or not number.isdigit() or len(number) > 9:
        raise missing
    plan = _live_plan(caller, table, plan_id)
    page = ScanPlanPage.objects.filter(plan=plan, number=int(number)).first() if plan is not None else None
    if page is None:
        raise missing
    with transaction.atomic():
        _record(caller, AuditAction.FETCH_ICEBERG_SCAN_TASKS, table, {"plan_task": plan_task})
    return page.tasks
