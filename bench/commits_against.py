"""What one Delta commit, one lost race (409) and one loser's re-read cost the server in this tree
beside another checkout, served at once on one database with rounds alternating between the two,
so that the other work on the machine falls on both alike.

    .venv/bin/python bench/commits_against.py --against ../before
    .venv/bin/python bench/commits_against.py --against ../before --kinds "legacy commit,v1 commit" --rounds 8

Each tree is served as `make run` serves it (one worker here), each kind of request on a table of
its own (bench/commit_profile.py's requests: one client, the next version each time, a staged file
written before each commit). The server's CPU (/proc) before and after each batch gives CPU ms per
request; the median over the rounds is printed with the rounds, and this tree's over the other's.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
from pathlib import Path

from harness import Server, free_port, start

_spec = importlib.util.spec_from_file_location("bench_commit_profile", Path(__file__).with_name("commit_profile.py"))
profile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(profile)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="another checkout, served beside this one")
    parser.add_argument("--kinds", default="legacy commit,legacy 409,v1 commit,v1 409")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=150, help="requests of each kind per round")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    bench = start("postgres://postgres@127.0.0.1:5432/ucweb_bench_against", 1,
                  UCWEB_MAX_UNPUBLISHED_COMMITS=str(10**9))
    var = Path(bench.env["UCWEB_VAR_DIR"]) / "against"
    var.mkdir()
    servers = {"this tree": bench.server}
    try:
        servers[str(args.against)] = Server({**bench.env, "UCWEB_VAR_DIR": str(var)}, free_port(),
                                            root=args.against.resolve(), log="against.log")
        tables = iter(profile.create_tables(bench.server.url, bench.token, len(servers) * len(kinds)))
        senders = {}
        for name, server in servers.items():
            for kind in kinds:
                table = next(tables)
                if kind.split()[1] == "409":  # version 1 taken, so that every proposal of it loses
                    profile.requests(server, bench.token, table, kind.split()[0] + " commit")()
                senders[(name, kind)] = profile.requests(server, bench.token, table, kind)
        for send in senders.values():  # warm: imports, pools, the statements written once
            for _ in range(30):
                send()
        samples = {key: [] for key in senders}
        for round_number in range(args.rounds):
            for name in list(servers) if round_number % 2 == 0 else list(servers)[::-1]:
                for kind in kinds:
                    send, server = senders[(name, kind)], servers[name]
                    before = server.cpu_seconds()
                    for _ in range(args.requests):
                        send()
                    samples[(name, kind)].append(1000 * (server.cpu_seconds() - before) / args.requests)
    finally:
        for server in servers.values():
            server.stop()
    print(f"\nServer CPU per request: one worker per tree, one client, {args.rounds} alternating rounds of "
          f"{args.requests} requests of each kind, {os.cpu_count()} CPUs shared with the client and PostgreSQL\n")
    print("| request | tree | CPU ms/req | rounds | this tree ÷ other |")
    print("|--|--|--:|--|--:|")
    other = str(args.against)
    for kind in kinds:
        mine = statistics.median(samples[("this tree", kind)])
        for name in servers:
            cpus = samples[(name, kind)]
            ratio = f"{mine / statistics.median(cpus):.2f}" if name == other else ""
            print(f"| {kind} | {name} | {statistics.median(cpus):.2f} | {', '.join(f'{c:.2f}' for c in cpus)} "
                  f"| {ratio} |")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
