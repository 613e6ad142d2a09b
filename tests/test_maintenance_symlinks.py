"""Maintenance never follows a symbolic link out of a table's folder. Whoever can write in the
folder (a writer with MODIFY who does not own the table) can plant a link there, `linkdir ->
/elsewhere`, and commit an `add` for `linkdir/x.parquet` through the ordinary commit path. The
catalog's paths are text until the file system resolves them, so each operation is run here
against such a table, as the attacker would leave it: OPTIMIZE must not copy the rows the link
leads to into the table; VACUUM, orphan removal, CHECKPOINT, purge and staging expiry must not
read or delete what a link leads to (a link inside the folder may go, as a link); Iceberg's
operations on Spark, whose local file system follows links, must not run on such a table at
all. After each run the place outside is compared byte for byte, and the table's own files row
for row."""

from __future__ import annotations

import io
import os
import shutil
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.utils import timezone

from catalog.models import Catalog, Principal, StagingTable, Table
from catalog.services import grants
from maintenance.models import MaintenancePlan, PurgeRequest
from tests.delta_client import DeltaClient
from tests.helpers import UC, plant_orphans
from tests.maintenance_delta_support import commit, live_files, write_rows
from tests.spark_iceberg import SPARK_TOKEN, admit_token, spark  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)
Status = MaintenancePlan.Status
OUTSIDE_IDS = set(range(9000, 9010))
TWO_DAYS_AGO = time.time() - 2 * 24 * 3600


# -- the attacker, the place outside, and how both are judged ------------------------------------------
def writer_token(make_token) -> str:
    """wally's token: USE, SELECT and MODIFY on the whole catalog, owner of nothing."""
    token = make_token("wally")
    grants.update_assignments(
        securable_type="catalog", securable=Catalog.objects.get(name="unity"),
        caller=Principal.objects.get(name="admin"), access=None,
        changes=[{"principal": "wally", "add": ["USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY"], "remove": []}])
    return token


@pytest.fixture
def wally(live_server, delta, make_token):
    client = DeltaClient(f"{live_server.url}{UC}", writer_token(make_token))
    yield client
    client.close()


def parquet_bytes(ids, tag: str, *, amount: bool = False) -> bytes:
    columns = {"id": pa.array(sorted(ids), pa.int64()), "city": pa.array([tag] * len(ids), pa.string())}
    if amount:
        columns["amount"] = pa.array([float(i) for i in sorted(ids)], pa.float64())
    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


@pytest.fixture
def outside(tmp_path) -> Path:
    """Another place on the same disk: rows that are not the table's, and files that look old
    enough for any retention."""
    place = tmp_path / "elsewhere"
    (place / "nested").mkdir(parents=True)
    (place / "x.parquet").write_bytes(parquet_bytes(OUTSIDE_IDS, "outside"))
    (place / "00000000000000000001.json").write_bytes(b'{"commitInfo": {"secret": "outside"}}\n')
    (place / "nested" / "notes.txt").write_bytes(b"not the table's")
    for path in place.rglob("*"):
        os.utime(path, (TWO_DAYS_AGO, TWO_DAYS_AGO))
    return place


def tree(root: Path) -> dict:
    """Every entry below `root`, without following links: files with their bytes and times,
    links with their targets."""
    found = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory, name)
            relative = str(path.relative_to(root))
            if path.is_symlink():
                found[relative] = ("link", os.readlink(path))
            elif path.is_dir():
                found[relative] = ("dir",)
            else:
                found[relative] = ("file", path.read_bytes(), path.stat().st_mtime_ns)
    return found


def own_rows(root: Path) -> dict[str, list[int]]:
    """The ids in each data file that is really in the table's folder (links not followed)."""
    rows = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = Path(directory, name)
            if name.endswith(".parquet") and "_delta_log" not in path.parts and not path.is_symlink():
                rows[str(path.relative_to(root))] = sorted(pq.read_table(path).column("id").to_pylist())
    return rows


