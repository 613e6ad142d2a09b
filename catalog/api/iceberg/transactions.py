"""Multi-table commits: all tables or none."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from catalog.choices import AuditAction
from catalog.api.iceberg import wire
from catalog.api.iceberg.base import COMMIT_RULES, CONFLICT, NO_CONTENT, TAGS, IcebergView
from commits import engine


class TransactionsView(IcebergView):
    audit_actions = {"POST": AuditAction.COMMIT_ICEBERG_TABLE}

    @extend_schema(tags=TAGS, operation_id="commitTransaction", responses={204: NO_CONTENT, **CONFLICT},
                   request=wire.IcebergCommitTransaction,
                   description=COMMIT_RULES)
    def post(self, request, prefix):
        engine.commit_transaction(caller=request.user, prefix=prefix, body=self.body(request))
        return Response(status=204)
