"""Where the server's Python time goes in one Delta commit and in one refused commit (409), by
py-spy: ucweb served as `make run` serves it (bench/harness.py) with one worker, one client
repeating the same kind of request while `py-spy record` samples that worker (`--gil`: only the
samples of the thread that holds the GIL, so a request waiting for PostgreSQL is not sampled, and
only the stacks under Django's WSGI handler).

    .venv/bin/python bench/commit_profile.py --seconds 10            # legacy and v1, commit and 409
    .venv/bin/python bench/commit_profile.py --in-process            # CPU per request, no server

The kinds of request: a legacy `/delta/commit` of the next version ("legacy commit"), the same
proposing a version already taken, with a file of its own so that it is not a retry ("legacy
409"), the re-read of a writer that lost ("legacy read": the commits from the version it lost),
and the same through `/delta/v1` (updateTable with `add-commit`, loadTable); a kind ending in
"reported" (e.g. "legacy 409 reported") carries the backfill report delta-spark sends with every
commit (version 0, published when the table was created). For each it prints
the server's CPU per request (from /proc, as bench/commits.py measures it), then the functions
that hold the most samples, inclusive of what they call and on their own, in ms per request;
`--raw DIR` keeps py-spy's collapsed stacks.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import importlib.util

import urllib3
from harness import UC, start

# bench/commits.py, under a name that does not hide the server's own `commits` package
_spec = importlib.util.spec_from_file_location("bench_commits", Path(__file__).with_name("commits.py"))
bench_commits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_commits)
STAGED_COMMIT, create_tables, v1_path = bench_commits.STAGED_COMMIT, bench_commits.create_tables, bench_commits.v1_path
proposal_body = bench_commits.proposal_body

PY_SPY = Path(sys.executable).with_name("py-spy")

# What a summary line names: a function of ucweb's own code or of a library, as py-spy prints it
# ("function (path/to/module.py:line)"), grouped by function and module (line numbers dropped).
FRAME = re.compile(r"^(?P<function>.+?) \((?P<module>[^:]+)(?::\d+)?\)$")
REQUEST = "WSGIHandler.__call__ (django/core/handlers/wsgi.py)"


def worker_pid(server) -> int:
    """The granian worker of a one-worker server: the granian process whose parent is granian."""
    session = server.process.pid
    processes = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[3]) == session:
            processes[int(stat.parent.name)] = (int(fields[1]), b"granian" in command)
    workers = [pid for pid, (parent, granian) in processes.items() if granian and processes.get(parent, (0, False))[1]]
    if len(workers) != 1:
        raise RuntimeError(f"expected one granian worker, found {workers}")
    return workers[0]


class InProcess:
    """The same requests through Django's test client in this process (the server's middleware,
    views and database, without granian and without the pool): the CPU of this thread per request
    is what the request costs, whatever else the machine runs."""

    url = ""

    def __init__(self):
        from django.test import Client

        self.client = Client()

    def request(self, method, url, headers, body=None, fields=None):
        extra = {"HTTP_AUTHORIZATION": headers["Authorization"]}
        if method == "GET":
            answer = self.client.get(url, fields or {}, **extra)
        else:
            answer = self.client.post(url, body, content_type="application/json", **extra)
        return _Answer(answer.status_code, answer.content)


class _Answer:
    def __init__(self, status, data):
        self.status, self.data = status, data


def requests(server, token, table, kind: str, http=None):
    """An endless source of requests of `kind`: each a function that sends one and checks its
    status (through `http`: urllib3 to the server, or InProcess)."""
    from catalog.storage import join, storage_for

    table_id, location, name = table
    http = http or urllib3.PoolManager(maxsize=2)
    base = "" if isinstance(http, InProcess) else server.url
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    api, outcome, *extra = kind.split()
    reported = extra == ["reported"]  # with the backfill report delta-spark sends with every commit
    version = json.loads(http.request("GET", v1_path(base, name), headers=headers).data)["latest-table-version"]

    def send():
        nonlocal version
        if outcome == "read":  # a loser's re-read (bench/commits.py): loadTable, or the commits from the lost version
            if api == "v1":
                response = http.request("GET", v1_path(base, name), headers=headers)
            else:
                response = http.request("GET", f"{base}{UC}/delta/commits", headers=headers, fields={
                    "table_id": table_id, "table_uri": location, "start_version": version})
            assert response.status == 200, (kind, response.status, response.data[:300])
            return
        proposed = version + 1 if outcome == "commit" else 1  # version 1 is taken once the first commit ran
        file_name = f"{proposed:020d}.{uuid.uuid4()}.json"
        staged = join(location, "_delta_log", "_staged_commits", file_name)
        started = time.thread_time()
        storage_for(staged).put(staged, STAGED_COMMIT)
        STAGING_CPU[0] += time.thread_time() - started  # the client's, not the request's
        response = http.request("POST", v1_path(base, name) if api == "v1" else f"{base}{UC}/delta/commit",
                                headers=headers, body=json.dumps(proposal_body(
                                    api, table_id, location, proposed, file_name, backfilled=0 if reported else None)))
        expected = 200 if outcome == "commit" else 409
        assert response.status == expected, (kind, response.status, response.data[:300])
        if outcome == "commit":
            version = proposed

    return send


def profile(server, send, seconds: int, raw: Path) -> tuple[int, float]:
    """Requests sent and server CPU ms per request while py-spy records the worker for `seconds`."""
    for _ in range(20):  # warm: the token cache, lazy imports, the statements written once
        send()
    spy = subprocess.Popen([str(PY_SPY), "record", "--pid", str(worker_pid(server)), "--rate", "1000",
                            "--format", "raw", "--output", str(raw), "--duration", str(seconds), "--nolineno",
                            "--gil", "--nonblocking"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # py-spy attaches
    count, cpu_before = 0, server.cpu_seconds()
    deadline = time.perf_counter() + seconds - 1
    while time.perf_counter() < deadline:
        send()
        count += 1
    cpu = server.cpu_seconds() - cpu_before
    spy.wait()
    return count, 1000 * cpu / count


STAGING_CPU = [0.0]  # what writing the staged files cost this thread (the client's part of each commit)


def in_process_cpu(send, rounds: int = 7, count: int = 100) -> list[float]:
    """This thread's CPU ms per request, less what it spent writing staged files, for each of
    `rounds` rounds of `count` requests."""
    for _ in range(20):
        send()
    found = []
    for _ in range(rounds):
        started, staging = time.thread_time(), STAGING_CPU[0]
        for _ in range(count):
            send()
        found.append(1000 * (time.thread_time() - started - (STAGING_CPU[0] - staging)) / count)
    return found


def summary(raw: Path, count: int, top: int) -> list[str]:
    """The functions holding the most samples within the request (inclusive of what they call, and
    the functions that hold them themselves), as a share of the request's samples and in ms per
    request, from py-spy's collapsed stacks. Only the stacks under Django's WSGI handler count:
    granian's own threads and the pool's are not the request's."""
    inclusive, own, total = collections.Counter(), collections.Counter(), 0
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        frames = stack.split(";")
        names = []
        for frame in frames:
            match = FRAME.match(frame)
            names.append(f"{match['function']} ({match['module']})" if match else frame)
        if REQUEST not in names:
            continue
        names = names[names.index(REQUEST):]
        samples = int(samples)
        total += samples
        own[names[-1]] += samples
        for name in set(names):
            inclusive[name] += samples
    per_request = total / count if count else 0
    lines = [f"  {total} samples of the request's Python holding the GIL, {per_request:.2f} ms per request "
             "(1 sample = 1 ms)", "  inclusive:"]
    for name, samples in inclusive.most_common(top):
        lines.append(f"  {100 * samples / total:5.1f}%  {samples / count:6.3f} ms  {name}")
    lines.append("  own:")
    for name, samples in own.most_common(top // 2):
        lines.append(f"  {100 * samples / total:5.1f}%  {samples / count:6.3f} ms  {name}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10, help="how long each kind of request is profiled")
    parser.add_argument("--kinds", default="legacy commit,legacy 409,legacy read,v1 commit,v1 409,v1 read")
    parser.add_argument("--top", type=int, default=45, help="functions listed per kind")
    parser.add_argument("--raw", help="a folder to keep py-spy's collapsed stacks in")
    parser.add_argument("--in-process", action="store_true",
                        help="no py-spy: this process's CPU per request through Django's test client (InProcess)")
    args = parser.parse_args()

    bench = start("postgres://postgres@127.0.0.1:5432/ucweb_bench", 1, UCWEB_MAX_UNPUBLISHED_COMMITS=str(10**9))
    raw_dir = Path(args.raw or tempfile.mkdtemp(prefix="ucweb-profile-"))
    raw_dir.mkdir(parents=True, exist_ok=True)
    try:
        (table,) = create_tables(bench.server.url, bench.token, 1)
        requests(bench.server, bench.token, table, "legacy commit")()  # version 1: taken for the 409s
        for kind in args.kinds.split(",") if args.in_process else ():
            rounds = in_process_cpu(requests(bench.server, bench.token, table, kind, InProcess()))
            print(f"{kind}: in process, CPU ms per request (rounds of 100): median {statistics.median(rounds):.2f}, "
                  f"min {min(rounds):.2f} ({', '.join(f'{r:.2f}' for r in rounds)})")
        for kind in args.kinds.split(",") if not args.in_process else ():
            raw = raw_dir / f"{kind.replace(' ', '-')}.txt"
            count, cpu_ms = profile(bench.server, requests(bench.server, bench.token, table, kind), args.seconds, raw)
            print(f"\n{kind}: {count} requests, server CPU {cpu_ms:.2f} ms per request")
            print("\n".join(summary(raw, count, args.top)))
    finally:
        bench.server.stop()
    print(f"\npy-spy's collapsed stacks: {raw_dir}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
