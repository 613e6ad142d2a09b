"""What every API view of ucweb shares: body parsing, and an audit row for refused mutations
(successful mutations are audited by the services, inside their transaction)."""

from rest_framework.views import APIView

from catalog.choices import AuditOutcome
from catalog.models import Principal
from catalog.services import audit
from ucweb.errors import InvalidParameter

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


class CatalogAPIView(APIView):
    audit_securable_type = ""

    @staticmethod
    def body(request) -> dict:
        data = request.data
        if data is None or data == {} or (hasattr(data, "dict") and not data):
            return {}
        if not isinstance(data, dict):
            raise InvalidParameter("The request body must be a JSON object.")
        return data

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if request.method not in SAFE_METHODS and response.status_code >= 400:
            caller = getattr(request, "_user", None)
            if isinstance(caller, Principal):
                audit.record(
                    principal=caller.name,
                    action=f"{request.method} {request.path}"[:64],
                    securable_type=self.audit_securable_type,
                    securable_name=str(kwargs.get("full_name") or kwargs.get("name") or "")[:800],
                    outcome=AuditOutcome.DENIED if response.status_code == 403 else AuditOutcome.FAILED,
                    details={"status": response.status_code, "error": getattr(response, "data", None)},
                )
        return response
