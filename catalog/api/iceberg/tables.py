"""Tables: list, create, load, commit, drop, register, rename, notifications and metrics.
The view endpoints of views.py are these classes with `view_objects = True`."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from catalog.choices import AuditAction
from catalog.api.iceberg import wire
from catalog.api.iceberg.base import (
    COMMIT_RULES, CONFLICT, DELEGATION, ERRORS, NO_CONTENT, PAGE, TAGS, IcebergView, delegation, identifiers,
    none_match, table_result)
from catalog.services import iceberg, iceberg_credentials
from catalog.services.common import validate_optional_bool
from commits import engine, iceberg_external
from commits import iceberg as iceberg_commits
from ucweb.errors import InvalidParameter


class TablesView(IcebergView):
    view_objects = False
    audit_actions = {"POST": AuditAction.CREATE_ICEBERG_TABLE}

    @extend_schema(tags=TAGS, operation_id="listTables", responses={200: wire.IcebergListTablesResponse, **ERRORS},
                   parameters=PAGE)
    def get(self, request, prefix, namespace):
        return identifiers(request, iceberg.list_tables(caller=request.user, prefix=prefix, namespace=namespace,
                                                        view=self.view_objects))

    @extend_schema(tags=TAGS, operation_id="createTable", responses={200: wire.IcebergLoadTableResult, **CONFLICT},
                   request=wire.IcebergCreateTable, parameters=[DELEGATION])
    def post(self, request, prefix, namespace):
        body = self.body(request)
        if self.view_objects:
            return table_result(iceberg_commits.create_view(caller=request.user, prefix=prefix, namespace=namespace,
                                                            body=body))
        return table_result(iceberg_commits.create_table(caller=request.user, prefix=prefix, namespace=namespace,
                                                         body=body, delegation=delegation(request)))


class TableView(IcebergView):
    view_objects = False
    audit_actions = {"POST": AuditAction.COMMIT_ICEBERG_TABLE, "DELETE": AuditAction.DROP_ICEBERG_TABLE}

    @extend_schema(tags=TAGS, operation_id="loadTable", responses={200: wire.IcebergLoadTableResult, **ERRORS},
                   parameters=[OpenApiParameter("snapshots", str, enum=["all", "refs"]), DELEGATION])
    def get(self, request, prefix, namespace, table):
        snapshots = request.query_params.get("snapshots")
        if snapshots not in (None, "all", "refs"):
            raise InvalidParameter("snapshots must be all or refs.")
        loaded = iceberg_credentials.load_table(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                                                delegation=delegation(request), view=self.view_objects)
        etag = loaded.etag(snapshots)
        if none_match(request.META.get("HTTP_IF_NONE_MATCH"), etag):
            response = HttpResponse(status=304)
            response["ETag"] = etag
            return response
        return table_result(loaded, snapshots=snapshots)

    @extend_schema(tags=TAGS, operation_id="tableExists", responses={204: NO_CONTENT})
    def head(self, request, prefix, namespace, table):
        iceberg.table_exists(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                             view=self.view_objects)
        return Response(status=204)

    @extend_schema(tags=TAGS, operation_id="updateTable", responses={200: wire.IcebergCommitTableResponse, **CONFLICT},
                   request=wire.IcebergCommitTable,
                   description=COMMIT_RULES)
    def post(self, request, prefix, namespace, table):
        body = self.body(request)
        if self.view_objects:
            return table_result(iceberg_commits.replace_view(caller=request.user, prefix=prefix, namespace=namespace,
                                                     name=table, body=body))
        return table_result(engine.commit_table(caller=request.user, prefix=prefix, namespace=namespace,
                                                 name=table, body=body))

    @extend_schema(tags=TAGS, operation_id="dropTable", responses={204: NO_CONTENT},
                   parameters=[OpenApiParameter("purgeRequested", bool)])
    def delete(self, request, prefix, namespace, table):
        purge = validate_optional_bool(request.query_params.get("purgeRequested"), field="purgeRequested")
        iceberg_commits.drop_table(caller=request.user, prefix=prefix, namespace=namespace, name=table, purge=purge,
                           view=self.view_objects)
        return Response(status=204)


class UndropTableView(IcebergView):
    audit_actions = {"POST": AuditAction.UNDROP_TABLE}

    @extend_schema(tags=TAGS, operation_id="undropTable", request=None,
                   responses={204: NO_CONTENT, **CONFLICT},
                   description="Restores the table of this name dropped last within UCWEB_DROP_RETENTION_SECONDS "
                               "(a drop without purgeRequested), with its id, metadata, grants and history: its "
                               "owner or a metastore admin only. 409 when the name or its location is taken.")
    def post(self, request, prefix, namespace, table):
        iceberg.undrop_table(caller=request.user, prefix=prefix, namespace=namespace, name=table)
        return Response(status=204)


class RegisterTableView(IcebergView):
    audit_actions = {"POST": AuditAction.REGISTER_ICEBERG_TABLE}

    @extend_schema(tags=TAGS, operation_id="registerTable", responses={200: wire.IcebergLoadTableResult, **CONFLICT},
                   request=wire.IcebergRegisterTable,
                   parameters=[DELEGATION])
    def post(self, request, prefix, namespace):
        return table_result(iceberg_commits.register_table(caller=request.user, prefix=prefix, namespace=namespace,
                                                           body=self.body(request), delegation=delegation(request)))


class NotificationsView(IcebergView):
    NOTIFIED = {"CREATE": AuditAction.CREATE_TABLE_BY_NOTIFICATION, "UPDATE": AuditAction.UPDATE_TABLE_BY_NOTIFICATION,
                "DROP": AuditAction.DROP_TABLE_BY_NOTIFICATION}

    def audit_action(self, request) -> AuditAction:
        """A notification is recorded as the change it asks for (a VALIDATE, or one the server
        could not read, as notifyTable)."""
        try:
            kind = request.data.get("notification-type") if isinstance(request.data, dict) else None
        except Exception:  # noqa: BLE001 - an unparsable body asks for no change
            kind = None
        return self.NOTIFIED.get(kind, AuditAction.NOTIFY_TABLE) if isinstance(kind, str) else AuditAction.NOTIFY_TABLE

    @extend_schema(
        tags=TAGS, operation_id="sendNotification", responses={204: NO_CONTENT},
        request=wire.NotificationRequest)
    def post(self, request, prefix, namespace, table):
        iceberg_external.send_notification(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                                           body=self.body(request))
        return Response(status=204)


class RenameTableView(IcebergView):
    view_objects = False
    audit_actions = {"POST": AuditAction.RENAME_ICEBERG_TABLE}

    @extend_schema(tags=TAGS, operation_id="renameTable", responses={204: NO_CONTENT, **CONFLICT},
                   request=wire.IcebergRenameTable)
    def post(self, request, prefix):
        iceberg_commits.rename(caller=request.user, prefix=prefix, body=self.body(request), view=self.view_objects)
        return Response(status=204)


class MetricsView(IcebergView):
    audit_actions = {"POST": AuditAction.REPORT_METRICS}

    @extend_schema(tags=TAGS, operation_id="reportMetrics", responses={204: NO_CONTENT, **ERRORS},
                   request=wire.IcebergReportMetrics)
    def post(self, request, prefix, namespace, table):
        iceberg_commits.record_metrics(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                               body=self.body(request))
        return Response(status=204)
