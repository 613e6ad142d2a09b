"""Apache Polaris policies: a named, versioned rule set that lives in a namespace (a schema) and is
attached to a catalog, a namespace or a table. What a policy means for a table is resolved by
`catalog.services.policies.effective_policies`."""

import uuid

from django.db import models
from django.db.models.signals import post_delete
from django.dispatch import receiver

from catalog.choices import PolicyTargetType, PolicyType

from .base import SchemaSecurable
from .namespace import Catalog, Schema, Table


class Policy(SchemaSecurable):
    """`content` is the text the client sent (JSON for the system types); `version` starts at 0
    and grows by one on every update. `comment` holds the policy's description."""

    schema = models.ForeignKey(Schema, on_delete=models.CASCADE, related_name="policies")
    name = models.CharField(max_length=255)
    policy_type = models.CharField(max_length=64, choices=PolicyType.choices)
    content = models.TextField(blank=True, default="")
    version = models.BigIntegerField(default=0)

    class Meta(SchemaSecurable.Meta):
        verbose_name_plural = "policies"

    @property
    def inheritable(self) -> bool:
        return self.policy_type in PolicyType.values


class PolicyAttachment(models.Model):
    """A policy attached to one target: exactly one of catalog, schema and table is set (the
    target's row; the attachment goes when the target goes). `target_id` repeats that row's id so
    that "one policy of a type per target" is a database constraint."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="attachments")
    policy_type = models.CharField(max_length=64, choices=PolicyType.choices)
    target_type = models.CharField(max_length=16, choices=PolicyTargetType.choices)
    target_id = models.UUIDField(db_index=True)
    catalog = models.ForeignKey(Catalog, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    schema = models.ForeignKey(Schema, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    table = models.ForeignKey(Table, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    parameters = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["policy", "target_type", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["target_id", "policy_type"], name="uniq_policy_type_per_target"),
        ]

    def __str__(self):
        return f"{self.policy} on {self.target_type} {self.target_name}"

    @property
    def target(self):
        return self.table or self.schema or self.catalog

    @property
    def target_name(self) -> str:
        target = self.target
        return target.full_name if target is not None else str(self.target_id)


@receiver(post_delete, sender=Policy)
def _policy_deleted(sender, instance, **kwargs):
    from catalog.models.governance import Grant

    Grant.objects.filter(securable_id=instance.id).delete()
