"""What the benchmarks share: a fresh PostgreSQL database, manage.py, and ucweb served by gunicorn."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import urllib3

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env, *args) -> str:
    return subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True,
                          capture_output=True, text=True).stdout


def recreate_database(url: str) -> None:
    import psycopg

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


class Server:
    def __init__(self, env, port):
        self.url = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [PYTHON, "-m", "gunicorn", "ucweb.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "--workers", str(env["BENCH_WORKERS"]), "--threads", "16", "--worker-class", "gthread",
             "--log-level", "warning"],
            cwd=ROOT, env=env,
        )
        http = urllib3.PoolManager()
        for _ in range(100):
            try:
                if http.request("GET", f"{self.url}/healthz", timeout=1, retries=False).status == 200:
                    return
            except urllib3.exceptions.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the server did not start")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the gunicorn master and its live workers so far (Linux)."""
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # a process that ended meanwhile
            pid, ppid = int(stat.parent.name), int(fields[1])
            if self.process.pid in (pid, ppid):
                total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / tick

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=20)
