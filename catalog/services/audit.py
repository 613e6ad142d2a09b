from catalog.choices import AuditOutcome
from catalog.models import AuditEvent


def record(
    *,
    principal: str,
    action: str,
    securable_type: str = "",
    securable_name: str = "",
    securable_id=None,
    outcome: str = AuditOutcome.SUCCESS,
    details: dict | None = None,
) -> AuditEvent:
    return AuditEvent.objects.create(
        principal=principal,
        action=action,
        securable_type=securable_type,
        securable_name=securable_name,
        securable_id=securable_id,
        outcome=outcome,
        details=details or {},
    )
