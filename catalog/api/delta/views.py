"""Thin views of the UC Delta REST API: parse, call one function of commits.delta_v1, render.
Authorization and every rule live there; errors leave in the Delta envelope (catalog.api.delta.errors)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from catalog.choices import AuditAction
from catalog.api.base import CatalogAPIView
from catalog.api.delta import errors
from commits import delta_transactions, delta_v1, transaction_wire
from commits.delta_v1 import update_wire, wire as bodies
from ucweb.renderers import PlainJSONRenderer

TAGS = ["Delta REST API (managed tables spec 1.0)"]
ERROR = OpenApiResponse(OpenApiTypes.OBJECT, description='{"error": {"type": ..., "code": ..., "message": ...}}')
NO_CONTENT = OpenApiResponse(description="No content.")


def operation(name: str, body, *refusals: int, status: int = 200, **schema):
    """The OpenAPI of operation `delta<name>`: `body` with `status`, and the Delta error envelope
    for each refusal."""
    return extend_schema(operation_id=f"delta{name}", tags=TAGS,
                         responses={status: body, **dict.fromkeys(refusals, ERROR)}, **schema)


OPERATION = OpenApiParameter("operation", str, enum=["READ", "READ_WRITE"], required=True)


class DeltaView(CatalogAPIView):
    """Every view of the Delta API answers errors in the Delta envelope."""

    audit_securable_type = "table"
    renderer_classes = [PlainJSONRenderer]

    def get_exception_handler(self):
        return errors.exception_handler


class ConfigView(DeltaView):
    @operation("GetConfig", bodies.DeltaCatalogConfig, 400, 404,
               parameters=[OpenApiParameter("catalog", str, required=True),
                           OpenApiParameter("protocol-versions", str, required=True,
                                            description="Comma-separated, e.g. 1.0")])
    def get(self, request):
        return Response(delta_v1.get_config(caller=request.user, catalog=request.query_params.get("catalog"),
                                            protocol_versions=request.query_params.get("protocol-versions")))


class StagingTablesView(DeltaView):
    audit_actions = {"POST": AuditAction.CREATE_STAGING_TABLE}

    @operation("CreateStagingTable", bodies.DeltaStagingTableResponse, 400, 403, 404, 409,
               request=bodies.DeltaCreateStagingTableRequest)
    def post(self, request, catalog, schema):
        return Response(delta_v1.create_staging_table(caller=request.user, catalog=catalog, schema=schema,
                                                      body=self.body(request)))


class TablesView(DeltaView):
    audit_actions = {"POST": AuditAction.CREATE_TABLE}

    @operation("ListTables", bodies.DeltaListTablesResponse, 403, 404,
               parameters=[OpenApiParameter("max-results", int), OpenApiParameter("page-token", str)])
    def get(self, request, catalog, schema):
        return Response(delta_v1.list_tables(
            caller=request.user, catalog=catalog, schema=schema,
            max_results=request.query_params.get("max-results"), page_token=request.query_params.get("page-token")))

    @operation("CreateTable", bodies.DeltaLoadTableResponse, 400, 403, 404, 409, request=bodies.DeltaCreateTableRequest)
    def post(self, request, catalog, schema):
        return Response(delta_v1.create_table(caller=request.user, catalog=catalog, schema=schema,
                                              body=self.body(request)))


class TableView(DeltaView):
    audit_actions = {"POST": AuditAction.UPDATE_DELTA_TABLE, "DELETE": AuditAction.DELETE_TABLE}

    @operation("LoadTable", bodies.DeltaLoadTableResponse, 400, 403, 404)
    def get(self, request, catalog, schema, table):
        return Response(delta_v1.load_table(caller=request.user, catalog=catalog, schema=schema, name=table))

    @operation("UpdateTable", bodies.DeltaLoadTableResponse, 400, 403, 404, 409, 429,
               request=update_wire.DeltaUpdateTableRequest,
               description="Requirements and updates apply atomically. Replaying an accepted add-commit (same "
               "version and file-name) is a whole-request no-op answered 200. At the bound of unbackfilled "
               "commits the server publishes the oldest ones itself; 429 only when it cannot.")
    def post(self, request, catalog, schema, table):
        return Response(delta_v1.update_table(caller=request.user, catalog=catalog, schema=schema, name=table,
                                              body=self.body(request)))

    @operation("DeleteTable", NO_CONTENT, 403, 404, status=204)
    def delete(self, request, catalog, schema, table):
        delta_v1.delete_table(caller=request.user, catalog=catalog, schema=schema, name=table)
        return Response(status=204)

    @operation("TableExists", NO_CONTENT, 404, status=204)
    def head(self, request, catalog, schema, table):
        delta_v1.table_exists(caller=request.user, catalog=catalog, schema=schema, name=table)
        return Response(status=204)


class TableCredentialsView(DeltaView):
    audit_actions = {"GET": AuditAction.GENERATE_TEMPORARY_TABLE_CREDENTIALS}

    @operation("GetTableCredentials", bodies.DeltaCredentialsResponse, 400, 403, 404, parameters=[OPERATION])
    def get(self, request, catalog, schema, table):
        return Response(delta_v1.table_credentials(caller=request.user, catalog=catalog, schema=schema, name=table,
                                                   operation=request.query_params.get("operation")))


class MetricsView(DeltaView):
    audit_actions = {"POST": AuditAction.REPORT_METRICS}

    @operation("ReportMetrics", NO_CONTENT, 400, 403, 404, status=204, request=bodies.DeltaReportMetricsRequest)
    def post(self, request, catalog, schema, table):
        delta_v1.report_metrics(caller=request.user, catalog=catalog, schema=schema, name=table,
                                body=self.body(request))
        return Response(status=204)


class RenameView(DeltaView):
    audit_actions = {"POST": AuditAction.RENAME_TABLE}

    @operation("RenameTable", NO_CONTENT, 400, 403, 404, 409, status=204, request=bodies.DeltaRenameTableRequest)
    def post(self, request, catalog, schema, table):
        delta_v1.rename_table(caller=request.user, catalog=catalog, schema=schema, name=table,
                              body=self.body(request))
        return Response(status=204)


class StagingCredentialsView(DeltaView):
    audit_actions = {"GET": AuditAction.GENERATE_TEMPORARY_TABLE_CREDENTIALS}

    @operation("GetStagingTableCredentials", bodies.DeltaCredentialsResponse, 403, 404)
    def get(self, request, table_id):
        return Response(delta_v1.staging_table_credentials(caller=request.user, table_id=table_id))


class PathCredentialsView(DeltaView):
    audit_actions = {"GET": AuditAction.GENERATE_TEMPORARY_PATH_CREDENTIALS}

    @operation("GetTemporaryPathCredentials", bodies.DeltaCredentialsResponse, 400, 403,
               parameters=[OpenApiParameter("location", str, required=True), OPERATION])
    def get(self, request):
        return Response(delta_v1.path_credentials(caller=request.user, location=request.query_params.get("location"),
                                                  operation=request.query_params.get("operation")))


class TransactionView(DeltaView):
    audit_securable_type = ""
    audit_actions = {"POST": AuditAction.COMMIT_DELTA_TRANSACTION}

    @operation("CommitTransaction", transaction_wire.DeltaCommitTransactionResponse, 400, 403, 404, 409, 429,
               request=transaction_wire.DeltaCommitTransactionRequest,
               description="updateTable requests for up to 1000 tables, applied in one database transaction: every "
               "table's requirements and checks apply, and any refusal (named `table-changes[i] (<catalog>.<schema>."
               "<table>): ...`) leaves every table as it was. The same table twice, or more than 1000 tables, is 400. "
               "The same transaction-id with the same body is answered as the first time and changes nothing again; "
               "with another body it is 409. See docs/unity-catalog.md.")
    def post(self, request):
        return Response(delta_transactions.commit_v1(caller=request.user, body=self.body(request)))
