"""Iceberg REST numbers: loadTable latency for a table with 1,000 snapshots (and UC GET table) beside a
bare SQL round trip that reads the same rows, commits per second on
one table and on many, listing 10,000 tables, and pyiceberg commits through ucweb beside pyiceberg's
own SqlCatalog on the same PostgreSQL and the same storage.

    .venv/bin/python bench/iceberg.py            # BENCH_DATABASE_URL picks the PostgreSQL database
    .venv/bin/python bench/iceberg.py --peer-only --seconds 5    # only ucweb vs SqlCatalog
    .venv/bin/python bench/iceberg.py --reads-only               # only loadTable / GET table vs bare SQL

It serves ucweb as `make run` does on a fresh database (`ucweb_bench_iceberg` on the local PostgreSQL
unless BENCH_DATABASE_URL says otherwise), drives it over HTTP, and prints a Markdown table.
Snapshots are added with `add-snapshot` commits that name manifest lists nobody reads: loadTable
serves metadata and never opens them. The 10,000 tables for the list are inserted with the ORM
(creating them over HTTP is not what is measured)."""

from __future__ import annotations

import argparse
import json
import os
import random
import threading
import time
from pathlib import Path

import urllib3

from harness import run_concurrently, start

ICEBERG = "/api/catalog/v1/unity"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": False},
    {"id": 2, "name": "city", "type": "string", "required": False}]}


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[int(fraction * (len(ordered) - 1))] * 1000


class Client:
    def __init__(self, base, token, pool=8):
        self.base = base
        self.http = urllib3.PoolManager(maxsize=pool)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method, path, body=None, **extra):
        headers = {**self.headers, **extra}
        response = self.http.request(method, f"{self.base}{path}", headers=headers,
                                     body=json.dumps(body) if body is not None else None)
        return response

    def create_table(self, namespace, name):
        response = self.call("POST", f"{ICEBERG}/namespaces/{namespace}/tables", {"name": name, "schema": SCHEMA})
        assert response.status == 200, response.data[:300]
        return response.json()

    def add_snapshot(self, namespace, name, metadata):
        """One commit that adds a snapshot on top of the current one; returns (status, metadata)."""
        snapshot_id = random.getrandbits(62)
        parent = metadata.get("current-snapshot-id")
        body = {
            "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
            "updates": [
                {"action": "add-snapshot", "snapshot": {
                    "snapshot-id": snapshot_id, "parent-snapshot-id": parent,
                    "sequence-number": metadata.get("last-sequence-number", 0) + 1,
                    "timestamp-ms": int(time.time() * 1000),
                    "manifest-list": f"{metadata['location']}/metadata/snap-{snapshot_id}.avro",
                    "summary": {"operation": "append"}, "schema-id": 0}},
                {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id},
            ],
        }
        response = self.call("POST", f"{ICEBERG}/namespaces/{namespace}/tables/{name}", body)
        return response.status, (response.json()["metadata"] if response.status == 200 else None)


def load_latency(client, namespace, name, count):
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        response = client.call("GET", f"{ICEBERG}/namespaces/{namespace}/tables/{name}")
        response.data  # noqa: B018 - read the whole body
        timings.append(time.perf_counter() - started)
        assert response.status == 200
    return timings


# The floor of a loadTable: one round trip on the same PostgreSQL, from the same process, that reads
# what a loadTable reads (the table row, its schema and catalog, and the metadata row that holds
# the current metadata file's text), over one connection in autocommit.
BARE_LOAD = """
SELECT t.*, s.path, c.name, m.metadata_location, m.metadata_json
FROM catalog_table t
JOIN catalog_schema s ON s.id = t.schema_id
JOIN catalog_catalog c ON c.id = s.catalog_id
JOIN commits_icebergmetadata m ON m.table_id = t.id
WHERE c.name = %s AND s.path = %s AND t.name = %s"""


def bare_sql_latency(database_url, catalog, namespace, name, count):
    import psycopg

    timings = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        for _ in range(count):
            started = time.perf_counter()
            row = conn.execute(BARE_LOAD, (catalog, namespace, name)).fetchone()
            timings.append(time.perf_counter() - started)
            assert row is not None
    return timings


def timed(call, count):
    timings = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        timings.append(time.perf_counter() - started)
    return timings


