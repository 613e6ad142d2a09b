"""What every step of the Iceberg jar assembly shares: the Iceberg version, the error it raises,
its progress log and the way it runs external tools.

Part of scripts/iceberg_spark_jars.py (see its docstring for how this module is found).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ICEBERG_VERSION = "1.10.2"


class AssemblyError(RuntimeError):
    """A step of the jar assembly failed; the message says which and what to do."""


def log(message: str) -> None:
    print(f"[iceberg-spark-jars] {message}", file=sys.stderr, flush=True)


def _run(cmd: list[str], *, what: str, cwd: Path | None = None, env: dict | None = None) -> str:
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise AssemblyError(f"{what}: {cmd[0]} not found ({exc})") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        raise AssemblyError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return proc.stdout


def _version_tuple(text: str) -> tuple[int, ...]:
    """(5, 6, 4) for "5.6.4", "1:5.6.4-1" (a Debian version) or "5.6.4.jar"."""
    upstream = text.split(":", 1)[-1].split("-", 1)[0]
    return tuple(int(x) for x in re.findall(r"\d+", upstream)[:3])
