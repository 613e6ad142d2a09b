import uuid

from django.db import models
from django.utils import timezone

SINKS = ("nats", "webhook")


class ChangeEvent(models.Model):
    """A successful change, as the CloudEvent that announces it: the outbox. Written with its audit
    event in the change's transaction, so a change that rolls back leaves none; delivered to each
    configured sink after it commits (maintenance.change_events), in `sequence` order per
    `partition_key` (the securable), and kept once delivered up to UCWEB_EVENTS_KEEP_DELIVERED."""

    sequence = models.BigAutoField(primary_key=True)
    event_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)  # the CloudEvent id
    time = models.DateTimeField(default=timezone.now)
    type = models.CharField(max_length=64)  # an AuditAction
    subject = models.CharField(max_length=800, blank=True, default="")  # the securable's name
    partition_key = models.CharField(max_length=850)  # its id, else its type and name
    data = models.JSONField(default=dict)
    # Delivery, per sink: when it was acknowledged, how many attempts failed, when to try again.
    nats_delivered_at = models.DateTimeField(null=True, blank=True)
    nats_attempts = models.PositiveIntegerField(default=0)
    nats_retry_at = models.DateTimeField(null=True, blank=True)
    webhook_delivered_at = models.DateTimeField(null=True, blank=True)
    webhook_attempts = models.PositiveIntegerField(default=0)
    webhook_retry_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["sequence"]
        indexes = [
            models.Index(fields=["sequence"], condition=models.Q(nats_delivered_at__isnull=True),
                         name="change_event_nats_pending"),
            models.Index(fields=["sequence"], condition=models.Q(webhook_delivered_at__isnull=True),
                         name="change_event_webhook_pending"),
        ]

    def __str__(self):
        return f"{self.sequence} {self.type} {self.subject}"
