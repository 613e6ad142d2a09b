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


class TableAlert(models.Model):
    """Something about a table that needs a person: a published Delta file that is not the
    ratified commit, or a ratified commit whose files are gone."""

    class Kind(models.TextChoices):
        PUBLISHED_MISMATCH = "PUBLISHED_MISMATCH", "published file differs from the ratified commit"
        COMMIT_MISSING = "COMMIT_MISSING", "neither the staged nor the published file exists"

    table = models.ForeignKey("catalog.Table", on_delete=models.CASCADE, related_name="alerts")
    version = models.BigIntegerField()
    kind = models.CharField(max_length=32, choices=Kind.choices)
    message = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["table", "version", "kind"], condition=models.Q(resolved_at__isnull=True),
                name="uniq_open_table_alert",
            )
        ]

    def __str__(self):
        return f"{self.table_id} v{self.version}: {self.kind}"


class TableHealth(models.Model):
    """What the commit reports of a table add up to (refreshed by the metrics task)."""

    table = models.OneToOneField("catalog.Table", on_delete=models.CASCADE, primary_key=True, related_name="health")
    files_live = models.BigIntegerField(default=0)
    bytes_live = models.BigIntegerField(default=0)
    small_file_share = models.FloatField(default=0.0, help_text="Share of live files below the small-file size.")
    rows_inserted = models.BigIntegerField(default=0)
    rows_removed = models.BigIntegerField(default=0)
    rows_updated = models.BigIntegerField(default=0)
    commits_last_day = models.IntegerField(default=0)
    last_report_version = models.BigIntegerField(null=True, blank=True)
    histogram = models.JSONField(null=True, blank=True, help_text="The latest file-size histogram reported.")
    commit_rate = models.JSONField(default=list, blank=True, help_text="Commits per hour, last 24 hours.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"health of {self.table_id}"


class MaintenancePlan(models.Model):
    """Maintenance the catalog decided a table needs, and why; then its run.

    A plan goes PLANNED -> RUNNING -> SUCCEEDED / FAILED / SKIPPED. While RUNNING it holds a lease
    (`lease_owner`, `lease_expires_at`) that the runner renews: a worker that dies leaves a lease
    that expires, and the plan is taken again as a new attempt. A failed attempt waits
    `next_attempt_at` (backoff) while it is PLANNED again; after the last attempt it is FAILED.
    At most one plan of a table is RUNNING (a partial unique constraint), whatever the worker."""

    class Operation(models.TextChoices):
        OPTIMIZE = "OPTIMIZE"
        CHECKPOINT = "CHECKPOINT"
        VACUUM = "VACUUM"
        EXPIRE_SNAPSHOTS = "EXPIRE_SNAPSHOTS"
        REMOVE_ORPHANS = "REMOVE_ORPHANS"
        REWRITE_MANIFESTS = "REWRITE_MANIFESTS"

    class Status(models.TextChoices):
        PLANNED = "PLANNED"
        RUNNING = "RUNNING"
        SUCCEEDED = "SUCCEEDED"
        FAILED = "FAILED"
        SKIPPED = "SKIPPED"
        DONE = "DONE"
        DISMISSED = "DISMISSED"

    table = models.ForeignKey("catalog.Table", on_delete=models.CASCADE, related_name="maintenance_plans")
    operation = models.CharField(max_length=32, choices=Operation.choices)
    reason = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PLANNED)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    requested_by = models.CharField(max_length=255, blank=True, default="",
                                    help_text="Who asked for this run (empty: planned by the catalog).")
    attempts = models.IntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    lease_owner = models.CharField(max_length=255, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.TextField(blank=True, default="", help_text="Why it failed or was skipped, or what it did.")
    progress = models.CharField(max_length=255, blank=True, default="")
    before = models.JSONField(null=True, blank=True, help_text="Files, bytes, small-file share, versions or snapshots.")
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["table", "operation"], condition=models.Q(status="PLANNED"), name="uniq_planned_operation",
            ),
            models.UniqueConstraint(
                fields=["table"], condition=models.Q(status="RUNNING"), name="uniq_running_table",
            ),
        ]

    def __str__(self):
        return f"{self.operation} {self.table_id}"

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class ProcessHeartbeat(models.Model):
    """A background process saying it is alive: a Celery worker (every few seconds, from a thread of
    its own, with what its maintenance engine can do) or a beat scheduler (at its ticks). The web
    server reads these rows to answer readiness; it never asks the processes themselves."""

    class Kind(models.TextChoices):
        WORKER = "WORKER"
        BEAT = "BEAT"

    kind = models.CharField(max_length=8, choices=Kind.choices)
    name = models.CharField(max_length=255, help_text="host:pid of the process.")
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(db_index=True)
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="Set when the process shut down cleanly.")
    details = models.JSONField(default=dict, blank=True,
                               help_text="A worker's maintenance engine; whether a beat leads the schedule.")

    class Meta:
        ordering = ["-seen_at"]
        constraints = [models.UniqueConstraint(fields=["kind", "name"], name="uniq_process_heartbeat")]

    def __str__(self):
        return f"{self.kind} {self.name}"


class Lease(models.Model):
    """A named role that one process holds at a time, for as long as it renews it (the beat
    schedule: several servers each start a beat, and only the holder sends the due tasks)."""

    BEAT = "beat"  # the beat schedule's

    name = models.CharField(max_length=64, primary_key=True)
    holder = models.CharField(max_length=255)
    expires_at = models.DateTimeField()

    def __str__(self):
        return f"{self.name} held by {self.holder}"
