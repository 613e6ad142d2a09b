"""What every API view of ucweb shares: body parsing, and an audit row for refused mutations
(successful mutations are audited by the services, inside their transaction)."""

from django.core.exceptions import ImproperlyConfigured
from rest_framework.views import APIView

from catalog.authz import describe, type_of
from catalog.choices import AuditAction, AuditOutcome, SecurableType
from catalog.models import Principal
from catalog.services import audit
from ucweb.errors import InvalidParameter

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
_SECURABLE_TYPES = frozenset(SecurableType.values)  # the property makes a new list at each read


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


MUTATING = ("post", "put", "patch", "delete")


def _type_of(securable) -> str:
    """The securable type of a refused row; "" for a row that is no securable (a model version)."""
    try:
        return type_of(securable)
    except ValueError:
        return ""


class CatalogAPIView(APIView):
    audit_securable_type = ""
    # What each method's request is recorded as (AuditAction), refused or not: the services record
    # the successes under the same names. Every mutating method has one (checked as the class is
    # made); a read has one when it hands out access to data (credentials), and then its refusals
    # are recorded too.
    audit_actions: dict[str, AuditAction] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        unnamed = [method.upper() for method in MUTATING
                   if hasattr(cls, method) and method.upper() not in cls.audit_actions]
        if unnamed and cls.audit_action is CatalogAPIView.audit_action:
            raise ImproperlyConfigured(f"{cls.__name__} names no audit action for {', '.join(unnamed)}.")
        for action in cls.audit_actions.values():
            AuditAction(action)

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
        if response.status_code >= 400:
            action = self.audit_action(request)
            caller = getattr(request, "_user", None)
            if action is not None and isinstance(caller, Principal):
                self._audit_refusal(request, response, kwargs, caller=caller, action=action)
        return response

    def audit_action(self, request) -> AuditAction | None:
        """What this request is recorded as; None for a read that hands out no access to data."""
        return self.audit_actions.get(request.method)

    def _audit_refusal(self, request, response, kwargs, *, caller: Principal, action: AuditAction) -> None:
        securable = getattr(response, "refused_securable", None)
        named_type, named = self.refused_securable(request, kwargs)
        if securable is not None:  # on the trail of the securable it was refused on (a container, for a create)
            securable_type, securable_name, securable_id = _type_of(securable), describe(securable), securable.pk
        else:
            securable_type, securable_name, securable_id = named_type, named, None
        audit.record(
            principal=caller.name,
            action=action,
            securable_type=securable_type,
            securable_name=_printable(securable_name)[:800],
            securable_id=securable_id,
            outcome=AuditOutcome.DENIED if response.status_code == 403 or getattr(
                response, "hidden_refusal", False) else AuditOutcome.FAILED,
            details={"status": response.status_code, "method": request.method, "named": _printable(named)[:800],
                     "path": _printable(request.path), "error": _printable(getattr(response, "data", None))},
        )

    def refused_securable(self, request, kwargs) -> tuple[str, str]:
        """The securable a refused request was about, from its path or its body: the full name in
        the path, the Iceberg prefix, namespace and table, the Delta API's catalog, schema and table,
        or the names a create request sent."""
        securable_type = kwargs.get("securable_type") or self.audit_securable_type
        if securable_type not in _SECURABLE_TYPES:  # only a known type is recorded as one
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
