"""What reaching a table through groups costs, beside reaching it through direct grants: the same
loadTable and Delta commit (`/delta/v1`), by a principal that holds USE CATALOG, USE SCHEMA,
SELECT and MODIFY itself, and by one that holds them only through groups (a member of 20 groups,
in 4 chains 5 deep, the privileges granted to the outermost group of one chain).

    .venv/bin/python bench/groups.py --requests 2000

It serves ucweb as `make run` does (bench/harness.py) on a fresh PostgreSQL database, alternates
the two principals in rounds (each going first in turn) so that both see the same machine, and prints requests per second
and the server's CPU per request for each, with the ratio grouped ÷ direct.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid

import urllib3
from harness import UC, create_delta_table, manage, start

STAGED_COMMIT = b'{"commitInfo":{"operation":"WRITE"}}\n'
CHAINS, DEPTH = 4, 5


def _principals(bench) -> dict[str, str]:
    """Tokens of `direct` and `grouped`, with their privileges on unity.default.bench."""
    from catalog.models import Principal
    from catalog.services import groups, permissions

    admin = Principal.objects.get(name="bench")
    tokens = {name: manage(bench.env, "issue_token", name).strip().splitlines()[-1] for name in ("direct", "grouped")}
    for chain in range(CHAINS):
        for level in range(DEPTH):
            groups.create_group(caller=admin, name=f"chain{chain}-level{level}")
            if level:
                groups.update_members(caller=admin, name=f"chain{chain}-level{level}",
                                      add_groups=[f"chain{chain}-level{level - 1}"])
        groups.update_members(caller=admin, name=f"chain{chain}-level0", add_principals=["grouped"])
    for grantee in ("direct", f"chain0-level{DEPTH - 1}"):
        for securable_type, full_name, privileges in (("catalog", "unity", ["USE CATALOG"]),
                                                      ("schema", "unity.default", ["USE SCHEMA"]),
                                                      ("table", "unity.default.bench", ["SELECT", "MODIFY"])):
            permissions.update_permissions(caller=admin, securable_type=securable_type, full_name=full_name,
                                           changes=[{"principal": grantee, "add": privileges}])
    assert len(groups.groups_of(Principal.objects.get(name="grouped"))) == CHAINS * DEPTH
    return tokens


def _run(bench, token: str, kind: str, requests: int, state: dict) -> tuple[float, float]:
    """`requests` loadTables or commits by one client; (requests per second, server CPU ms each)."""
    from catalog.storage import join, storage_for

    http = urllib3.PoolManager()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    path = f"{bench.server.url}{UC}/delta/v1/catalogs/unity/schemas/default/tables/bench"
    cpu_before = bench.server.cpu_seconds()
    started = time.perf_counter()
    for _ in range(requests):
        if kind == "load":
            response = http.request("GET", path, headers=headers)
        else:
            version = state["version"] + 1
            file_name = f"{version:020d}.{uuid.uuid4()}.json"
            staged = join(state["location"], "_delta_log", "_staged_commits", file_name)
            storage_for(staged).put(staged, STAGED_COMMIT)
            response = http.request("POST", path, headers=headers, body=json.dumps({
                "requirements": [{"type": "assert-table-uuid", "uuid": state["table_id"]}],
                "updates": [{"action": "add-commit", "commit": {
                    "version": version, "timestamp": 1700000000000 + version, "file-name": file_name,
                    "file-size": len(STAGED_COMMIT), "file-modification-timestamp": 1700000000000}}]}))
            state["version"] = version
        assert response.status == 200, (kind, response.status, response.data[:300])
    elapsed = time.perf_counter() - started
    cpu = bench.server.cpu_seconds() - cpu_before
    return requests / elapsed, 1000 * cpu / requests


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000, help="requests per principal, kind and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bench = start("postgres://postgres@127.0.0.1:5432/ucweb_bench", 1, UCWEB_MAX_UNPUBLISHED_COMMITS=str(10**9))
    try:
        fields = [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]
        table_id, location = create_delta_table(bench.server.url, bench.token, "bench", fields)
        tokens = _principals(bench)
        state = {"version": 0, "table_id": table_id, "location": location}
        totals = {(who, kind): [] for who in tokens for kind in ("load", "commit")}
        for round_ in range(args.rounds):
            # Each commit makes the table's log longer: the two take turns at going first.
            order = ("direct", "grouped") if round_ % 2 == 0 else ("grouped", "direct")
            for kind in ("load", "commit"):
                for who in order:
                    totals[(who, kind)].append(_run(bench, tokens[who], kind, args.requests, state))
    finally:
        bench.server.stop()
    print(f"\nReaching a table through {CHAINS * DEPTH} groups ({CHAINS} chains, {DEPTH} deep) beside direct "
          f"grants: {args.rounds} rounds of {args.requests} requests each, one client, one server worker, "
          f"{os.cpu_count()} CPUs\n")
    print("| request | direct req/s | grouped req/s | direct CPU ms/req | grouped CPU ms/req | grouped ÷ direct (CPU) |")
    print("|--|--:|--:|--:|--:|--:|")
    for kind, label in (("load", "loadTable (GET /delta/v1/.../tables/bench)"),
                        ("commit", "Delta commit (POST /delta/v1/... add-commit)")):
        direct, grouped = totals[("direct", kind)], totals[("grouped", kind)]
        rate = [sum(r for r, _ in runs) / len(runs) for runs in (direct, grouped)]
        cpu = [sum(c for _, c in runs) / len(runs) for runs in (direct, grouped)]
        print(f"| {label} | {rate[0]:.0f} | {rate[1]:.0f} | {cpu[0]:.2f} | {cpu[1]:.2f} | {cpu[1] / cpu[0]:.2f} |")


if __name__ == "__main__":
    main()
