"""Celery tasks. Each is idempotent and safe to run twice or at the same time as itself: the state
lives in the database (row locks, put-if-absent), the broker only carries nudges."""

from celery import shared_task

from maintenance import change_events, health, publish, purge


@shared_task(name="maintenance.purge_location")
def purge_location(purge_id: int) -> bool:
    return purge.run_purge(purge_id)


@shared_task(name="maintenance.purge_pending")
def purge_pending() -> int:
    return purge.run_pending_purges()


@shared_task(name="maintenance.expire_staging_tables")
def expire_staging_tables() -> int:
    return purge.expire_staging_tables()


@shared_task(name="maintenance.expire_dropped")
def expire_dropped() -> int:
    return purge.expire_dropped()


@shared_task(name="maintenance.publish_verify")
def publish_verify() -> int:
    return publish.verify_all()


@shared_task(name="maintenance.publish_verify_table")
def publish_verify_table(table_id: str) -> int:
    return publish.verify_table(table_id)


@shared_task(name="maintenance.refresh_health")
def refresh_health() -> int:
    return health.refresh_all()


@shared_task(name="maintenance.deliver_change_events")
def deliver_change_events() -> int:
    return change_events.drain()


@shared_task(name="maintenance.run_due")
def run_due() -> int:
    """Takes back runs whose worker died, then runs what is due (one run per table at a time)."""
    from maintenance import runs

    return len(runs.run_due())


@shared_task(name="maintenance.run_plan")
def run_plan(plan_id: int) -> str | None:
    """One plan now (the admin's "run now"); None when another worker holds the table."""
    from maintenance import runs

    plan = runs.run_plan(plan_id)
    return plan.status if plan else None
