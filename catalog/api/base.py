"""What every API view of ucweb shares: body parsing, and an audit row for refused mutations
(successful mutations are audited by the services, inside their transaction)."""

from rest_framework.views import APIView

from catalog.choices import AuditOutcome, SecurableType
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
                securable_type, securable_name = self.refused_securable(request, kwargs)
                audit.record(
                    principal=caller.name,
                    action=self.refused_action(request),
                    securable_type=securable_type,
                    securable_name=_printable(securable_name)[:800],
                    outcome=AuditOutcome.DENIED if response.status_code == 403 or getattr(
                        response, "hidden_refusal", False) else AuditOutcome.FAILED,
                    details={"status": response.status_code, "method": request.method,
                             "path": _printable(request.path), "error": _printable(getattr(response, "data", None))},
                )
        return response

    def refused_action(self, request) -> str:
        """A name for the refused request: `POST` on `TablesView` is `postTables`."""
        resource = type(self).__name__.removesuffix("View")
        return _printable(f"{request.method.lower()}{resource}")[:64]

    def refused_securable(self, request, kwargs) -> tuple[str, str]:
        """The securable a refused request was about, from its path or its body: the full name in
        the path, the Iceberg prefix, namespace and table, the Delta API's catalog, schema and table,
        or the names a create request sent."""
        securable_type = kwargs.get("securable_type") or self.audit_securable_type
        if securable_type not in SecurableType.values:  # only a known type is recorded as one
            securable_type = ""
        name = kwargs.get("full_name") or kwargs.get("name")
        if not name and kwargs.get("prefix"):
            levels = [kwargs["prefix"], str(kwargs.get("namespace") or "").replace("\x1f", "."), kwargs.get("table")]
            name = ".".join(str(level) for level in levels if level)
        if not name and kwargs.get("table") and kwargs.get("catalog"):  # Delta: catalogs/{c}/schemas/{s}/tables/{t}
            name = ".".join(str(kwargs.get(level)) for level in ("catalog", "schema", "table"))
        if not name:
            try:
                body = request.data
            except Exception:  # noqa: BLE001 - an unparsable body names nothing
                body = None
            if isinstance(body, dict):
                parts = [body.get("catalog_name"), body.get("schema_name"), body.get("name")]
                if all(isinstance(part, str) for part in parts[2:]):
                    name = ".".join(part for part in parts if isinstance(part, str) and part)
                elif isinstance(body.get("table_id"), str):
                    name = body["table_id"]
        return str(securable_type or ""), str(name or "")