def assert_no_outside_rows(root: Path) -> None:
    for name, ids in own_rows(root).items():
        assert not OUTSIDE_IDS & set(ids), f"{name} holds rows from outside the table"


def run(full_name: str, operation: str) -> tuple[int, MaintenancePlan]:
    """run_maintenance as an operator types it: (exit code, the run)."""
    try:
        call_command("run_maintenance", full_name, "--operation", operation)
        code = 0
    except SystemExit as exited:
        code = exited.code
    name = full_name.rsplit(".", 1)[-1]
    return code, MaintenancePlan.objects.filter(table__name=name, operation=operation).latest("id")


def make_delta_table(delta, name: str, commits: int) -> tuple[str, str, Path]:
    created = delta.create_table("unity", "default", name)
    for version in range(1, commits + 1):
        commit(delta, created.table_id, created.storage_location, version,
               write_rows(created.storage_location, version * 10, 10, f"v{version}"))
    return created.table_id, created.storage_location, Path(created.storage_location.removeprefix("file://"))


def add_action(path: str, size: int) -> dict:
    return {"path": path, "size": size, "modificationTime": int(time.time() * 1000), "dataChange": True,
            "partitionValues": {}, "stats": '{"numRecords": 10}'}


def set_properties(name: str, **properties) -> None:
    table = Table.objects.get(name=name)
    table.properties = {**table.properties, **properties}
    table.save(update_fields=["properties"])


# -- Delta: OPTIMIZE -------------------------------------------------------------------------------------
LINKS = {
    # case -> (the link in the table's folder, what it points to in `outside` ("": the folder), the add's path)
    "a link to a directory": ("linkdir", "", "linkdir/x.parquet"),
    "a link to a file": ("y.parquet", "x.parquet", "y.parquet"),
    "a link in a partition-like folder": ("city=x/linkdir", "", "city%3Dx/linkdir/x.parquet"),
    "a path percent-encoded through the link": ("linkdir", "", "linkdir%2Fx.parquet"),
}


@pytest.mark.parametrize("case", LINKS)
def test_optimize_copies_no_rows_through_a_planted_link(delta, wally, outside, case):
    table_id, location, root = make_delta_table(delta, "events", 5)
    link, target, add_path = LINKS[case]
    (root / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside / target if target else outside, root / link)
    commit(wally, table_id, location, 6, add_action(add_path, (outside / "x.parquet").stat().st_size))
    before_outside, before_rows = tree(outside), own_rows(root)
    before_live = sorted(a["path"] for a in live_files(delta, table_id, location))

    code, plan = run("unity.default.events", "OPTIMIZE")

    assert code == 3 and plan.status == Status.SKIPPED, plan.outcome
    assert "symbolic link" in plan.outcome and "nothing through it" in plan.outcome, plan.outcome
    assert tree(outside) == before_outside
    assert own_rows(root) == before_rows  # no new file, the old ones as they were
    assert_no_outside_rows(root)
    assert Table.objects.get(id=table_id).latest_version == 6
    assert sorted(a["path"] for a in live_files(delta, table_id, location)) == before_live


def test_optimize_leaves_out_adds_that_climb_out_of_the_table(delta, wally, outside):
    """'..' (plain or percent-encoded) and absolute URLs name files outside by their text: they are
    never read, and the table's own small files are compacted without them."""
    table_id, location, root = make_delta_table(delta, "events", 5)
    size = (outside / "x.parquet").stat().st_size
    depth = "/".join([".."] * len(root.relative_to(outside.parent).parts))
    climbing = [f"{depth}/elsewhere/x.parquet", f"{depth.replace('..', '%2E%2E')}/elsewhere/x.parquet",
                (outside / "x.parquet").as_uri(), f"{location}/../../../elsewhere/x.parquet"]
    for version, path in enumerate(climbing, start=6):
        commit(wally, table_id, location, version, add_action(path, size))
    before_outside = tree(outside)
    own_ids = sorted(i for ids in own_rows(root).values() for i in ids)

    code, plan = run("unity.default.events", "OPTIMIZE")

    assert code == 0 and plan.status == Status.SUCCEEDED, plan.outcome
    assert plan.before["files"] == 9 and plan.after["files"] == 5  # 5 in one, the 4 outside untouched
    assert tree(outside) == before_outside
    assert_no_outside_rows(root)
    live = {a["path"] for a in live_files(delta, table_id, location)}
    assert set(climbing) <= live
    (compacted,) = live - set(climbing)
    assert own_rows(root)[compacted] == own_ids


