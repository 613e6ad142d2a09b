"""What the catalog's common reads cost the server, beside the floor under every request: UC
`GET /catalogs/{name}`, UC `GET /tables/{full_name}` and Iceberg loadTable of a small table,
each by a metastore admin and by a reader who holds only grants (USE CATALOG, USE SCHEMA,
SELECT), beside an empty `GET /healthz` through the same server.

    .venv/bin/python bench/reads.py --rounds 6 --requests 300
    .venv/bin/python bench/reads.py --against ../before     # another checkout, same database

ucweb is served as `make run` serves it (one worker), on a fresh database (`ucweb_bench_reads`
unless BENCH_DATABASE_URL says otherwise). One keep-alive client sends, round after round,
`--requests` requests of each kind; the server's CPU time (/proc) before and after each batch
gives CPU ms per request, and the median over the rounds is printed with its spread (min-max).
With `--against`, a second checkout serves the same database at once and the rounds alternate
between the two, so that the other work on the machine falls on both alike: compare the ratios
within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import urllib3
from harness import UC, Server, free_port, manage, start

ICEBERG = "/api/catalog/v1/unity"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": False},
    {"id": 2, "name": "city", "type": "string", "required": False}]}
KINDS = {  # label -> path; the floor first
    "floor: GET /healthz": "/healthz",
    "UC GET /catalogs/unity": f"{UC}/catalogs/unity",
    "UC GET /tables/unity.default.small": f"{UC}/tables/unity.default.small",
    "Iceberg loadTable default.small": f"{ICEBERG}/namespaces/default/tables/small",
}


def _prepare(base: str, admin: str, env: dict) -> str:
    """The small Iceberg table unity.default.small, and the token of `reader`, who may read it
    through grants only."""
    http = urllib3.PoolManager()
    headers = {"Authorization": f"Bearer {admin}", "Content-Type": "application/json"}
    response = http.request("POST", f"{base}{ICEBERG}/namespaces/default/tables", headers=headers,
                            body=json.dumps({"name": "small", "schema": SCHEMA}))
    assert response.status == 200, response.data[:300]
    reader = manage(env, "issue_token", "reader").strip().splitlines()[-1]
    for securable_type, full_name, privilege in (("catalog", "unity", "USE CATALOG"),
                                                 ("schema", "unity.default", "USE SCHEMA"),
                                                 ("table", "unity.default.small", "SELECT")):
        response = http.request("PATCH", f"{base}{UC}/permissions/{securable_type}/{full_name}", headers=headers,
                                body=json.dumps({"changes": [{"principal": "reader", "add": [privilege]}]}))
        assert response.status == 200, response.data[:300]
    return reader


def _measure(server: Server, http: urllib3.HTTPConnectionPool, path: str, token: str | None,
             count: int) -> float:
    """Server CPU ms per request of `count` sequential requests."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    before = server.cpu_seconds()
    for _ in range(count):
        response = http.request("GET", path, headers=headers)
        assert response.status == 200, (path, response.status, response.data[:300])
    return 1000 * (server.cpu_seconds() - before) / count


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=300, help="requests of each kind per round")
    parser.add_argument("--against", type=Path, help="another checkout to serve the same database, alternating")
    args = parser.parse_args()
    bench = start("postgres://postgres@127.0.0.1:5432/ucweb_bench_reads", 1)
    servers = {"this tree": bench.server}
    try:
        reader = _prepare(bench.server.url, bench.token, bench.env)
        if args.against:
            var = Path(bench.env["UCWEB_VAR_DIR"]) / "against"
            var.mkdir()
            servers[f"{args.against}"] = Server({**bench.env, "UCWEB_VAR_DIR": str(var)}, free_port(),
                                                root=args.against.resolve(), log="against.log")
        callers = {"admin": bench.token, "reader": reader}
        pools = {name: urllib3.HTTPConnectionPool("127.0.0.1", int(server.url.rsplit(":", 1)[1]), maxsize=1)
                 for name, server in servers.items()}
        jobs = [(label, path, caller) for label, path in KINDS.items()
                for caller in ((None,) if path == "/healthz" else callers)]
        samples = {(name, job): [] for name in servers for job in jobs}
        for name, server in servers.items():  # warm: imports, pools, caches
            for label, path, caller in jobs:
                _measure(server, pools[name], path, callers.get(caller), 50)
        for round_number in range(args.rounds):
            order = list(servers) if round_number % 2 == 0 else list(servers)[::-1]
            for name in order:
                for job in jobs:
                    label, path, caller = job
                    samples[(name, job)].append(
                        _measure(servers[name], pools[name], path, callers.get(caller), args.requests))
    finally:
        for server in servers.values():
            server.stop()
    print(f"\nServer CPU per request: one worker as `make run` serves it, one keep-alive client, {args.rounds} "
          f"rounds of {args.requests} requests of each kind, {os.cpu_count()} CPUs shared with the client and "
          f"PostgreSQL\n")
    print("| tree | request | caller | CPU ms/req | min-max over rounds | ÷ floor |")
    print("|--|--|--|--:|--:|--:|")
    for name in servers:
        floor = statistics.median(samples[(name, jobs[0])])
        for job in jobs:
            label, _, caller = job
            cpus = samples[(name, job)]
            cpu = statistics.median(cpus)
            print(f"| {name} | {label} | {caller or ''} | {cpu:.2f} | {min(cpus):.2f}-{max(cpus):.2f} "
                  f"| {cpu / floor:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
