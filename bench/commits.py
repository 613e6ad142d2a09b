"""Ratified Delta commits per second through the HTTP API, beside what PostgreSQL itself does for
the same transaction (row lock + insert + update) under pgbench. Both commit paths are measured:
the legacy `/delta/commit` (seed 000) and the Delta REST API `/delta/v1` updateTable with
`add-commit` (managed tables spec 1.0); they share one ratification.

    make bench                      # or: .venv/bin/python bench/commits.py --seconds 10

It creates a database (`ucweb_bench` on the local PostgreSQL unless BENCH_DATABASE_URL says
otherwise), serves ucweb as `make run` does (bench/harness.py) on a free port, creates managed
Delta tables through the API, then runs writers that each propose `latest + 1` on a random table of the set (re-reading
the latest version after a 409: loadTable on `/delta/v1`, the commits from the lost version on
through GET /delta/commits), and prints a Markdown table. Writers and server share the
machine, so the numbers are for this machine, not a ceiling of the design. Beside them, a floor:
requests that do nothing, through the same server by as many clients.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from urllib.parse import urlparse

import urllib3
from harness import UC, create_delta_table, run_concurrently, start


def create_tables(base: str, token: str, count: int) -> list[tuple[str, str, str]]:
    fields = [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]
    return [(*create_delta_table(base, token, f"bench_{index}", fields), f"bench_{index}") for index in range(count)]


STAGED_COMMIT = (
    b'{"commitInfo":{"inCommitTimestamp":1700000000000,"operation":"WRITE"}}\n'
    b'{"add":{"path":"part-0.parquet","size":512,"modificationTime":1700000000000,"dataChange":true,'
    b'"partitionValues":{}}}\n'
)


def policy_read_cost(location: str, reads: int = 2000) -> float:
    """Microseconds the commit endpoint spends reading a staged commit (size, digest, operation)."""
    from catalog.storage import join, storage_for
    from commits.staged import read_staged_commit

    file_name = f"{1:020d}.{uuid.uuid4()}.json"
    staged = join(location, "_delta_log", "_staged_commits", file_name)
    storage_for(staged).put(staged, STAGED_COMMIT)
    started = time.perf_counter()
    for _ in range(reads):
        assert read_staged_commit(location, file_name).operation == "WRITE"
    return (time.perf_counter() - started) / reads * 1e6


def v1_path(base: str, name: str) -> str:
    return f"{base}{UC}/delta/v1/catalogs/unity/schemas/default/tables/{name}"


def proposal_body(api: str, table_id: str, location: str, version: int, file_name: str, *,
                  backfilled: int | None = None) -> dict:
    """The body of a proposal of `version` (the staged file `file_name`) by either path; with
    `backfilled`, carrying that backfill report too, as delta-spark's commits do."""
    if api == "v1":
        updates = [{"action": "add-commit", "commit": {
            "version": version, "timestamp": 1700000000000 + version, "file-name": file_name,
            "file-size": len(STAGED_COMMIT), "file-modification-timestamp": 1700000000000}}]
        if backfilled is not None:
            updates.append({"action": "set-latest-backfilled-version", "latest-published-version": backfilled})
        return {"requirements": [{"type": "assert-table-uuid", "uuid": table_id}], "updates": updates}
    body = {"table_id": table_id, "table_uri": location, "commit_info": {
        "version": version, "timestamp": 1700000000000 + version, "file_name": file_name,
        "file_size": len(STAGED_COMMIT), "file_modification_timestamp": 1700000000000}}
    if backfilled is not None:
        body["latest_backfilled_version"] = backfilled
    return body


