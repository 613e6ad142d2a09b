from catalog.choices import AuditAction, AuditOutcome, SecurableType
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
    """The event, not saved yet: for a caller that writes it together with other rows. `action` is
    one of AuditAction's: a name outside the vocabulary is a bug, refused here."""
    return AuditEvent(
        principal=principal,
        action=AuditAction(action).value,
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


def change_of(securable_type: str, change: str) -> AuditAction:
    """The action a `change` ("update" or "delete") of a securable of this type is recorded as:
    `updateTable`, `deleteRegisteredModel`..."""
    return AuditAction(change + SecurableType(securable_type).title().replace("_", ""))
