from django.db.models import Model

from catalog import statements
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
    """Saves the rows `rows(**fields)` describes, together (the audit event and its change event
    are never written one without the other): in the caller's transaction, else on their own, in
    one statement written once per process (catalog.statements; every refused request records
    one, so its cost is every refusal's). The event gets no primary key back."""
    written = rows(**fields)
    statements.insert_all(written)
    return written[0]


def change_of(securable_type: str, change: str) -> AuditAction:
    """The action a `change` ("update" or "delete") of a securable of this type is recorded as:
    `updateTable`, `deleteRegisteredModel`..."""
    return AuditAction(change + SecurableType(securable_type).title().replace("_", ""))