def run_writers(server, token, tables, writers, seconds, api="legacy", report_backfill=False):
    base = server.url
    from catalog.storage import join, storage_for

    http = urllib3.PoolManager(maxsize=writers * 2)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    results = []  # (latency seconds, status)
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def latest(table_id, location, name, start_version=0):
        """The latest version, read as a client rebuilding its snapshot reads it: loadTable, or the
        ratified commits from the first version it does not know (the one it lost)."""
        if api == "v1":
            return http.request("GET", v1_path(base, name), headers=headers).json()["latest-table-version"]
        response = http.request("GET", f"{base}{UC}/delta/commits", headers=headers,
                                fields={"table_id": table_id, "table_uri": location, "start_version": start_version})
        return response.json()["latest_table_version"]

    def propose(table_id, location, name, version, file_name):
        url = v1_path(base, name) if api == "v1" else f"{base}{UC}/delta/commit"
        return http.request("POST", url, headers=headers, body=json.dumps(proposal_body(
            api, table_id, location, version, file_name, backfilled=0 if report_backfill else None)))

    def writer(seed):
        rng = random.Random(seed)
        known, lost = {}, {}
        local = []
        while time.perf_counter() < deadline:
            table_id, location, name = rng.choice(tables)
            if table_id not in known:
                known[table_id] = latest(table_id, location, name, lost.pop(table_id, 0))
            version = known[table_id] + 1
            file_name = f"{version:020d}.{uuid.uuid4()}.json"
            # Like a Delta client, stage the commit file first: the server reads its
            # commitInfo.operation for the maintenance policy before ratifying.
            staged = join(location, "_delta_log", "_staged_commits", file_name)
            storage_for(staged).put(staged, STAGED_COMMIT)
            started = time.perf_counter()
            response = propose(table_id, location, name, version, file_name)
            local.append((time.perf_counter() - started, response.status))
            if response.status == 200:
                known[table_id] = version
            else:
                known.pop(table_id)
                lost[table_id] = version
        with lock:
            results.extend(local)

    cpu_before = server.cpu_seconds()
    elapsed = run_concurrently(writer, writers)
    cpu = server.cpu_seconds() - cpu_before
    latencies = sorted(latency for latency, _ in results)
    ok = sum(1 for _, status in results if status == 200)
    conflicts = sum(1 for _, status in results if status == 409)
    other = len(results) - ok - conflicts
    return {
        "commits_per_s": ok / elapsed,
        # Every request's CPU (409s and the writers' GETs of the latest version included), per
        # ratified commit: what one commit costs the server on this machine.
        "cpu_ms_per_commit": 1000 * cpu / ok if ok else float("nan"),
        "attempts_per_s": len(results) / elapsed,
        "conflicts": conflicts,
        "errors": other,
        "p50_ms": 1000 * statistics.median(latencies) if latencies else float("nan"),
        "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))] if latencies else float("nan"),
    }


def run_floor(server, writers, seconds):
    """GET /healthz (no authentication, no query, no storage) by `writers` clients on the same
    server: the most requests per second any commit path could reach on this machine, since a
    commit is such a request plus its own work."""
    http = urllib3.PoolManager(maxsize=writers * 2)
    latencies = []
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(_):
        local = []
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            response = http.request("GET", f"{server.url}/healthz")
            local.append(time.perf_counter() - started)
            assert response.status == 200, response.status
        with lock:
            latencies.extend(local)

    cpu_before = server.cpu_seconds()
    elapsed = run_concurrently(client, writers)
    cpu = server.cpu_seconds() - cpu_before
    latencies.sort()
    return {"commits_per_s": len(latencies) / elapsed, "cpu_ms_per_commit": 1000 * cpu / len(latencies),
            "attempts_per_s": len(latencies) / elapsed, "conflicts": 0, "errors": 0,
            "p50_ms": 1000 * statistics.median(latencies),
            "p99_ms": 1000 * latencies[int(0.99 * (len(latencies) - 1))]}


PGBENCH_SCRIPT = """\\set tid random(1, :ntables)
BEGIN;
SELECT latest_version FROM bench_table WHERE id = :tid FOR UPDATE;
INSERT INTO bench_commit (table_id, version, file_name, file_size, ratified_at)
  SELECT id, latest_version + 1, md5(random()::text), 512, now() FROM bench_table WHERE id = :tid;
UPDATE bench_table SET latest_version = latest_version + 1 WHERE id = :tid;
END;
"""


