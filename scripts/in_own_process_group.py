"""Runs a command (same pid: it replaces this process) in a process group of its own, which gets
SIGTERM when the process that started it ends.

scripts/run_server.sh starts each part of ucweb this way, so that a signal meant for the whole
server reaches a part once, from the script, in the order the script chooses. In the terminal's
group, a Ctrl+C also reached every process of the part directly: a granian worker then got SIGINT
from the terminal and SIGTERM from its main process at the same instant, and could hang until
granian killed it UCWEB_STOP_SECONDS later (docs/operations.md). The parent-death signal keeps a
part from living on alone when its supervisor is killed outright.

Usage: python scripts/in_own_process_group.py COMMAND [ARGUMENT ...]"""

import os
import signal
import sys


def stop_with_parent() -> None:
    """SIGTERM to this process when its parent ends (Linux; elsewhere nothing)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    parent = os.getppid()
    os.setpgid(0, 0)
    stop_with_parent()
    if os.getppid() != parent:  # the parent ended before the death signal was armed
        sys.exit(0)
    os.execvp(sys.argv[1], sys.argv[1:])
