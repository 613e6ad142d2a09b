import uuid

from django.db import models


class Securable(models.Model):
    """Fields every named, owned securable of the namespace shares."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    comment = models.TextField(blank=True, null=True)
    properties = models.JSONField(default=dict, blank=True)
    owner = models.CharField(max_length=255, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=255, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    updated_by = models.CharField(max_length=255, blank=True, null=True)

    class Meta:
        abstract = True
