"""How a maintenance run ends other than by succeeding."""


class Skip(Exception):
    """The run does not apply (nothing to do, a feature it cannot handle, no Spark): SKIPPED."""


class Conflict(Exception):
    """A user's commit won the race and the maintenance commit cannot be rebased on it: the
    run ends and the operation is planned again."""


class TimeLimitExceeded(Exception):
    """The run went past UCWEB_MAINTENANCE_TIME_LIMIT_SECONDS."""


class LeaseLost(Exception):
    """Another worker took the run over (this worker's lease expired)."""


def describe(exc: BaseException) -> str:
    """The exception as one line of text; some (a Py4J error whose JVM is gone) cannot say more
    than their type."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - the text is asked of the failed engine itself
        text = "(no message)"
    return f"{type(exc).__name__}: {text}"
