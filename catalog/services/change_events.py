"""Change events, the writing half: the outbox row a successful change adds to its transaction.

Every change the audit trail records as a success becomes one event; reads that hand out access
to data (vended credentials, signed requests), metric reports and refusals do not. Nothing is
written while no sink is configured (UCWEB_EVENTS_NATS_URL, UCWEB_EVENTS_WEBHOOK_URL). The
maintenance app delivers the rows once the transaction commits (catalog.signals)."""

from django.conf import settings
from django.db import transaction

from catalog.choices import AuditAction, AuditOutcome
from catalog.models import AuditEvent, ChangeEvent
from catalog.signals import change_events_written

NOT_CHANGES = frozenset({
    AuditAction.GENERATE_TEMPORARY_TABLE_CREDENTIALS,
    AuditAction.GENERATE_TEMPORARY_VOLUME_CREDENTIALS,
    AuditAction.GENERATE_TEMPORARY_PATH_CREDENTIALS,
    AuditAction.GENERATE_TEMPORARY_MODEL_VERSION_CREDENTIALS,
    AuditAction.VEND_ICEBERG_CREDENTIALS,
    AuditAction.SIGN_ICEBERG_REQUEST,
    AuditAction.PLAN_ICEBERG_SCAN,
    AuditAction.FETCH_ICEBERG_SCAN_PLAN,
    AuditAction.FETCH_ICEBERG_SCAN_TASKS,
    AuditAction.CANCEL_ICEBERG_SCAN_PLAN,
    AuditAction.REPORT_METRICS,
    AuditAction.PREVIEW_TABLE,
})


def enabled() -> bool:
    return bool(settings.UCWEB_EVENTS_NATS_URL or settings.UCWEB_EVENTS_WEBHOOK_URL)


def is_change(audit_event: AuditEvent) -> bool:
    return audit_event.outcome == AuditOutcome.SUCCESS and audit_event.action not in NOT_CHANGES


def outbox(audit_event: AuditEvent) -> list[ChangeEvent]:
    """The change event of `audit_event` (unsaved, for the same transaction), or none."""
    if not (enabled() and is_change(audit_event)):
        return []
    securable_id = str(audit_event.securable_id) if audit_event.securable_id else None
    transaction.on_commit(_announce)
    return [ChangeEvent(
        type=audit_event.action,
        subject=audit_event.securable_name,
        partition_key=securable_id or f"{audit_event.securable_type}:{audit_event.securable_name}",
        data={
            "principal": audit_event.principal,
            "action": audit_event.action,
            "securable_type": audit_event.securable_type,
            "securable_name": audit_event.securable_name,
            "securable_id": securable_id,
            "details": audit_event.details,
        },
    )]


def _announce() -> None:
    change_events_written.send(sender=ChangeEvent)


def delivery_state() -> list[dict]:
    """Every event the outbox still holds, oldest first, with its delivery to each sink: what
    an operator or a test reads to see that each event went out once per id."""
    return list(ChangeEvent.objects.order_by("sequence").values(
        "sequence", "event_id", "type", "subject", "partition_key", "time",
        "nats_delivered_at", "nats_attempts", "webhook_delivered_at", "webhook_attempts", "last_error"))
