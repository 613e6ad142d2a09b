"""Multi-table commits: all tables or none."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from catalog.api.iceberg.base import COMMIT_RULES, NO_CONTENT, TAGS, IcebergView
from catalog.services import iceberg

class TransactionsView(IcebergView):
    @extend_schema(tags=TAGS, operation_id="commitTransaction", responses={204: NO_CONTENT}, request=None,
                   description=COMMIT_RULES)
    def post(self, request, prefix):
        iceberg.commit_transaction(caller=request.user, prefix=prefix, body=self.body(request))
        return Response(status=204)
