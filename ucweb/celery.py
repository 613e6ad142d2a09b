import os
import time
import warnings

from celery import Celery
from celery.signals import task_postrun, task_prerun
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


@task_prerun.connect
def _task_started(task_id=None, **_):
    _started[task_id] = time.perf_counter()


@task_postrun.connect
def _task_finished(task_id=None, task=None, state=None, **_):
    started = _started.pop(task_id, None)
    if started is not None:
        metrics.TASK_SECONDS.labels(task.name, state or "UNKNOWN").observe(time.perf_counter() - started)
