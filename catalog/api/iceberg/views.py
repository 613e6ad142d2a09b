"""Iceberg views (the resource, not Django views): the table endpoints with `view_objects = True`,
and registering a view's existing metadata."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view

from catalog.choices import AuditAction
from catalog.api.iceberg import wire
from catalog.api.iceberg.base import CONFLICT, ERRORS, JSON_OBJECT, TAGS, IcebergView, table_result
from catalog.api.iceberg.tables import RenameTableView, TablesView, TableView
from commits import iceberg_external


@extend_schema_view(post=extend_schema(request=wire.IcebergCreateView,
                                        responses={200: wire.IcebergLoadViewResult, **CONFLICT}))
class ViewsView(TablesView):
    view_objects = True
    audit_actions = {"POST": AuditAction.CREATE_ICEBERG_VIEW}


@extend_schema_view(
    get=extend_schema(responses={200: wire.IcebergLoadViewResult, **ERRORS}),
    post=extend_schema(request=wire.IcebergCommitView, responses={200: wire.IcebergLoadViewResult, **CONFLICT}))
class ViewView(TableView):
    view_objects = True
    audit_actions = {"POST": AuditAction.REPLACE_ICEBERG_VIEW, "DELETE": AuditAction.DROP_ICEBERG_VIEW}


class RegisterViewView(IcebergView):
    audit_actions = {"POST": AuditAction.REGISTER_ICEBERG_VIEW}

    @extend_schema(tags=TAGS, operation_id="registerView", responses=JSON_OBJECT,
                   request=wire.RegisterViewRequest)
    def post(self, request, prefix, namespace):
        return table_result(iceberg_external.register_view(caller=request.user, prefix=prefix, namespace=namespace,
                                                           body=self.body(request)))


class RenameViewView(RenameTableView):
    view_objects = True
    audit_actions = {"POST": AuditAction.RENAME_ICEBERG_VIEW}
