"""A web server worker's signals before it serves: ucweb/__init__.py calls this first, before
anything else of ucweb (the Celery app, Django, every view) is loaded."""

import signal
import sys
import threading


def stop_at_once_while_loading() -> None:
    """Lets SIGTERM and SIGINT end a granian worker that is still loading ucweb.

    granian forks its workers with the main process's signal handlers, which in a worker only set a
    flag in its copy of the main process, and installs the worker's own handlers once the
    application is loaded. A stop that arrives while ucweb loads (seconds: ucweb.wsgi imports every
    view) was lost, and the worker served on until granian killed it UCWEB_STOP_SECONDS later, the
    whole time `make run` took to stop. A worker that has served nothing yet may simply end."""
    server = sys.modules.get("granian.server.common")
    if server is None or threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGINT):
        if isinstance(getattr(signal.getsignal(signum), "__self__", None), server.AbstractServer):
            signal.signal(signum, signal.SIG_DFL)
