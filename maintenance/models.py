from django.db import models


class PurgeRequest(models.Model):
    """Files that must go: the storage of a dropped managed table or volume, or of an abandoned
    staging table. The row is written in the transaction that drops the securable, so a purge is
    never forgotten; workers retry it until `done_at` is set."""

    url = models.TextField()
    reason = models.CharField(max_length=255)
    requested_at = models.DateTimeField(auto_now_add=True, db_index=True)
    requested_by = models.CharField(max_length=255, blank=True, default="")
    attempts = models.IntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    files_deleted = models.IntegerField(default=0)
    done_at = models.DateTimeField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["-requested_at"]

    def __str__(self):
        return f"purge {self.url} ({'done' if self.done_at else 'pending'})"
