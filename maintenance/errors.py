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