# -- Delta: VACUUM, REMOVE_ORPHANS, CHECKPOINT ------------------------------------------------------------
@pytest.mark.parametrize("operation", ["VACUUM", "REMOVE_ORPHANS"])
def test_vacuum_deletes_links_as_links_and_nothing_they_lead_to(delta, wally, outside, operation):
    table_id, location, root = make_delta_table(delta, "events", 3)
    os.symlink(outside, root / "linkdir")
    commit(wally, table_id, location, 4, add_action("linkdir/x.parquet", (outside / "x.parquet").stat().st_size))
    os.symlink(outside / "nested", root / "_delta_log" / "linked")  # old-looking files behind it
    (root / "deeper").mkdir()
    os.symlink(outside, root / "deeper" / "again")
    os.symlink(outside / "00000000000000000001.json", root / "orphan-link.parquet")
    os.utime(root / "orphan-link.parquet", (TWO_DAYS_AGO, TWO_DAYS_AGO), follow_symlinks=False)
    old_orphan, fresh_orphan = plant_orphans(root)
    set_properties("events", **{"delta.deletedFileRetentionDuration": "interval 1 hours"})
    before_outside, before_live = tree(outside), live_files(delta, table_id, location)

    code, plan = run("unity.default.events", operation)

    assert code == 0 and plan.status == Status.SUCCEEDED, plan.outcome
    assert tree(outside) == before_outside
    assert not old_orphan.exists() and fresh_orphan.exists()  # the run did its work
    assert not os.path.lexists(root / "orphan-link.parquet")  # an unreferenced link went, as a link
    assert (root / "linkdir").is_symlink() and (root / "deeper" / "again").is_symlink()
    assert live_files(delta, table_id, location) == before_live


def test_checkpoint_reads_no_log_file_a_link_leads_to(delta, wally, outside):
    """wally links the log's checkpoint files to another table's, whose files he cannot read: the
    catalog would copy that table's file list into a checkpoint of his table. It reads nothing
    through the links; once they are gone, CHECKPOINT runs, and walks no linked log folder."""
    _, _, victim = make_delta_table(delta, "victim", 3)
    assert run("unity.default.victim", "CHECKPOINT")[1].status == Status.SUCCEEDED
    table_id, location, root = make_delta_table(delta, "events", 5)
    log = root / "_delta_log"
    for name in ("_last_checkpoint", f"{3:020d}.checkpoint.parquet"):
        os.symlink(victim / "_delta_log" / name, log / name)
    before_victim, before_log = tree(victim), tree(log)

    code, plan = run("unity.default.events", "CHECKPOINT")

    assert code == 3 and plan.status == Status.SKIPPED, plan.outcome
    assert "symbolic link" in plan.outcome, plan.outcome
    assert tree(victim) == before_victim and tree(log) == before_log

    for name in ("_last_checkpoint", f"{3:020d}.checkpoint.parquet"):
        (log / name).unlink()
    os.symlink(outside, log / "archive")  # 00000000000000000001.json, two days old, behind it
    set_properties("events", **{"delta.logRetentionDuration": "interval 0 hours"})
    before_outside, live = tree(outside), sorted(a["path"] for a in live_files(delta, table_id, location))
    code, plan = run("unity.default.events", "CHECKPOINT")
    assert code == 0 and plan.status == Status.SUCCEEDED, plan.outcome
    assert tree(outside) == before_outside and (log / "archive").is_symlink()
    checkpoint = pq.read_table(log / f"{5:020d}.checkpoint.parquet")
    assert sorted(row["path"] for row in checkpoint.column("add").to_pylist() if row) == live
    assert plan.after["log_files_deleted"] == 5  # the table's own old commits, none behind the link