def load_rows(client, server, database_url, name, loads):
    """loadTable and UC GET table of one table, beside the bare SQL round trip, with the server's
    CPU time per request."""
    size = len(client.call("GET", f"{ICEBERG}/namespaces/bench/tables/{name}").data)
    bare = percentile(bare_sql_latency(database_url, "unity", "bench", name, loads), .5)
    rows = [(f"bare SQL round trip (psycopg: table, schema, catalog and metadata rows, {size // 1024} KiB)",
             f"{bare:.2f}", "", "1.00x", "")]

    def measured(label, path, status):
        def call():
            response = client.call("GET", path)
            response.data  # noqa: B018 - read the whole body
            assert response.status == status, response.data[:300]

        cpu = server.cpu_seconds()
        timings = timed(call, loads)
        cpu_ms = (server.cpu_seconds() - cpu) * 1000 / loads
        p50 = percentile(timings, .5)
        rows.append((label, f"{p50:.2f}", f"{percentile(timings, .99):.2f}", f"{p50 / bare:.2f}x", f"{cpu_ms:.2f}"))

    # The floor: a request that does nothing (no authentication, no query) through the same server.
    measured("floor: GET /healthz", "/healthz", 200)
    measured("loadTable", f"{ICEBERG}/namespaces/bench/tables/{name}", 200)
    measured("UC GET table", f"/api/2.1/unity-catalog/tables/unity.bench.{name}", 200)
    return rows


def commit_rate(client, namespace, names, writers, seconds):
    deadline = time.perf_counter() + seconds
    counts = {"ok": 0, "conflict": 0}
    lock = threading.Lock()
    latencies = []

    def writer(seed):
        rng = random.Random(seed)
        cache = {}
        while time.perf_counter() < deadline:
            name = rng.choice(names)
            if name not in cache:
                cache[name] = client.call("GET", f"{ICEBERG}/namespaces/{namespace}/tables/{name}").json()["metadata"]
            started = time.perf_counter()
            status, metadata = client.add_snapshot(namespace, name, cache[name])
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                counts["ok" if status == 200 else "conflict"] += 1
            if status == 200:
                cache[name] = metadata
            else:
                cache.pop(name)

    elapsed = run_concurrently(writer, writers)
    return counts["ok"] / elapsed, counts["conflict"], latencies


# -- ucweb beside pyiceberg's SqlCatalog -----------------------------------------------------------
# The same client (pyiceberg) does the same work against both catalogs: a metadata-only commit
# (set-properties) or an append of a small Parquet file, on a table drawn at random from 100.
# SqlCatalog keeps its pointer table in the same PostgreSQL database and writes under the same
# storage root; it is what a Python user gets without a REST catalog.
PEER_TABLES = 100


def rest_catalog(server_url, token):
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("ucweb", uri=f"{server_url}/api/catalog", token=token, warehouse="unity")


def sql_catalog(database_url, storage):
    from pyiceberg.catalog.sql import SqlCatalog

    uri = database_url.replace("postgres://", "postgresql+psycopg://", 1)
    return SqlCatalog("peer", uri=uri, warehouse=Path(storage, "sqlcatalog").as_uri())


def _rows():
    import pyarrow as pa

    return pa.table({"id": pa.array(range(10), pa.int64()), "city": pa.array(["x"] * 10, pa.string())})


class PeerWriters:
    """`writers` threads' pyiceberg clients of one catalog, each with the tables it has loaded, kept
    from one round to the next (a round measures commits, not loads)."""

    def __init__(self, make_catalog, writers):
        self.catalogs = [make_catalog() for _ in range(writers)]
        self.tables = [{} for _ in range(writers)]
        self.rngs = [random.Random(index) for index in range(writers)]


