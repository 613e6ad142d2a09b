"""Server-side scan plans of the Iceberg REST API (catalog.services.iceberg_scan): the file scan
tasks of one planned scan, in pages, for the principal that planned it, until they expire."""

from django.db import models

from .namespace import Table


class ScanPlan(models.Model):
    """One planTableScan. `id` is the plan id clients see: 256 random bits, never derived from
    anything else. Page 0 is answered inline; pages 1... are the plan tasks `<id>.<page>`. Only
    `principal` may read or cancel it, only through `table`, and only before `expires_at`."""

    id = models.CharField(primary_key=True, max_length=64)
    table = models.ForeignKey(Table, on_delete=models.CASCADE, related_name="+")
    principal = models.CharField(max_length=255)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)
    snapshot_id = models.BigIntegerField(null=True)
    pages = models.PositiveIntegerField()
    # The URL the plan's storage credentials are scoped to (the files' common folder), if any.
    credentials_scope = models.TextField(blank=True, default="")

    def __str__(self):
        return self.id


class ScanPlanPage(models.Model):
    """One page of a plan: `{"delete-files": [...], "file-scan-tasks": [...]}` as the REST spec's
    ScanTasks (delete file references index this page's own delete files)."""

    plan = models.ForeignKey(ScanPlan, on_delete=models.CASCADE, related_name="page_rows")
    number = models.PositiveIntegerField()
    tasks = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["plan", "number"], name="scan_plan_page_once")]

    def __str__(self):
        return f"{self.plan_id}.{self.number}"