def test_a_table_folder_replaced_by_a_link_is_not_maintained(delta, tmp_path):
    """The table's location itself made a link to a copy elsewhere (with an old file beside it):
    nothing reads, writes or deletes through it."""
    _, _, root = make_delta_table(delta, "events", 5)
    elsewhere = tmp_path / "moved"
    shutil.move(root, elsewhere)
    (elsewhere / "part-old.parquet").write_bytes(parquet_bytes(OUTSIDE_IDS, "outside"))
    os.utime(elsewhere / "part-old.parquet", (TWO_DAYS_AGO, TWO_DAYS_AGO))
    os.symlink(elsewhere, root)
    set_properties("events", **{"delta.deletedFileRetentionDuration": "interval 0 hours",
                                "delta.logRetentionDuration": "interval 0 hours"})
    before = tree(elsewhere)
    for operation in ("VACUUM", "REMOVE_ORPHANS", "OPTIMIZE", "CHECKPOINT"):
        code, plan = run("unity.default.events", operation)
        assert code == 3 and plan.status == Status.SKIPPED, (operation, plan.outcome)
        assert "is a symbolic link" in plan.outcome, (operation, plan.outcome)
        assert tree(elsewhere) == before, operation
    assert root.is_symlink()


# -- purge of a dropped table, expiry of a staging table -------------------------------------------------
def plant_links(root: Path, outside: Path) -> None:
    os.symlink(outside, root / "linkdir")
    os.symlink(outside / "x.parquet", root / "y.parquet")
    (root / "sub" / "deeper").mkdir(parents=True)
    os.symlink(outside / "nested", root / "sub" / "deeper" / "linked")
    os.symlink(outside / "gone", root / "dangling")


def test_purge_of_a_dropped_table_removes_the_links_not_what_they_lead_to(delta, admin_client, outside, tmp_path):
    _, location, root = make_delta_table(delta, "events", 3)
    plant_links(root, outside)
    _, second_location, second = make_delta_table(delta, "second", 1)
    shutil.move(second, tmp_path / "second-moved")
    os.symlink(outside, second)  # a dropped table whose folder is itself a link
    before = tree(outside)

    for name in ("events", "second"):
        response = admin_client.delete(f"{UC}/tables/unity.default.{name}")
        assert response.status_code == 200, response.content

    purge = PurgeRequest.objects.get(url=location)
    assert purge.done_at is not None and purge.last_error == "" and purge.files_deleted >= 5
    assert not os.path.lexists(root)  # the links went with the folder
    purge = PurgeRequest.objects.get(url=second_location)
    assert purge.done_at is not None and purge.last_error == "" and purge.files_deleted == 0
    assert not os.path.lexists(second)
    assert tree(outside) == before


def test_staging_expiry_removes_the_links_not_what_they_lead_to(delta, outside, settings):
    staging = delta.stage("unity", "default", "abandoned")
    root = Path(staging.staging_location.removeprefix("file://"))
    delta.write_version_zero(staging.staging_location, staging.id)
    plant_links(root, outside)
    before = tree(outside)
    settings.UCWEB_STAGING_TTL_SECONDS = 0

    from maintenance.purge import expire_staging_tables, run_pending_purges

    assert expire_staging_tables(now=timezone.now() + timedelta(seconds=5)) == 1
    run_pending_purges()

    assert not StagingTable.objects.filter(id=staging.id).exists()
    purge = PurgeRequest.objects.get(url=staging.staging_location)
    assert purge.done_at is not None and purge.last_error == ""
    assert not os.path.lexists(root)
    assert tree(outside) == before


