from django.db import models


class DeltaCommit(models.Model):
    """A ratified commit of a catalog-managed Delta table: the catalog chose this staged file as
    the one and only version `version`. It stays after publication (`published_at` set) as the
    table's commit history, until the retention setting trims it."""

    table = models.ForeignKey("catalog.Table", on_delete=models.CASCADE, related_name="delta_commits")
    version = models.BigIntegerField()
    timestamp = models.BigIntegerField(help_text="In-commit timestamp, epoch ms.")
    file_name = models.CharField(max_length=1024)
    file_size = models.BigIntegerField()
    file_modification_timestamp = models.BigIntegerField()
    file_sha256 = models.CharField(
        max_length=64, blank=True, default="",
        help_text="SHA-256 of the staged file's bytes when it was ratified (empty for older commits).",
    )
    ratified_at = models.DateTimeField(auto_now_add=True)
    ratified_by = models.CharField(max_length=255)
    published_at = models.DateTimeField(null=True, blank=True)
    # commitInfo.txnId of the staged file, when the API read it: a transaction is ratified once.
    txn_id = models.CharField(max_length=255, null=True, blank=True)
    # What the staged file's commitInfo declared, read when it was ratified: "" when the writer
    # declared nothing, None for commits ratified before these were recorded.
    operation = models.CharField(
        max_length=255, null=True, blank=True,
        help_text="commitInfo.operation as the writer declared it; empty when it declared none.",
    )
    engine_info = models.CharField(
        max_length=255, null=True, blank=True,
        help_text="commitInfo.engineInfo (the writing engine); empty when it declared none.",
    )

    class Meta:
        ordering = ["table", "-version"]
        indexes = [models.Index(fields=["table", "txn_id"], name="delta_commit_txn")]
        constraints = [models.UniqueConstraint(fields=["table", "version"], name="uniq_delta_commit_version")]

    def __str__(self):
        return f"{self.table_id} v{self.version}"


class CommitReport(models.Model):
    """Metrics a client reported for one commit (POST /delta/metrics)."""

    table = models.ForeignKey("catalog.Table", on_delete=models.CASCADE, related_name="commit_reports")
    commit_version = models.BigIntegerField()
    num_files_added = models.BigIntegerField(null=True, blank=True)
    num_bytes_added = models.BigIntegerField(null=True, blank=True)
    num_clustered_bytes_added = models.BigIntegerField(null=True, blank=True)
    num_files_removed = models.BigIntegerField(null=True, blank=True)
    num_bytes_removed = models.BigIntegerField(null=True, blank=True)
    num_clustered_bytes_removed = models.BigIntegerField(null=True, blank=True)
    num_rows_inserted = models.BigIntegerField(null=True, blank=True)
    num_rows_removed = models.BigIntegerField(null=True, blank=True)
    num_rows_updated = models.BigIntegerField(null=True, blank=True)
    file_size_histogram = models.JSONField(null=True, blank=True)
    reported_by = models.CharField(max_length=255)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["table", "-commit_version", "-received_at"]
        indexes = [models.Index(fields=["table", "commit_version"])]

    def __str__(self):
        return f"report {self.table_id} v{self.commit_version}"


class IcebergMetadata(models.Model):
    """The current metadata of an Iceberg table or view: where its metadata file is, and that
    file's JSON, so that loading a table reads one row instead of object storage. A commit swaps
    both in the transaction that holds the table row's lock."""

    table = models.OneToOneField("catalog.Table", on_delete=models.CASCADE, primary_key=True, related_name="iceberg")
    metadata_location = models.TextField()
    metadata_json = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)
    # For a table whose metadata another system writes: the timestamp of the last notification
    # admitted (POST .../notifications); an older or equal one is refused.
    notification_timestamp = models.BigIntegerField(null=True, blank=True)

    def __str__(self):
        return self.metadata_location


class IcebergMetricsReport(models.Model):
    """A scan or commit report an Iceberg client sent to /metrics."""

    table = models.ForeignKey("catalog.Table", on_delete=models.CASCADE, related_name="iceberg_reports")
    report_type = models.CharField(max_length=32)
    snapshot_id = models.BigIntegerField(null=True, blank=True)
    report = models.JSONField()
    reported_by = models.CharField(max_length=255)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-received_at"]


class IdempotencyKey(models.Model):
    """The final response to a mutating request sent with an `Idempotency-Key`, replayed when the
    same principal sends the same key again. A row without a status is a request in flight."""

    key = models.CharField(max_length=255)
    principal = models.CharField(max_length=255)
    method = models.CharField(max_length=8)
    path = models.TextField()
    status = models.IntegerField(null=True, blank=True)
    response = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["principal", "key"], name="uniq_idempotency_key")]


class DeltaTransaction(models.Model):
    """A multi-table Delta transaction that was committed (commits.delta_transactions): the
    client's transaction id, a digest of its body and the answer, per principal and API. Written
    in the transaction that ratifies the commits, so it exists exactly when they do; the same id
    sent again is answered from it (the same body) or refused (another body)."""

    principal = models.CharField(max_length=255)
    api = models.CharField(max_length=16)  # "preview" (seed 000) or "v1" (managed tables spec 1.0)
    transaction_id = models.CharField(max_length=255)
    body_sha256 = models.CharField(max_length=64)
    response = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["principal", "api", "transaction_id"],
                                               name="uniq_delta_transaction")]

    def __str__(self):
        return f"{self.api} transaction {self.transaction_id} of {self.principal}"
