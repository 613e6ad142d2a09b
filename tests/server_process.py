"""The real server, started the way `make run` starts it (`bash scripts/run_server.sh`: migrate,
bootstrap, then granian), on a free port with its own var directory and storage, on the test's
PostgreSQL database. Used where the server process itself matters: its worker model (slow
clients) and what survives its workers being killed."""

from __future__ import annotations

import os
import socket
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import connection

from tests.helpers import free_port, stop_groups, stop_process, wait_for

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    """The test database (the server migrates and bootstraps it, as `make run` does)."""
    settings = connection.settings_dict
    user = settings.get("USER") or "postgres"
    password = f":{settings['PASSWORD']}" if settings.get("PASSWORD") else ""
    host = settings.get("HOST") or "127.0.0.1"
    port = settings.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings['NAME']}"


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses.
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


class ServerProcess:
    def __init__(self, base: Path, **env: str):
        self.port = free_port()
        self.var_dir = base / "var"
        self.storage = base / "storage"
        self.storage.mkdir(parents=True, exist_ok=True)
        self.log_path = base / "server.log"
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            key: value for key, value in os.environ.items()
            if key not in ("UCWEB_SECRET_KEY", "UCWEB_ENCRYPTION_KEY", "DJANGO_SETTINGS_MODULE")
        }
        self.env.update({
            "UCWEB_PORT": str(self.port), "UCWEB_BIND": "127.0.0.1", "UCWEB_VAR_DIR": str(self.var_dir),
            "UCWEB_STORAGE_ROOT": self.storage.as_uri(), "DATABASE_URL": database_url(),
            "UCWEB_NO_WORKER": "1", "UCWEB_PYTHON": str(ROOT / ".venv" / "bin" / "python")
            if (ROOT / ".venv" / "bin" / "python").exists() else "python3",
            **env,
        })
        self.process: subprocess.Popen | None = None

    def start(self) -> ServerProcess:
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            ["bash", "scripts/run_server.sh"], cwd=ROOT, env=self.env, stdout=self._log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )

        def listening():
            """the server to accept connections"""
            assert self.process.poll() is None, f"the server exited:\n{self.log()[-3000:]}"
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False

        wait_for(listening, timeout=180)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @property
    def master(self) -> int:
        """The granian main process, as the script's supervisor recorded it (it starts a new one
        if granian exits)."""
        try:
            return int((self.var_dir / "server.pid").read_text().strip())
        except (OSError, ValueError):
            raise AssertionError("granian is not running") from None

    def workers(self) -> list[int]:
        return children(self.master)

    def stop(self) -> None:
        # granian and its workers are in a process group of their own, which the script stops:
        # stopping waits until no process of either group is left holding database connections.
        group = [self.master] if (self.var_dir / "server.pid").exists() else []
        stop_process(self.process, grace=60)
        stop_groups(group, grace=60)
        self._log.close()


@contextmanager
def running_server(base: Path, **env: str):
    """A started `ServerProcess`, stopped on exit. It shares the test database, so it needs
    PostgreSQL."""
    if connection.vendor != "postgresql":
        pytest.skip("the server process shares the test database, which needs PostgreSQL")
    process = ServerProcess(base, **env).start()
    try:
        yield process
    finally:
        process.stop()
