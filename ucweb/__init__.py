from ucweb.startup_signals import stop_at_once_while_loading

stop_at_once_while_loading()  # before the rest of ucweb loads: see its docstring

from .celery import app as celery_app  # noqa: E402

__all__ = ["celery_app"]
