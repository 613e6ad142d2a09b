"""Nudges to the worker: a task sent by its name, so that what records work (a purge, a plan, a
commit to verify) never imports the tasks that do it (maintenance.tasks imports them)."""

import logging
import threading

from celery import current_app

logger = logging.getLogger(__name__)


def enqueue(task_name: str, *args) -> None:
    """Hands task `task_name` to the broker from a background thread, so that a request never
    waits on the broker and a broker that is down costs nothing but a log line: the work is
    recorded in the database already, and the beat schedule sweeps what was not delivered."""
    task = current_app.tasks[task_name]

    def send():
        try:
            task.apply_async(args=args, retry=False)
        except Exception as exc:  # noqa: BLE001 - any broker failure is the same: sweep later
            logger.warning("could not enqueue %s%r: %s", task_name, args, exc)

    if task.app.conf.task_always_eager:
        send()
    else:
        threading.Thread(target=send, daemon=True).start()