def pyiceberg_rate(peer, namespace, names, seconds, append):
    """(commits, seconds, conflicts, latencies) of the peer's writers, each a thread, for `seconds`."""
    from pyiceberg.exceptions import CommitFailedException

    data = _rows()
    lock = threading.Lock()
    counts = {"ok": 0, "conflict": 0}
    latencies = []
    writers = len(peer.catalogs)
    barrier = threading.Barrier(writers + 1)
    deadline = [0.0]

    def writer(index):
        catalog, rng, tables = peer.catalogs[index], peer.rngs[index], peer.tables[index]
        barrier.wait()
        while time.perf_counter() < deadline[0]:
            name = rng.choice(names)
            if name not in tables:
                tables[name] = catalog.load_table((namespace, name))
            table = tables[name]
            started = time.perf_counter()
            try:
                if append:
                    table.append(data)
                else:
                    table.transaction().set_properties({"bench.commit": str(rng.getrandbits(32))}).commit_transaction()
                outcome = "ok"
            except CommitFailedException:
                outcome = "conflict"
                tables.pop(name)
            elapsed = time.perf_counter() - started
            with lock:
                counts[outcome] += 1
                latencies.append(elapsed)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    deadline[0] = time.perf_counter() + seconds
    started = time.perf_counter()
    barrier.wait()
    for thread in threads:
        thread.join()
    return counts["ok"], time.perf_counter() - started, counts["conflict"], latencies


