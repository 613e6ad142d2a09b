"""Celery tasks, by the name the beat schedule (settings.UCWEB_MAINTENANCE_SCHEDULE) and `nudges.enqueue` send.
Each is idempotent and safe to run twice or at the same time as itself: the state lives in the
database (row locks, put-if-absent), the broker only carries nudges."""

from celery import shared_task

from maintenance import change_events, health, publish, purge


def run_due() -> int:
    """Takes back runs whose worker died, then runs what is due (one run per table at a time)."""
    from maintenance import runs

    return len(runs.run_due())


def run_plan(plan_id: int) -> str | None:
    """One plan now (the admin's "run now"); None when another worker holds the table."""
    from maintenance import runs

    plan = runs.run_plan(plan_id)
    return plan.status if plan else None


TASKS = {
    "maintenance.purge_location": purge.run_purge,
    "maintenance.purge_pending": purge.run_pending_purges,
    "maintenance.expire_staging_tables": purge.expire_staging_tables,
    "maintenance.expire_dropped": purge.expire_dropped,
    "maintenance.publish_verify": publish.verify_all,
    "maintenance.publish_verify_table": publish.verify_table,
    "maintenance.refresh_health": health.refresh_all,
    "maintenance.deliver_change_events": change_events.drain,
    "maintenance.run_due": run_due,
    "maintenance.run_plan": run_plan,
}

for _name, _function in TASKS.items():
    shared_task(name=_name)(_function)
