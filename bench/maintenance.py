"""Maintenance numbers: a 2,000-file table of each format is compacted by the catalog.

    .venv/bin/python bench/maintenance.py [--files 2000] [--rows-per-file 50] [--skip-iceberg]

It serves ucweb as `make run` does on a fresh database (`ucweb_bench_maintenance` on the local
PostgreSQL unless BENCH_DATABASE_URL says otherwise), builds a managed Delta table of N small
files (100 files per commit, ratified over HTTP) and an Iceberg table of N small files (pyiceberg
`add_files`, 100 per commit), runs `manage.py run_maintenance <table> --operation OPTIMIZE` in a
subprocess for each, and prints a Markdown table: files before/after, run time, the peak memory
of the worker process tree (Python, and the JVM Spark starts for Iceberg) sampled from /proc,
and the scan time of the same query (`count(*)`, `sum(id)`) before and after: for Delta the data
files read with pyarrow (the log replay before it is not timed), for Iceberg a pyiceberg scan
(planning included)."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import urllib3
from harness import PYTHON, ROOT, UC, create_delta_table, start


# -- memory of a process tree ---------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            tree.setdefault(parent, []).append(int(entry.name))
    return tree


def tree_rss(pid: int) -> int:
    """Resident bytes of `pid` and all its descendants."""
    tree, total, stack = _children(), 0, [pid]
    while stack:
        current = stack.pop()
        stack.extend(tree.get(current, []))
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def run_measured(env, args) -> tuple[float, int, str]:
    """(seconds, peak tree RSS bytes, stdout) of a manage.py command."""
    started = time.perf_counter()
    process = subprocess.Popen([PYTHON, "manage.py", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    peak = 0
    output = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout), daemon=True)
    reader.start()
    while process.poll() is None:
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.1)
    reader.join()
    if process.returncode != 0:
        raise RuntimeError("".join(output))
    return time.perf_counter() - started, peak, "".join(output)


# -- Delta -------------------------------------------------------------------------------------------
def parquet_bytes(first_id: int, rows: int) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(range(first_id, first_id + rows), pa.int64()),
                             "city": [f"city-{i % 13}" for i in range(rows)]}), buffer)
    return buffer.getvalue()


def build_delta(base: str, token: str, files: int, rows: int) -> tuple[str, str]:
    from catalog.storage import join, storage_for

    http = urllib3.PoolManager()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    table_id, location = create_delta_table(base, token, "delta_small_files", [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "city", "type": "string", "nullable": True, "metadata": {}}])
    storage = storage_for(location)
    version, written = 0, 0
    while written < files:
        version += 1
        now = int(time.time() * 1000)
        lines = [{"commitInfo": {"inCommitTimestamp": now, "operation": "WRITE"}}]
        for _ in range(min(100, files - written)):
            name = f"part-{uuid.uuid4()}.parquet"
            data = parquet_bytes(written * rows, rows)
            storage.put(join(location, name), data)
            lines.append({"add": {"path": name, "size": len(data), "modificationTime": now, "dataChange": True,
                                  "partitionValues": {}, "stats": json.dumps({"numRecords": rows})}})
            written += 1
        payload = "\n".join(json.dumps(a) for a in lines).encode()
        file_name = f"{version:020d}.{uuid.uuid4()}.json"
        staged = join(location, "_delta_log", "_staged_commits", file_name)
        storage.put(staged, payload)
        response = http.request("POST", f"{base}{UC}/delta/commit", headers=headers, body=json.dumps({
            "table_id": table_id, "table_uri": location, "commit_info": {
                "version": version, "timestamp": now, "file_name": file_name, "file_size": len(payload),
                "file_modification_timestamp": now}}))
        assert response.status == 200, response.data[:300]
        storage.copy_if_absent(staged, join(location, "_delta_log", f"{version:020d}.json"))
        http.request("POST", f"{base}{UC}/delta/commit", headers=headers, body=json.dumps({
            "table_id": table_id, "table_uri": location, "latest_published_version": version}))
    return table_id, location


def delta_scan(table_id: str) -> tuple[float, int, tuple]:
    """(seconds, live files, (count, sum id)): the live files (from the log) read with pyarrow."""
    import pyarrow.dataset as ds

    from catalog.models import Table
    from commits.delta_state import read_state

    table = Table.objects.get(id=table_id)
    state = read_state(table)  # the log replay is the same work before and after: not timed
    paths = [state.resolve(p).removeprefix("file://") for p in state.live]
    started = time.perf_counter()
    data = ds.dataset(paths, format="parquet").to_table(columns=["id"])
    result = (data.num_rows, sum(data.column("id").to_pylist()))
    return time.perf_counter() - started, len(paths), result


# -- Iceberg -------------------------------------------------------------------------------------------
def build_iceberg(base: str, token: str, files: int, rows: int):
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    catalog = RestCatalog("bench", uri=f"{base}/api/catalog", warehouse="unity", token=token)
    catalog.create_namespace("bench")
    table = catalog.create_table("bench.iceberg_small_files", schema=Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "city", StringType(), required=False)))
    folder = Path(table.metadata.location.removeprefix("file://")) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    while written < files:
        batch = []
        for _ in range(min(100, files - written)):
            path = folder / f"in-{uuid.uuid4()}.parquet"
            path.write_bytes(parquet_bytes(written * rows, rows))
            batch.append(path.as_uri())
            written += 1
        table.add_files(batch)
        table = catalog.load_table("bench.iceberg_small_files")
    return catalog


def iceberg_scan(catalog) -> tuple[float, int, tuple]:
    started = time.perf_counter()
    table = catalog.load_table("bench.iceberg_small_files")
    scan = table.scan(selected_fields=("id",))
    files = len(list(scan.plan_files()))
    data = scan.to_arrow()
    result = (data.num_rows, sum(data.column("id").to_pylist()))
    return time.perf_counter() - started, files, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rows-per-file", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-iceberg", action="store_true")
    args = parser.parse_args()

    bench = start("postgres://postgres@127.0.0.1:5432/ucweb_bench_maintenance", args.workers,
                  UCWEB_MAX_UNPUBLISHED_COMMITS="1000")
    server, token, env = bench.server, bench.token, bench.env

    def measure(label: str, name: str, scan, target) -> tuple:
        """OPTIMIZE of table `name` by the catalog: files, run time, peak memory, scans around it."""
        scan_before, files_before, result_before = scan(target)
        seconds, peak, _ = run_measured(env, ["run_maintenance", name, "--operation", "OPTIMIZE"])
        scan_after, files_after, result_after = scan(target)
        assert result_after == result_before, (result_before, result_after)
        return (label, files_before, files_after, f"{seconds:.1f}", f"{peak / 2**20:.0f}",
                f"{scan_before * 1000:.0f}", f"{scan_after * 1000:.0f}")

    rows = []
    try:
        table_id, _ = build_delta(server.url, token, args.files, args.rows_per_file)
        rows.append(measure("Delta OPTIMIZE (in the worker)", "unity.default.delta_small_files", delta_scan, table_id))
        if not args.skip_iceberg:
            catalog = build_iceberg(server.url, token, args.files, args.rows_per_file)
            rows.append(measure("Iceberg rewrite_data_files (Spark local[*])", "unity.bench.iceberg_small_files",
                                iceberg_scan, catalog))
    finally:
        server.stop()
    print(f"\n{args.files} files of {args.rows_per_file} rows; query: count(*) and sum(id) over every live file\n")
    print("| table | files before | files after | run (s) | peak worker RSS (MiB) | scan before (ms) | scan after (ms) |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(v) for v in row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
