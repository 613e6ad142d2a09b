from django.db import transaction
from django.db.models import Model

from catalog.choices import AuditAction, AuditOutcome, SecurableType
from catalog.models import AuditEvent
from catalog.services import change_events


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


def rows(**fields) -> list[Model]:
    """The event `event(**fields)` describes and, for a successful change, its change event (the
    outbox row, catalog.services.change_events): unsaved, for a caller that writes them together
    with other rows in the change's transaction."""
    row = event(**fields)
    return [row, *change_events.outbox(row)]


def record(**fields) -> AuditEvent:
    """Saves the rows `rows(**fields)` describes, together: in the caller's transaction, else in
    one of their own (the audit event and its change event are never written one without the other)."""
    audit_event, *outbox = rows(**fields)
    if not outbox:
        audit_event.save(force_insert=True)
        return audit_event
    with transaction.atomic(savepoint=False):  # no savepoint: the caller's transaction is theirs too
        audit_event.save(force_insert=True)
        for row in outbox:
            row.save(force_insert=True)
    return audit_event


def change_of(securable_type: str, change: str) -> AuditAction:
    """The action a `change` ("update" or "delete") of a securable of this type is recorded as:
    `updateTable`, `deleteRegisteredModel`..."""
    return AuditAction(change + SecurableType(securable_type).title().replace("_", ""))
