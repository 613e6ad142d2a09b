"""Every Prometheus metric the server records, defined once (served at `/metrics`, see
ucweb.scrape and docs/operations.md).

Labels stay few-valued: a protocol, a route *template*, a status code, an outcome, an operation,
a task name; never a table, a principal or a location. Under `scripts/run_server.sh` every process
(the web server's workers, the Celery worker) writes its values to files in
PROMETHEUS_MULTIPROC_DIR and a scrape adds them up (prometheus-client's multiprocess mode); a gauge
says how the processes' values combine."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

# -- HTTP ------------------------------------------------------------------------------------------
REQUEST_SECONDS = Histogram(
    "ucweb_http_request_duration_seconds",
    "Requests by protocol, route template, method and status, with their latency.",
    ["protocol", "route", "method", "status"],
)

# -- commits ---------------------------------------------------------------------------------------
# outcome: ratified, conflict (a lost race: 409), refused_by_policy (the maintenance policy
# reserves the operation for the catalog), refused_by_contract (the table's schema contract forbids
# the commit's schema change: catalog.schema_contract), throttled (429: too many unpublished commits).
COMMITS = Counter("ucweb_commits", "Commit proposals by table format and outcome.", ["format", "outcome"])

# -- maintenance and background work ---------------------------------------------------------------
# outcome: succeeded, failed, skipped, or retried (an attempt failed; the run is planned again).
MAINTENANCE_RUNS = Counter("ucweb_maintenance_runs", "Maintenance run attempts by operation and outcome.",
                           ["operation", "outcome"])
TASK_SECONDS = Histogram("ucweb_celery_task_duration_seconds", "Celery tasks run by the worker, by name and state.",
                         ["task", "state"], buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800, float("inf")))
TASK_QUEUE_WAIT_SECONDS = Histogram("ucweb_celery_task_queue_wait_seconds",
                                    "How long Celery tasks waited in the broker before the worker started them, by name.",
                                    ["task"], buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800, float("inf")))

# -- storage access --------------------------------------------------------------------------------
CREDENTIALS_VENDED = Counter("ucweb_credentials_vended", "Temporary storage credentials vended, by access.",
                             ["access"])
REQUESTS_SIGNED = Counter("ucweb_requests_signed", "Storage requests signed for clients (Iceberg remote signing).",
                          ["access"])

# -- database pool ---------------------------------------------------------------------------------
# state: open (connections the pool holds), in_use (lent to a request), waiting (requests waiting
# for one). Each web process sets its own after a request; a scrape sums the live processes'.
DB_POOL_CONNECTIONS = Gauge("ucweb_db_pool_connections", "PostgreSQL connection pool use, summed over processes.",
                            ["state"], multiprocess_mode="livesum")


def commit_outcome(table_format: str, outcome: str, count: int = 1) -> None:
    COMMITS.labels(table_format, outcome).inc(count)
