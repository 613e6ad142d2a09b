"""What the benchmarks share: a fresh PostgreSQL database, ucweb served as `make run` serves it
(scripts/run_server.sh: granian serving Django through WSGI, a pool of database connections per worker),
an admin token, and managed Delta tables created through the API."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import urllib3

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
UC = "/api/2.1/unity-catalog"


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


def run_concurrently(target, count: int) -> float:
    """Runs `target(0)` ... `target(count - 1)` on threads of their own; the seconds they took."""
    threads = [threading.Thread(target=target, args=(index,)) for index in range(count)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def session_cpu_seconds(session: int) -> float:
    """User + system CPU time so far of the processes of a session (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a process that ended meanwhile
        if int(fields[3]) == session:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


class Server:
    """`bash scripts/run_server.sh` (migrate, bootstrap, then granian as `make run` and the Docker
    image start it), without the Celery worker; its output goes to `log` in the var dir. `root`:
    the checkout it serves (another one, to compare two trees on one database)."""

    def __init__(self, env, port, *, root: Path = ROOT, log: str = "server.log"):
        self.url = f"http://127.0.0.1:{port}"
        env = {**env, "UCWEB_PORT": str(port), "UCWEB_BIND": "127.0.0.1", "UCWEB_NO_WORKER": "1",
               "UCWEB_PYTHON": PYTHON}
        self.log = open(Path(env["UCWEB_VAR_DIR"]) / log, "w")
        self.process = subprocess.Popen(["bash", "scripts/run_server.sh"], cwd=root, env=env, stdout=self.log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        http = urllib3.PoolManager()
        for _ in range(1200):
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: see {self.log.name}")
            try:
                if http.request("GET", f"{self.url}/healthz", timeout=1, retries=False).status == 200:
                    return
            except urllib3.exceptions.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the server did not start")

    def cpu_seconds(self) -> float:
        """User + system CPU time so far of the processes of the server's session: granian's
        main process and its live workers (the script itself waits; start_new_session made the
        script's pid the session id)."""
        return session_cpu_seconds(self.process.pid)

    def stop(self):
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        self.process.wait(timeout=60)
        self.log.close()


@dataclass
class Bench:
    server: Server
    token: str
    env: dict
    storage: str
    database_url: str


def start(default_database: str, workers: int, **settings: str) -> Bench:
    """A fresh database (BENCH_DATABASE_URL, else `default_database`), the server on it with
    `workers` server worker processes and the given settings, an admin token, and Django set up in this
    process on the same database and storage (for the storage helpers and the ORM)."""
    database_url = os.environ.get("BENCH_DATABASE_URL", default_database)
    recreate_database(database_url)
    storage = tempfile.mkdtemp(prefix="ucweb-bench-")
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "UCWEB_STORAGE_ROOT": Path(storage).as_uri(),
           "UCWEB_VAR_DIR": storage, "UCWEB_WORKERS": str(workers), "DJANGO_SETTINGS_MODULE": "ucweb.settings",
           "UCWEB_ICEBERG_CATALOG_URL": f"http://127.0.0.1:{port}/api/catalog", **settings}
    for name in ("REDIS_URL", "CELERY_BROKER_URL", "UCWEB_DB_CONN_MAX_AGE", "UCWEB_DB_POOL_SIZE"):
        env.pop(name, None)  # the server's own defaults, as `make run` has them
    server = Server(env, port)  # migrates and bootstraps the database
    try:
        token = manage(env, "issue_token", "bench", "--admin").strip().splitlines()[-1]
    except BaseException:
        server.stop()
        raise
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "UCWEB_STORAGE_ROOT", "DJANGO_SETTINGS_MODULE",
                                           "UCWEB_VAR_DIR")})
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    return Bench(server, token, env, storage, database_url)


def create_delta_table(base: str, token: str, name: str, fields: list[dict]) -> tuple[str, str]:
    """A managed Delta table `unity.default.<name>` created as a client does (staging table, its
    version 0 written to the staging location, createTable); returns its id and location."""
    from catalog.storage import join, storage_for  # the server's own storage code

    http = urllib3.PoolManager()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    staging = http.request("POST", f"{base}{UC}/staging-tables", headers=headers, body=json.dumps(
        {"name": name, "catalog_name": "unity", "schema_name": "default"})).json()
    now = int(time.time() * 1000)
    actions = [
        {"commitInfo": {"inCommitTimestamp": now, "operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                      "readerFeatures": ["catalogManaged", "vacuumProtocolCheck"],
                      "writerFeatures": ["catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"]}},
        {"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps({"type": "struct", "fields": fields}),
                      "partitionColumns": [], "createdTime": now,
                      "configuration": {"io.unitycatalog.tableId": staging["id"],
                                        "delta.enableInCommitTimestamps": "true"}}},
    ]
    url = join(staging["staging_location"], "_delta_log", f"{0:020d}.json")
    storage_for(url).put(url, "\n".join(json.dumps(a) for a in actions).encode())
    table = http.request("POST", f"{base}{UC}/tables", headers=headers, body=json.dumps({
        "name": name, "catalog_name": "unity", "schema_name": "default", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": staging["staging_location"], "columns": []})).json()
    return table["table_id"], table["storage_location"]