# -- Iceberg on Spark --------------------------------------------------------------------------------------
@pytest.fixture
def iceberg(bootstrap, storage_root, live_server, settings, make_token):
    """pyiceberg as the table's owner (the admin) and as wally (MODIFY, owner of nothing)."""
    from pyiceberg.catalog.rest import RestCatalog

    admit_token()
    uri = settings.UCWEB_ICEBERG_CATALOG_URL = f"{live_server.url}/api/catalog"
    return (RestCatalog("owner", uri=uri, token=SPARK_TOKEN, warehouse="unity"),
            RestCatalog("wally", uri=uri, token=writer_token(make_token), warehouse="unity"))


def iceberg_data_files(table) -> list[str]:
    return sorted(row["file_path"] for row in table.inspect.files().to_pylist())


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_iceberg_maintenance_does_not_run_over_a_planted_link(spark, iceberg, outside):
    from pyiceberg.schema import Schema as IcebergSchema
    from pyiceberg.types import DoubleType, LongType, NestedField, StringType

    owner, attacker = iceberg
    schema = IcebergSchema(NestedField(1, "id", LongType(), required=False),
                           NestedField(2, "city", StringType(), required=False),
                           NestedField(3, "amount", DoubleType(), required=False))
    owner.create_namespace("sales")
    table = owner.create_table("sales.events", schema=schema)
    for batch in range(4):
        ids = range(batch * 5, batch * 5 + 5)
        table.append(pa.table({"id": pa.array(ids, pa.int64()), "city": [f"c{batch}"] * 5,
                               "amount": [float(i) for i in ids]}))
    (outside / "x.parquet").write_bytes(parquet_bytes(OUTSIDE_IDS, "outside", amount=True))
    (outside / "bait.parquet").write_bytes(b"unreferenced, and old")
    for path in outside.rglob("*"):
        os.utime(path, (TWO_DAYS_AGO, TWO_DAYS_AGO))
    location = table.metadata.location
    root = Path("/" + location.removeprefix("file:").lstrip("/"))
    os.symlink(outside, root / "data" / "linkdir")
    theirs = attacker.load_table("sales.events")
    theirs.add_files([f"{location}/data/linkdir/x.parquet"])
    with owner.load_table("sales.events").transaction() as tx:  # as short as Iceberg lets them be
        tx.set_properties({"history.expire.max-snapshot-age-ms": "0", "history.expire.min-snapshots-to-keep": "1",
                           "ucweb.maintenance.orphan-retention-hours": "24"})
    before_outside, before_rows = tree(outside), own_rows(root)
    before_files = iceberg_data_files(owner.load_table("sales.events"))

    for operation in ("OPTIMIZE", "REMOVE_ORPHANS", "REWRITE_MANIFESTS"):
        code, plan = run("unity.sales.events", operation)
        assert code == 3 and plan.status == Status.SKIPPED, (operation, plan.outcome)
        assert "symbolic link" in plan.outcome, (operation, plan.outcome)
        assert tree(outside) == before_outside, operation
        assert own_rows(root) == before_rows, operation
        assert iceberg_data_files(owner.load_table("sales.events")) == before_files, operation

    # Expiry would delete the files of the snapshots it expires: the linked file is one of them
    # once the table is overwritten.
    attacker.load_table("sales.events").overwrite(
        pa.table({"id": pa.array([100], pa.int64()), "city": ["new"], "amount": [1.0]}))
    snapshots = len(owner.load_table("sales.events").metadata.snapshots)
    code, plan = run("unity.sales.events", "EXPIRE_SNAPSHOTS")
    assert code == 3 and plan.status == Status.SKIPPED and "symbolic link" in plan.outcome, plan.outcome
    assert len(owner.load_table("sales.events").metadata.snapshots) == snapshots
    assert tree(outside) == before_outside
    assert_no_outside_rows(root)
    assert (root / "data" / "linkdir").is_symlink()