def pgbench(url: str, clients: int, tables: int, seconds: int):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_commit, bench_table")
        conn.execute("CREATE TABLE bench_table (id int PRIMARY KEY, latest_version bigint NOT NULL)")
        conn.execute("CREATE TABLE bench_commit (table_id int REFERENCES bench_table, version bigint, "
                     "file_name text, file_size bigint, ratified_at timestamptz, PRIMARY KEY (table_id, version))")
        conn.execute("INSERT INTO bench_table SELECT g, 0 FROM generate_series(1, %s) g", (tables,))
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as script:
        script.write(PGBENCH_SCRIPT)
    parsed = urlparse(url)
    command = ["pgbench", "-n", "-f", script.name, "-c", str(clients), "-j", str(min(clients, 2)),
               "-T", str(seconds), "-D", f"ntables={tables}", "-h", parsed.hostname or "127.0.0.1",
               "-p", str(parsed.port or 5432), "-U", parsed.username or "postgres", parsed.path.lstrip("/")]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    os.unlink(script.name)
    tps = float(re.search(r"tps = ([\d.]+)", output).group(1))
    latency = float(re.search(r"latency average = ([\d.]+) ms", output).group(1))
    return {"tps": tps, "latency_ms": latency}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10, help="duration of each run")
    parser.add_argument("--writers", default="1,8,32")
    parser.add_argument("--tables", default="1,100")
    parser.add_argument("--workers", type=int, default=2, help="server worker processes (UCWEB_WORKERS)")
    parser.add_argument("--apis", default="legacy,v1", help="commit paths: legacy (/delta/commit), v1 (/delta/v1)")
    parser.add_argument("--report-backfill", action="store_true",
                        help="every proposal carries a backfill report (version 0), as delta-spark's commits do")
    args = parser.parse_args()

    bench = start("postgres://postgres@127.0.0.1:5432/ucweb_bench", args.workers,
                  UCWEB_MAX_UNPUBLISHED_COMMITS=str(10**9))
    server, token, database_url = bench.server, bench.token, bench.database_url
    try:
        table_counts = [int(n) for n in args.tables.split(",")]
        all_tables = create_tables(server.url, token, max(table_counts))
        rows = []
        for tables in table_counts:
            for writers in [int(n) for n in args.writers.split(",")]:
                pg = pgbench(database_url, writers, tables, args.seconds)
                rows.append(("floor: GET /healthz", writers, tables, run_floor(server, writers, args.seconds), pg))
                for path in args.apis.split(","):
                    api = run_writers(server, token, all_tables[:tables], writers, args.seconds, api=path,
                                      report_backfill=args.report_backfill)
                    rows.append((path, writers, tables, api, pg))
                    print(f"path={path} writers={writers} tables={tables} api={api} pgbench={pg}", file=sys.stderr)
        policy_us = policy_read_cost(all_tables[0][1])
    finally:
        server.stop()

    print(f"\nucweb ratified commits, {args.seconds} s per run, served as `make run` serves it "
          f"(scripts/run_server.sh, {args.workers} workers), {os.cpu_count()} CPUs shared by server, writers and "
          "PostgreSQL\n")
    print("| path | writers | tables | commits/s | attempts/s | 409s | p50 ms | p99 ms | server CPU ms/commit "
          "| pgbench tps (same txn) | pgbench avg ms | commits/s ÷ pgbench tps |")
    print("|--|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for path, writers, tables, api, pg in rows:
        print(f"| {path} | {writers} | {tables} | {api['commits_per_s']:.0f} | {api['attempts_per_s']:.0f} | {api['conflicts']} "
              f"| {api['p50_ms']:.1f} | {api['p99_ms']:.1f} | {api['cpu_ms_per_commit']:.2f} | {pg['tps']:.0f} "
              f"| {pg['latency_ms']:.2f} | {api['commits_per_s'] / pg['tps']:.0%} |")
        if api["errors"]:
            print(f"(!) {api['errors']} requests failed with neither 200 nor 409", file=sys.stderr)
    print("\nThe floor rows are requests that do nothing (GET /healthz: no authentication, no query) "
          "through the same server, by the same number of clients, beside the same pgbench run: no "
          "commit, which is such a request and more, can be faster on this machine.")
    print(f"\nEach ratification reads the staged commit's operation for the maintenance policy: "
          f"{policy_us:.0f} µs per commit on file:// (measured alone; included in the rows above).")


if __name__ == "__main__":
    main()
