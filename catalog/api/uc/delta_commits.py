"""Catalog-managed Delta commits: /delta/commits, /delta/commit, /delta/metrics (seed 000) and
/delta/preview/commits (what the Unity Catalog SDK and the Delta connectors call)."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from catalog.choices import AuditAction
from catalog.api.base import CatalogAPIView
from catalog.api.uc.serializers import Empty
from commits import delta, delta_transactions, delta_wire, transaction_wire
from ucweb.openapi import query_parameters
from ucweb.renderers import PlainJSONRenderer


class DeltaCommitsView(CatalogAPIView):
    """GET lists ratified commits; POST ratifies and/or records publication."""

    audit_securable_type = "table"
    renderer_classes = [PlainJSONRenderer]
    audit_actions = {"POST": AuditAction.COMMIT_DELTA}

    @extend_schema(
        operation_id="getDeltaCommits", tags=["DeltaCommits"], parameters=query_parameters(delta_wire.DeltaGetCommitsParameters),
        responses=delta_wire.DeltaGetCommitsResponse,
        description="Ratified commits of a catalog-managed Delta table within [start_version, "
        "end_version], and latest_table_version (-1 for a table this catalog does not manage). "
        "Parameters come from the JSON body (as Delta clients send them) or the query string.",
    )
    def get(self, request):
        params = {**request.query_params.dict(), **self.body(request)}
        return Response(delta.get_commits(caller=request.user, params=params))

    @extend_schema(
        operation_id="writeDeltaCommit", tags=["DeltaCommits"], request=delta_wire.DeltaCommitRequest, responses=Empty,
        description="Ratifies commit_info.version (it must be the latest version + 1; 409 "
        "ALREADY_EXISTS when another writer took it) and/or records latest_published_version. "
        "The staged file `_delta_log/_staged_commits/<file_name>` must exist, be a Delta commit "
        "and have `file_size` bytes (400 INVALID_PARAMETER_VALUE otherwise); the maintenance "
        "policy is checked against its `commitInfo.operation`, and the catalog publishes only "
        "the bytes it ratified. Changing a `ucweb.maintenance.*` property through "
        "`metadata.properties` needs the table's owner or a metastore admin (403 otherwise).",
    )
    def post(self, request):
        delta.write_commit(caller=request.user, body=self.body(request))
        return Response({})


class DeltaTransactionView(CatalogAPIView):
    """POST ratifies commits to several tables: all of them or none."""

    audit_actions = {"POST": AuditAction.COMMIT_DELTA_TRANSACTION}

    @extend_schema(
        operation_id="commitDeltaTransaction", tags=["DeltaCommits"], request=transaction_wire.DeltaTransactionRequest,
        responses=transaction_wire.DeltaTransactionResponse,
        description="Ratifies a commit request (as POST /delta/preview/commits takes it) for each of up to 1000 "
        "tables, all in one database transaction: every table's checks apply, and any refusal (named "
        "`commits[i] (table <id>): ...`) leaves every table as it was. The same table twice, or more than "
        "1000 tables, is 400. The same transaction_id with the same body is answered as the first time "
        "and ratifies nothing again; with another body it is 409 ABORTED. See docs/unity-catalog.md.",
    )
    def post(self, request):
        return Response(delta_transactions.commit_preview(caller=request.user, body=self.body(request)))


class DeltaMetricsView(CatalogAPIView):
    audit_securable_type = "table"
    audit_actions = {"POST": AuditAction.REPORT_METRICS}

    @extend_schema(operation_id="writeDeltaMetrics", tags=["DeltaCommits"], request=delta_wire.DeltaMetricsRequest,
                   responses=Empty)
    def post(self, request):
        delta.write_metrics(caller=request.user, body=self.body(request))
        return Response({})