def peer_rows(server, token, database_url, storage, seconds, rounds):
    """ucweb vs SqlCatalog, metadata-only commits and appends, 1 and 8 writers over 100 tables,
    with the server's CPU time per ucweb commit. Each case alternates the two catalogs `rounds`
    times (seconds / rounds each), so that a change in the machine's other load falls on both."""
    from pyiceberg.schema import Schema as IcebergSchema

    schema = IcebergSchema.model_validate(SCHEMA)
    names = [f"peer_{i}" for i in range(PEER_TABLES)]
    peers = {"ucweb": lambda: rest_catalog(server.url, token), "SqlCatalog": lambda: sql_catalog(database_url, storage)}
    for label, make in peers.items():
        catalog = make()
        catalog.create_namespace("peer")
        for name in names:
            catalog.create_table(("peer", name), schema=schema)
    rows = []
    for append in (False, True):
        for writers in (1, 8):
            ours, theirs = PeerWriters(peers["ucweb"], writers), PeerWriters(peers["SqlCatalog"], writers)
            totals = {"ucweb": [0, 0.0, 0, []], "SqlCatalog": [0, 0.0, 0, []]}
            cpu = 0.0
            for _ in range(rounds):
                for label, peer in (("ucweb", ours), ("SqlCatalog", theirs)):
                    before = server.cpu_seconds()
                    result = pyiceberg_rate(peer, "peer", names, seconds / rounds, append)
                    if label == "ucweb":
                        cpu += server.cpu_seconds() - before
                    total = totals[label]
                    total[0] += result[0]
                    total[1] += result[1]
                    total[2] += result[2]
                    total[3] += result[3]
            (our_ok, our_time, our_conflicts, our_latencies) = totals["ucweb"]
            (their_ok, their_time, their_conflicts, their_latencies) = totals["SqlCatalog"]
            ours_rate, theirs_rate = our_ok / our_time, their_ok / their_time
            cpu_ms = cpu * 1000 / max(1, len(our_latencies))
            what = "append (10 rows)" if append else "metadata-only (set-properties)"
            rows.append((f"{what}, {writers} writer(s), {PEER_TABLES} tables",
                         f"{ours_rate:.0f} ({our_conflicts} conflicts)", f"{percentile(our_latencies, .5):.1f}",
                         f"{cpu_ms:.1f}",
                         f"{theirs_rate:.0f} ({their_conflicts} conflicts)", f"{percentile(their_latencies, .5):.1f}",
                         f"{ours_rate / theirs_rate:.2f}x"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snapshots", type=int, default=1000)
    parser.add_argument("--loads", type=int, default=200)
    parser.add_argument("--tables", type=int, default=10_000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5,
                        help="ucweb and SqlCatalog take turns this many times in each peer case")
    parser.add_argument("--peer-only", action="store_true", help="only ucweb beside pyiceberg's SqlCatalog")
    parser.add_argument("--reads-only", action="store_true",
                        help="only loadTable and UC GET table beside the bare SQL round trip")
    args = parser.parse_args()

    bench = start("postgres://postgres@127.0.0.1:5432/ucweb_bench_iceberg", args.workers)
    server, token, database_url, storage = bench.server, bench.token, bench.database_url, bench.storage
    rows, peer, loads = [], [], []
    try:
        if not args.reads_only:
            peer = peer_rows(server, token, database_url, storage, args.seconds, args.rounds)
        if args.peer_only:
            return
        client = Client(server.url, token, pool=32)
        assert client.call("POST", f"{ICEBERG}/namespaces", {"namespace": ["bench"]}).status == 200
        table = client.create_table("bench", "history")
        metadata = table["metadata"]
        for _ in range(args.snapshots):
            status, metadata = client.add_snapshot("bench", "history", metadata)
            assert status == 200
        loads = load_rows(client, server, database_url, "history", args.loads)
        if args.reads_only:
            return
        size = len(client.call("GET", f"{ICEBERG}/namespaces/bench/tables/history").data)
        timings = load_latency(client, "bench", "history", args.loads)
        rows.append((f"loadTable, {args.snapshots} snapshots ({size // 1024} KiB)", f"{percentile(timings, .5):.1f}",
                     f"{percentile(timings, .99):.1f}", f"{len(timings) / sum(timings):.0f} loads/s (1 client)"))
        etag = client.call("GET", f"{ICEBERG}/namespaces/bench/tables/history").headers["ETag"]
        cached = []
        for _ in range(args.loads):
            started = time.perf_counter()
            response = client.call("GET", f"{ICEBERG}/namespaces/bench/tables/history", **{"If-None-Match": etag})
            cached.append(time.perf_counter() - started)
            assert response.status == 304
        rows.append(("loadTable with If-None-Match (304)", f"{percentile(cached, .5):.1f}",
                     f"{percentile(cached, .99):.1f}", ""))

        # Each case commits to tables of its own: a table that an earlier case filled with snapshots
        # makes every commit of a later one slower, the more so the faster the earlier case was.
        for writers, tables in ((1, 1), (8, 1), (8, 100)):
            names = [f"w{writers}t{tables}_{i}" for i in range(tables)]
            for name in names:
                client.create_table("bench", name)
            rate, conflicts, latencies = commit_rate(client, "bench", names, writers, args.seconds)
            rows.append((f"commit, {writers} writers, {tables} table(s)", f"{percentile(latencies, .5):.1f}",
                         f"{percentile(latencies, .99):.1f}", f"{rate:.0f} commits/s, {conflicts} conflicts"))

        from catalog.models import Schema, Table

        schema = Schema.objects.get(catalog__name="unity", name="bench")
        Table.objects.bulk_create(
            [Table(schema=schema, name=f"listed_{i:05d}", table_type="MANAGED", data_source_format="ICEBERG",
                   owner="bench", created_by="bench") for i in range(args.tables)], batch_size=2000)
        started = time.perf_counter()
        response = client.call("GET", f"{ICEBERG}/namespaces/bench/tables")
        listed = len(response.json()["identifiers"])
        whole = time.perf_counter() - started
        started = time.perf_counter()
        token_, pages = "", 0
        while True:
            page = client.call("GET", f"{ICEBERG}/namespaces/bench/tables?pageSize=1000&pageToken={token_}").json()
            pages += 1
            token_ = page.get("next-page-token")
            if not token_:
                break
        paged = time.perf_counter() - started
        rows.append((f"list tables in one response ({listed} identifiers)", f"{whole * 1000:.0f}", "", ""))
        rows.append((f"list tables in pages of 1000 ({pages} requests)", f"{paged * 1000:.0f}", "", ""))
    finally:
        server.stop()
        print_tables(args, rows, peer, loads)


def _print(header, rows):
    print(header)
    print("|" + "|".join("---" if index == 0 else "--:" for index in range(header.count("|") - 1)) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def print_tables(args, rows, peer, loads):
    print(f"\nucweb Iceberg REST, served as `make run` serves it ({args.workers} workers), {os.cpu_count()} CPUs shared "
          f"by server, clients and PostgreSQL\n")
    if loads:
        print(f"Reading one table ({args.snapshots} snapshots), 1 client, beside the bare SQL round trip\n")
        _print("| read | p50 ms | p99 ms | p50 / bare SQL | server CPU ms |", loads)
        print()
    _print("| measurement | p50 ms | p99 ms | rate |", rows)
    print("\npyiceberg commits through ucweb and through pyiceberg's SqlCatalog (same PostgreSQL, same storage)\n")
    _print("| commit | ucweb commits/s | ucweb p50 ms | ucweb server CPU ms/commit | SqlCatalog commits/s "
           "| SqlCatalog p50 ms | ucweb / SqlCatalog |", peer)


if __name__ == "__main__":
    main()
