"""The floor under every request, by HTTP server: the same ucweb, on the same database, served by
each candidate server at once (one worker process each), and measured in alternating rounds so
that the machine's other work falls on all of them alike.

    .venv/bin/python bench/servers.py --rounds 6 --requests 400

Each round sends, by one keep-alive client, `--requests` requests of each kind to each server in
turn: `GET /healthz` (no authentication, no query) and an authenticated `GET /catalogs/unity`. It
reads the server processes' CPU time (/proc) before and after, and prints the median over the
rounds of CPU ms per request and requests per second, with the spread (min-max of the rounds) that
says how noisy the machine was.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import urllib3
from harness import PYTHON, ROOT, UC, free_port, session_cpu_seconds, start

POOL = {"UCWEB_DB_POOL_SIZE": "8"}
# name -> (command after `python -m`, settings); the first is the server ucweb shipped before
# granian (kept as the baseline), uvicorn runs with uvloop and httptools; each binds to the port given by {port}.
CANDIDATES = {
    "gunicorn-asgi": (["gunicorn", "ucweb.asgi:application", "--bind", "127.0.0.1:{port}", "--workers", "1",
                              "--worker-class", "asgi", "--control-socket", "{var}/gunicorn-{port}.ctl"], POOL),
    "gunicorn-sync-wsgi": (["gunicorn", "ucweb.wsgi:application", "--bind", "127.0.0.1:{port}", "--workers", "1",
                             "--control-socket", "{var}/gunicorn-{port}.ctl"], {}),
    "uvicorn-asgi": (["uvicorn", "ucweb.asgi:application", "--port", "{port}", "--workers", "1",
                                           "--loop", "uvloop", "--http", "httptools", "--no-access-log"], POOL),
    "granian-asgi": (["granian", "--interface", "asgi", "ucweb.asgi:application", "--port", "{port}",
                       "--workers", "1", "--no-access-log"], POOL),
    "granian-wsgi": (["granian", "--interface", "wsgi", "ucweb.wsgi:application", "--port", "{port}",
                       "--workers", "1", "--blocking-threads", "8", "--no-access-log"], POOL),
}


class Candidate:
    def __init__(self, name: str, env: dict):
        command, settings = CANDIDATES[name]
        self.name = name
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [part.format(port=self.port, var=env["UCWEB_VAR_DIR"]) for part in command]
        self.log = open(Path(env["UCWEB_VAR_DIR"]) / f"server-{self.port}.log", "w")
        self.process = subprocess.Popen([PYTHON, "-m", *args], cwd=ROOT, env={**env, **settings}, stdout=self.log,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        self.http = urllib3.HTTPConnectionPool("127.0.0.1", self.port, maxsize=1)

    def wait_ready(self):
        for _ in range(600):
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: see {self.log.name}")
            try:
                if self.http.request("GET", "/healthz", retries=False, timeout=1).status == 200:
                    return
            except urllib3.exceptions.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not start")

    def measure(self, path: str, headers: dict, count: int) -> tuple[float, float]:
        """(CPU ms per request, requests per second) for `count` sequential requests."""
        cpu_before = session_cpu_seconds(self.process.pid)
        started = time.perf_counter()
        for _ in range(count):
            response = self.http.request("GET", path, headers=headers)
            assert response.status == 200, (self.name, path, response.status, response.data[:300])
        elapsed = time.perf_counter() - started
        cpu = session_cpu_seconds(self.process.pid) - cpu_before
        return 1000 * cpu / count, count / elapsed

    def stop(self):
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.log.close()


def compare(env: dict, token: str, rounds: int, requests: int, names=None) -> list[str]:
    """Markdown rows: each candidate's median CPU ms/request and req/s over the rounds."""
    requests_of = {"GET /healthz": ("/healthz", {}),
                   "GET /catalogs/unity": (f"{UC}/catalogs/unity", {"Authorization": f"Bearer {token}"})}
    env = {k: v for k, v in env.items() if k not in ("UCWEB_DB_POOL_SIZE", "UCWEB_DB_CONN_MAX_AGE")}
    candidates = []
    try:
        for name in names or CANDIDATES:
            candidates.append(Candidate(name, env))  # in the list at once: stopped whatever follows
        for candidate in candidates:
            candidate.wait_ready()
        samples = {(c.name, kind): [] for c in candidates for kind in requests_of}
        for candidate in candidates:  # warm: imports, pools, caches
            for path, headers in requests_of.values():
                candidate.measure(path, headers, 50)
        for round_number in range(rounds):
            order = candidates if round_number % 2 == 0 else candidates[::-1]
            for candidate in order:
                for kind, (path, headers) in requests_of.items():
                    samples[(candidate.name, kind)].append(candidate.measure(path, headers, requests))
    finally:
        for candidate in candidates:
            candidate.stop()
    shipped = statistics.median(cpu for cpu, _ in samples[(candidates[0].name, "GET /healthz")])
    rows = ["| server | request | req/s | CPU ms/req | min-max over rounds | ÷ first row's floor (CPU) |",
            "|--|--|--:|--:|--:|--:|"]
    for candidate in candidates:
        for kind in requests_of:
            cpus = [cpu for cpu, _ in samples[(candidate.name, kind)]]
            rates = [rate for _, rate in samples[(candidate.name, kind)]]
            cpu = statistics.median(cpus)
            rows.append(f"| {candidate.name} | {kind} | {statistics.median(rates):.0f} | {cpu:.2f} "
                        f"| {min(cpus):.2f}-{max(cpus):.2f} | {cpu / shipped:.2f} |")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=400, help="requests of each kind per round and server")
    parser.add_argument("--servers", default=",".join(CANDIDATES), help="candidates, comma-separated")
    args = parser.parse_args()
    unknown = set(args.servers.split(",")) - set(CANDIDATES)
    if unknown:
        parser.error(f"unknown servers {', '.join(sorted(unknown))}; the candidates are {', '.join(CANDIDATES)}")
    bench = start("postgres://postgres@127.0.0.1:5432/ucweb_bench", 1)
    bench.server.stop()  # it migrated and bootstrapped the database; the candidates serve it
    rows = compare(bench.env, bench.token, args.rounds, args.requests, args.servers.split(","))
    print(f"\nThe floor by server: one worker process each, one keep-alive client, {args.rounds} alternating "
          f"rounds of {args.requests} requests, {os.cpu_count()} CPUs shared with the client and PostgreSQL\n")
    print("\n".join(rows))


if __name__ == "__main__":
    sys.exit(main())
