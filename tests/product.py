"""ucweb as the README starts it: `make run` in a fresh copy of the tree, with the worker and the
beat, on the embedded defaults (SQLite, `file://` storage under the copy's var/) or on a database
and a Redis of its own. Nothing is switched off: what these tests see is what a user gets.

The copy shares this checkout's virtualenv (a link: `make run` finds its packages installed and
installs nothing) and the machine's Spark jar cache."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import dj_database_url

from tests.helpers import free_port, signal_group, stop_groups, stop_process, wait_for

ROOT = Path(__file__).resolve().parent.parent
# What the test process's own environment must not hand to the product: its settings come from
# the copy's defaults and from what a test passes.
FOREIGN = ("UCWEB_", "CELERY_", "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "PYTEST_")
# What scripts/run_server.sh supervises, by the name of the file under var/ that holds its pid.
PARTS = ("server", "worker", "beat")
# Lines of the log that mean something went wrong (granian's access log shows a 5xx answer as
# `"GET /x HTTP/1.1" 500`).
PROBLEMS = re.compile(r"Traceback|\bERROR\b|CRITICAL|database is locked|\" 5\d\d ")


def copy_tree(destination: Path) -> Path:
    """The tracked and untracked-but-not-ignored files of this checkout, as a fresh clone has them."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.split(b"\0")
    for name in filter(None, files):
        source = ROOT / os.fsdecode(name)
        if source.is_file():
            target = destination / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    (destination / ".venv").symlink_to(ROOT / ".venv")
    return destination


# Periods that make the background half act in seconds, not minutes: the same settings a user may
# give. A worker counts as gone after 10 s without a heartbeat (a loaded machine may hold one back
# for seconds), and one that exits is started again after 20 s, so that its absence shows between.
FAST = {
    "UCWEB_HEARTBEAT_SECONDS": "1",
    "UCWEB_HEARTBEAT_STALE_SECONDS": "10",
    "UCWEB_WORKER_RESTART_SECONDS": "20",
    "UCWEB_PUBLISH_VERIFY_AFTER_SECONDS": "0",
    "UCWEB_MAINTENANCE_SCHEDULE_SECONDS": (
        "publish-verify=2,purge-pending=2,refresh-health-and-plans=3,run-due-maintenance=3"),
}


