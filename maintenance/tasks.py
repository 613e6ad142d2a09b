import logging

from celery import shared_task

from maintenance import purge

logger = logging.getLogger(__name__)


def enqueue(task, *args) -> None:
    """Hands a task to the broker without ever failing the request that asked for it: the work
    is recorded in the database already, and the beat schedule sweeps what was not delivered."""
    try:
        task.apply_async(args=args, retry=False)
    except Exception as exc:  # the broker is down; the periodic sweep will pick the work up
        logger.warning("could not enqueue %s%r: %s", task.name, args, exc)


@shared_task(name="maintenance.purge_location")
def purge_location(purge_id: int) -> bool:
    return purge.run_purge(purge_id)


@shared_task(name="maintenance.purge_pending")
def purge_pending() -> int:
    return purge.run_pending_purges()
