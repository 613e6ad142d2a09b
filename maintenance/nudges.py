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
    if task.app.conf.task_always_eager:
        _send(task, args)
    else:
        threading.Thread(target=_send, args=(task, args), daemon=True).start()


def _send(task, args) -> None:
    try:
        task.apply_async(args=args, retry=False)
    except Exception as exc:  # noqa: BLE001 - any broker failure is the same: sweep later
        logger.warning("could not enqueue %s%r: %s", task.name, args, exc)


_wanted: dict[str, threading.Event] = {}
_wanted_lock = threading.Lock()


def enqueue_coalesced(task_name: str) -> None:
    """Like `enqueue` for a task without arguments that does all there is to do (a drain): the
    nudges that come while one is being sent make one more, not one each, so a busy server sends
    a handful of messages instead of one per request."""
    task = current_app.tasks[task_name]
    if task.app.conf.task_always_eager:
        _send(task, ())
        return
    with _wanted_lock:
        wanted = _wanted.get(task_name)
        if wanted is None:
            wanted = _wanted[task_name] = threading.Event()
            threading.Thread(target=_sender, args=(task, wanted), daemon=True).start()
    wanted.set()


def _sender(task, wanted: threading.Event) -> None:
    while True:
        wanted.wait()
        wanted.clear()
        _send(task, ())