class PostgresDatabase:
    """A database of its own on the test PostgreSQL server, dropped afterwards."""

    def __init__(self):
        server = dj_database_url.parse(os.environ.get("DATABASE_URL") or "postgres://postgres@127.0.0.1:5432/ucweb")
        self.server = server
        self.name = f"ucweb_product_{uuid.uuid4().hex[:10]}"

    def _admin(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(host=self.server["HOST"] or "127.0.0.1", port=self.server["PORT"] or 5432,
                             user=self.server["USER"] or "postgres", password=self.server["PASSWORD"] or None,
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(statement)

    @property
    def url(self) -> str:
        user = self.server["USER"] or "postgres"
        password = f":{self.server['PASSWORD']}" if self.server["PASSWORD"] else ""
        return f"postgres://{user}{password}@{self.server['HOST'] or '127.0.0.1'}:{self.server['PORT'] or 5432}/{self.name}"

    def create(self) -> PostgresDatabase:
        self._admin(f'CREATE DATABASE "{self.name}"')
        return self

    def drop(self) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


class Product:
    """`make run` in `home/ucweb` (a fresh copy), its output in `home/make-run.log`."""

    def __init__(self, home: Path, **env: str):
        self.home = home
        self.tree = copy_tree(home / "ucweb")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = home / "make-run.log"
        self.env = {key: value for key, value in os.environ.items() if not key.startswith(FOREIGN)}
        self.env.update({"UCWEB_PORT": str(self.port), **env})
        self.process: subprocess.Popen | None = None

    @property
    def var(self) -> Path:
        return Path(self.env.get("UCWEB_VAR_DIR") or self.tree / "var")

    def launch(self) -> Product:
        """`make run`, without waiting for anything."""
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(["make", "run"], cwd=self.tree, env=self.env, stdout=self._log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def start(self, *, timeout: float = 300) -> Product:
        return self.launch().wait_ready(timeout=timeout)

    def wait_ready(self, *, timeout: float = 300) -> Product:
        """Waits until a launched `make run` is ready."""

        def ready():
            """make run's server, worker and beat to be ready (/readyz)"""
            assert self.process.poll() is None, f"make run stopped:\n{self.log()[-4000:]}"
            status, body = self.get("/readyz")
            return body if status == 200 else None

        wait_for(ready, timeout=timeout, interval=0.5)
        return self

    def get(self, path: str, token: str | None = None) -> tuple[int, dict | str]:
        return self.request("GET", path, token)

    def request(self, method: str, path: str, token: str | None = None) -> tuple[int, dict | str]:
        request = urllib.request.Request(self.url + path, method=method)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except OSError as exc:  # refused, reset or timed out: no status, and why
            return 0, f"{type(exc).__name__}: {exc}"
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def readiness(self) -> tuple[int, dict | str]:
        return self.get("/readyz")

    def manage(self, *args: str) -> str:
        """`python manage.py ARGS` in the copy, with the product's settings; its standard output."""
        done = subprocess.run([str(self.tree / ".venv" / "bin" / "python"), "manage.py", *args], cwd=self.tree,
                              env=self.env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def admin_token(self, name: str = "product-admin") -> str:
        return self.manage("issue_token", name, "--admin").strip().splitlines()[-1].strip()

    def pid(self, part: str) -> int | None:
        """The running web server's, worker's or beat's pid, as the supervisor recorded it; each
        leads a process group of its own."""
        try:
            return int((self.var / f"{part}.pid").read_text().strip())
        except (OSError, ValueError):
            return None

    def query(self, sql: str, *params) -> list[tuple]:
        """Rows of the product's own database (SQLite: read-only), to watch what its worker does."""
        if self.env.get("DATABASE_URL"):
            import psycopg

            with psycopg.connect(self.env["DATABASE_URL"].replace("postgres://", "postgresql://", 1)) as conn:
                return conn.execute(sql.replace("?", "%s"), params).fetchall()
        import sqlite3

        conn = sqlite3.connect(f"file:{self.var / 'ucweb.sqlite3'}?mode=ro", uri=True, timeout=30)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def key(self, uuid_text: str) -> str:
        """A UUID as the product's database stores it (SQLite: 32 hex digits)."""
        return uuid_text if self.env.get("DATABASE_URL") else uuid_text.replace("-", "")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def problems(self) -> list[str]:
        """Lines of the log that say something went wrong (readiness answering 503 is its job)."""
        return [line for line in self.log().splitlines()
                if PROBLEMS.search(line) and '"GET /readyz ' not in line]

    def part_groups(self) -> list[int]:
        """The process groups of the parts as last started (web server, worker, beat)."""
        return [pid for pid in map(self.pid, PARTS) if pid is not None]

    def kill_outright(self) -> None:
        """SIGKILL to every process of this server at once, as when its machine fails: make, the
        script and its supervisors, and each part's process group."""
        # The parts first: once their supervisors are gone they would get SIGTERM and start a
        # graceful stop, which a failing machine does not give them.
        for group in self.part_groups():
            signal_group(group, signal.SIGKILL)
        signal_group(self.process.pid, signal.SIGKILL)

    def stop(self) -> None:
        """As an operator stops it (`kill` of the script make runs: it stops the web server, the
        worker and the beat, each finishing what it does), then whatever is left of them."""
        from tests.server_process import children

        groups = self.part_groups()
        if self.process.poll() is None:  # its children's pids are its own only while it runs
            for pid in children(self.process.pid):
                os.kill(pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        stop_process(self.process, grace=30)
        stop_groups(groups, grace=30)
        self._log.close()
