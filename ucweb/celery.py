import os
import time
import warnings

from celery import Celery
from celery.signals import before_task_publish, task_postrun, task_prerun
from celery.exceptions import SecurityWarning

from ucweb import metrics

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ucweb.settings")

app = Celery("ucweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# A worker started as root (the usual case in a container) prints Celery's superuser notice at
# every start. Its danger is pickle, and this app keeps Celery's JSON-only default (settings never
# set CELERY_ACCEPT_CONTENT), so the notice is noise here. Celery still refuses pickle as root.
warnings.filterwarnings("ignore", category=SecurityWarning)


# How long each task runs, by name and final state (ucweb.metrics); the worker's threads run tasks
# side by side, so each start is kept by task id.
_started: dict[str, float] = {}

# How long a task waited in the broker: the sender (a server, the beat or the worker itself) stamps
# the message with the wall-clock time it was sent, which the worker reads as a request attribute.
ENQUEUED_AT_HEADER = "ucweb_enqueued_at"


@before_task_publish.connect
def _stamp_enqueued_at(headers=None, **_):
    if headers is not None:
        headers.setdefault(ENQUEUED_AT_HEADER, time.time())


@task_prerun.connect
def _task_started(task_id=None, task=None, **_):
    _started[task_id] = time.perf_counter()
    enqueued_at = getattr(task.request, ENQUEUED_AT_HEADER, None) if task is not None else None
    if isinstance(enqueued_at, (int, float)):
        # A countdown or ETA is waiting too; clocks of two hosts may disagree by a little: never below 0.
        metrics.TASK_QUEUE_WAIT_SECONDS.labels(task.name).observe(max(0.0, time.time() - enqueued_at))


@task_postrun.connect
def _task_finished(task_id=None, task=None, state=None, **_):
    started = _started.pop(task_id, None)
    if started is not None:
        metrics.TASK_SECONDS.labels(task.name, state or "UNKNOWN").observe(time.perf_counter() - started)
