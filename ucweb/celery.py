import os
import warnings

from celery import Celery
from celery.exceptions import SecurityWarning

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ucweb.settings")

app = Celery("ucweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# A worker started as root (the usual case in a container) prints Celery's superuser notice at
# every start. Its danger is pickle, and this app keeps Celery's JSON-only default (settings never
# set CELERY_ACCEPT_CONTENT), so the notice is noise here. Celery still refuses pickle as root.
warnings.filterwarnings("ignore", category=SecurityWarning)
