"""Scan planning of a selective query on a table of 10,000 data files: pyiceberg planning on the
client (its own manifest reading, on the same machine and the same file:// storage as the server:
the client's best case, no network between it and the files) beside pyiceberg in
`scan-planning-mode=server` (planTableScan), in one run.

    .venv/bin/python bench/scan_planning.py                 # 10,000 files in 10 appends
    .venv/bin/python bench/scan_planning.py --files 2000 --rounds 5

It serves ucweb as `make run` does on a fresh database (`ucweb_bench_scan` on the local PostgreSQL
unless BENCH_DATABASE_URL says otherwise) and builds the table with pyiceberg through the catalog:
`--appends` appends of a partitioned Arrow table, one one-row file per partition value, so each
append adds one manifest of files/appends entries. The query filters on `id`, which is not a
partition source: no manifest can be skipped on its partition summary, every entry's column
statistics are evaluated, and one file is left. Each round times loadTable + planning (until the
file scan tasks are in hand) both ways, alternating, and the rounds' median and spread are printed;
the server's first plan (its manifests not yet read) is printed on its own."""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType

from harness import start

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "part", LongType(), required=False),
                NestedField(3, "city", StringType(), required=False))
BY_PART = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="part"))
ARROW = pa.schema([pa.field("id", pa.int64()), pa.field("part", pa.int64()), pa.field("city", pa.string())])


def build(catalog: RestCatalog, files: int, appends: int):
    catalog.create_namespace("bench")
    table = catalog.create_table(("bench", "wide"), schema=SCHEMA, partition_spec=BY_PART)
    per_append = files // appends
    for append in range(appends):
        ids = list(range(append * per_append, (append + 1) * per_append))
        table.append(pa.Table.from_pydict({"id": ids, "part": ids, "city": [f"c{i % 7}" for i in ids]}, schema=ARROW))
    return catalog.load_table(("bench", "wide"))


def plan_seconds(catalog: RestCatalog, row_filter) -> tuple[float, list[str]]:
    started = time.perf_counter()
    tasks = list(catalog.load_table(("bench", "wide")).scan(row_filter=row_filter).plan_files())
    return time.perf_counter() - started, sorted(task.file.file_path for task in tasks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()

    bench = start("postgres://postgres@127.0.0.1:5432/ucweb_bench_scan", args.workers)
    try:
        uri = f"{bench.server.url}/api/catalog"
        client = RestCatalog("client", uri=uri, token=bench.token, warehouse="unity")
        server = RestCatalog("server", uri=uri, token=bench.token, warehouse="unity",
                             **{"scan-planning-mode": "server"})
        started = time.perf_counter()
        table = build(client, args.files, args.appends)
        built = time.perf_counter() - started
        files = len(table.inspect.files())
        manifests = len(table.current_snapshot().manifests(table.io))
        row_filter = EqualTo("id", args.files // 2 + 7)

        first_server, expected = plan_seconds(server, row_filter)
        client_times, server_times = [], []
        for _ in range(args.rounds):
            seconds, found = plan_seconds(client, row_filter)
            assert found == expected, (found, expected)
            client_times.append(seconds)
            seconds, found = plan_seconds(server, row_filter)
            assert found == expected, (found, expected)
            server_times.append(seconds)
    finally:
        bench.server.stop()

    def cell(values):
        return f"{statistics.median(values) * 1000:.0f}", f"{min(values) * 1000:.0f}-{max(values) * 1000:.0f}"

    print(f"\n{files} data files in {manifests} manifests (built in {built:.0f} s); filter id = {args.files // 2 + 7}: "
          f"{len(expected)} file scan task; {args.rounds} rounds, {args.workers} server worker(s)\n")
    print("| planning | median ms | spread ms |")
    print("|---|--:|--:|")
    print("| pyiceberg on the client (loadTable, manifests read and pruned locally) | %s | %s |" % cell(client_times))
    print("| pyiceberg, scan-planning-mode=server (loadTable, planTableScan) | %s | %s |" % cell(server_times))
    print(f"| the server's first plan (its manifests read for the first time) | {first_server * 1000:.0f} | |")
    print(f"\nclient / server: {statistics.median(client_times) / statistics.median(server_times):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
