"""A real Celery worker for tests: its own redis-server on a free port (so a test may stop and
restart the broker) and `celery worker` in a subprocess on the test database."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from django.db import connection

from tests.helpers import die_with_parent, free_port, stop_process

ROOT = Path(__file__).resolve().parent.parent


class Redis:
    def __init__(self, workdir: Path):
        self.port = free_port()
        self.workdir = workdir
        self.process = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (scripts/ensure_services.sh installs it)")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        stop_process(self.process, grace=10)
        self.process = None


class Worker:
    def __init__(self, broker_url: str, env: dict, log: Path):
        database = connection.settings_dict
        user = database.get("USER") or "postgres"
        host = database.get("HOST") or "127.0.0.1"
        port = database.get("PORT") or 5432
        self.env = {
            **os.environ,
            **env,
            "DATABASE_URL": f"postgres://{user}@{host}:{port}/{database['NAME']}",
            "CELERY_BROKER_URL": broker_url,
            "DJANGO_SETTINGS_MODULE": "ucweb.settings",
        }
        self.log = log
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "ucweb", "worker", "--pool", "threads", "--concurrency", "4",
             "--loglevel", "info", "--without-gossip", "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=self.env, stdout=self.log.open("ab"), stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def stop(self):
        stop_process(self.process, grace=15)
        self.process = None
