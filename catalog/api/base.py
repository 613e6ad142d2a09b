"""What every API view of ucweb shares: body parsing, and an audit row for refused mutations
(successful mutations are audited by the services, inside their transaction)."""

from rest_framework.views import APIView

from catalog.choices import AuditOutcome
from catalog.models import Principal
from catalog.services import audit
from ucweb.errors import InvalidParameter

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}


def _has_nul(text) -> bool:
    return isinstance(text, str) and "\x00" in text


def _printable(value):
    """The audit log is stored in PostgreSQL, which refuses NUL in text and jsonb."""
    if isinstance(value, str):
        return value.replace("\x00", "\\x00")
    if isinstance(value, dict):
        return {_printable(k): _printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_printable(item) for item in value]
    return value


class CatalogAPIView(APIView):
    audit_securable_type = ""

    def initial(self, request, *args, **kwargs):
        """After authentication: no name, full name or query parameter may hold a NUL character
        (nothing can be named that, and the database refuses it)."""
        super().initial(request, *args, **kwargs)
        if any(_has_nul(value) for value in kwargs.values()):
            raise InvalidParameter("Names in the path must not contain NUL characters.")
        for key, values in request.query_params.lists():
            if _has_nul(key) or any(_has_nul(value) for value in values):
                raise InvalidParameter(f"Query parameter {_printable(key)!r} must not contain NUL characters.")

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
                    action=_printable(f"{request.method} {request.path}")[:64],
                    securable_type=self.audit_securable_type,
                    securable_name=_printable(str(kwargs.get("full_name") or kwargs.get("name") or ""))[:800],
                    outcome=AuditOutcome.DENIED if response.status_code == 403 or getattr(
                        response, "hidden_refusal", False) else AuditOutcome.FAILED,
                    details={"status": response.status_code, "error": _printable(getattr(response, "data", None))},
                )
        return response
