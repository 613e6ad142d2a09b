"""What every console page shares: who the logged-in user acts as, and how a change is handed
to a service (its validation, its authorization and its audit event) and its answer shown."""

from __future__ import annotations

from django.contrib import messages
from django.db import DatabaseError

from catalog.choices import AuditOutcome
from catalog.models import Principal
from catalog.services import audit, principals
from ucweb.errors import CatalogError


def console_principal(request) -> Principal:
    """The catalog principal a console user acts as: the principal of the same name. A Django
    superuser without one gets one that is a metastore admin; any other staff user gets a plain
    principal whose grants decide what the console lets it do, as the APIs would. An existing
    principal is used as it is (never promoted by logging in)."""
    name = request.user.get_username()
    principal = Principal.objects.filter(name=name).first()
    if principal is None:
        principal = principals.ensure_principal(
            name=name, admin=bool(request.user.is_superuser), actor=f"console:{name}")
    return principal


def run(request, call, *, success: str, action: str, securable_type: str = "", securable_name: str = "",
        securable_id=None) -> bool:
    """Calls a service as the console user's principal; shows `success`, or the service's refusal,
    as a message. A refusal is audited like a refused API request, naming the securable. True when
    the change went through."""
    caller = console_principal(request)
    try:
        call(caller)
    except CatalogError as exc:
        messages.error(request, exc.message)
        audit.record(
            principal=caller.name, action=action, securable_type=securable_type, securable_name=securable_name,
            securable_id=securable_id, outcome=AuditOutcome.DENIED if exc.status == 403 else AuditOutcome.FAILED,
            details={"error": exc.error_code, "message": exc.message, "via": "console"},
        )
        return False
    except DatabaseError:
        messages.error(request, "The database refused the change; nothing was changed.")
        return False
    messages.success(request, success)
    return True
