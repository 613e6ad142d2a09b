"""Server-side scan planning: planTableScan, fetchPlanningResult, cancelPlanning, fetchScanTasks
(catalog.services.iceberg_scan)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from catalog.api.iceberg import wire
from catalog.api.iceberg.base import DELEGATION, ERRORS, NO_CONTENT, TAGS, IcebergView, delegation
from catalog.choices import AuditAction
from catalog.services import iceberg_scan

PLANNING = (
    "Planned at once (status completed): the data files of the snapshot that may hold rows matching "
    "`filter`, pruned by partition values and column statistics, each with the position deletes "
    "that apply to it and its residual filter. UCWEB_SCAN_PLAN_PAGE_SIZE file scan tasks (1000) are "
    "answered inline; the others through `plan-tasks` (fetchScanTasks). The plan id and its plan "
    "tasks answer for the principal that planned, for UCWEB_SCAN_PLAN_LIFETIME_SECONDS (3600). "
    "A filter or selection naming a field the schema lacks is a 400; a body over the request "
    "limit a 413; incremental scans and tables with equality deletes are a 501. With "
    "`X-Iceberg-Access-Delegation: vended-credentials` on S3, `storage-credentials` holds "
    "read-only keys for the deepest folder of the table holding every file of the plan."
)
NO_PLAN = "An unknown, expired, cancelled or another principal's plan id answers 404 NoSuchPlanIdException."


class PlanView(IcebergView):
    audit_actions = {"POST": AuditAction.PLAN_ICEBERG_SCAN}

    @extend_schema(tags=TAGS, operation_id="planTableScan", request=wire.IcebergPlanTableScanRequest,
                   responses={200: wire.IcebergPlanTableScanResult, **ERRORS}, parameters=[DELEGATION],
                   description=PLANNING)
    def post(self, request, prefix, namespace, table):
        return Response(iceberg_scan.plan_scan(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                                               body=self.body(request), delegation=delegation(request)))


class PlanResultView(IcebergView):
    audit_actions = {"GET": AuditAction.FETCH_ICEBERG_SCAN_PLAN, "DELETE": AuditAction.CANCEL_ICEBERG_SCAN_PLAN}

    @extend_schema(tags=TAGS, operation_id="fetchPlanningResult", parameters=[DELEGATION],
                   responses={200: wire.IcebergPlanTableScanResult, **ERRORS}, description=NO_PLAN)
    def get(self, request, prefix, namespace, table, plan_id):
        return Response(iceberg_scan.fetch_plan(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                                                plan_id=plan_id, delegation=delegation(request)))

    @extend_schema(tags=TAGS, operation_id="cancelPlanning", responses={204: NO_CONTENT, **ERRORS},
                   description=NO_PLAN)
    def delete(self, request, prefix, namespace, table, plan_id):
        iceberg_scan.cancel_plan(caller=request.user, prefix=prefix, namespace=namespace, name=table, plan_id=plan_id)
        return Response(status=204)


class TasksView(IcebergView):
    audit_actions = {"POST": AuditAction.FETCH_ICEBERG_SCAN_TASKS}

    @extend_schema(tags=TAGS, operation_id="fetchScanTasks", request=wire.IcebergFetchScanTasksRequest,
                   responses={200: wire.IcebergFetchScanTasksResult, **ERRORS},
                   description="The file scan tasks of one plan task. " + NO_PLAN.replace(
                       "plan id", "plan task").replace("NoSuchPlanIdException", "NoSuchPlanTaskException"))
    def post(self, request, prefix, namespace, table):
        return Response(iceberg_scan.fetch_tasks(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                                                 body=self.body(request)))
