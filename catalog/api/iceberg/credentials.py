"""Credential vending and the S3 signer of remote signing."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.response import Response

from catalog.choices import AuditAction
from catalog.api.iceberg import wire
from catalog.api.iceberg.base import ERRORS, JSON_OBJECT, TAGS, IcebergView
from catalog.services import iceberg_credentials


class CredentialsView(IcebergView):
    audit_actions = {"GET": AuditAction.VEND_ICEBERG_CREDENTIALS}

    @extend_schema(tags=TAGS, operation_id="loadCredentials", responses={200: wire.IcebergLoadCredentialsResponse, **ERRORS})
    def get(self, request, prefix, namespace, table):
        return Response(iceberg_credentials.load_credentials(caller=request.user, prefix=prefix, namespace=namespace,
                                                             name=table))


class SignView(IcebergView):
    """The S3 signer of remote signing: signs one S3 request for objects of this table."""

    audit_actions = {"POST": AuditAction.SIGN_ICEBERG_REQUEST}

    @extend_schema(
        tags=TAGS, operation_id="signRequest", responses=JSON_OBJECT,
        request=wire.RemoteSignRequest,
    )
    def post(self, request, prefix, namespace, table, staged=None):
        signed = iceberg_credentials.sign_request(caller=request.user, prefix=prefix, namespace=namespace, name=table,
                                                  body=self.body(request), staged=staged)
        response = Response(signed)
        response["Cache-Control"] = "no-cache"
        return response


@extend_schema_view(post=extend_schema(operation_id="signStagedRequest"))
class StagedSignView(SignView):
    """The signer endpoint handed out by stage-create: objects of a table not yet committed."""
