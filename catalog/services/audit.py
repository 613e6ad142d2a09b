from catalog.choices import AuditOutcome
from catalog.models import AuditEvent


def event(
    *,
    principal: str,
    action: str,
    securable_type: str = "",
    securable_name: str = "",
    securable_id=None,
    outcome: str = AuditOutcome.SUCCESS,
    details: dict | None = None,
) -> AuditEvent:
    """The event, not saved yet: for a caller that writes it together with other rows."""
    return AuditEvent(
        principal=principal,
        action=action,
        securable_type=securable_type,
        securable_name=securable_name,
        securable_id=securable_id,
        outcome=outcome,
        details=details or {},
    )


def record(**fields) -> AuditEvent:
    """Saves the event `event(**fields)` describes."""
    row = event(**fields)
    row.save(force_insert=True)
    return row
