"""DuckDB 1.5 (its unity_catalog, delta and httpfs extensions, loaded from the PyPI wheels'
files: nothing is downloaded at run time) against a live server: it lists and reads managed
Delta tables through `/delta/v1` loadTable and commits through updateTable (`add-commit` with
assert-table-uuid and assert-etag, then `set-latest-backfilled-version`)."""

from __future__ import annotations

import pytest

from catalog.models import AuditEvent, Table
from catalog.storage import join, storage_for
from commits.models import DeltaCommit
from tests.delta_v1_client import DeltaV1Client
from tests.duckdb_sessions import unity_duckdb
from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def v1(live_server, bootstrap, make_token, storage_root):
    return DeltaV1Client(f"{live_server.url}{UC}", make_token("admin", admin=True))


@pytest.fixture
def duck(live_server, make_token, v1):
    """duck() → a new DuckDB session with the catalog `unity` attached as `lake`."""
    token = make_token("admin", admin=True)
    return lambda: unity_duckdb(live_server.url, token)


def published_versions(location: str) -> list[int]:
    log = join(location, "_delta_log")
    names = [item.url.rsplit("/", 1)[-1] for item in storage_for(log).list(log) if "/_staged_commits/" not in item.url]
    return sorted(int(name[:20]) for name in names if name.endswith(".json") and name[:20].isdigit())


def test_duckdb_reads_and_writes_a_managed_table(v1, duck):
    created = v1.create_table("unity", "default", "events")
    table_id, location = created["metadata"]["table-uuid"], created["metadata"]["location"]
    con = duck()
    assert con.execute("SELECT * FROM lake.default.events").fetchall() == []
    con.execute("INSERT INTO lake.default.events VALUES (1, 'Paris'), (2, 'Lyon')")
    con.execute("INSERT INTO lake.default.events VALUES (3, 'Nantes')")

    other = duck()  # a second session sees both commits, and lists the table
    assert sorted(other.execute("SELECT id, city FROM lake.default.events").fetchall()) == [
        (1, "Paris"), (2, "Lyon"), (3, "Nantes")]
    assert ("lake", "default", "events", ["id", "city"], ["BIGINT", "VARCHAR"], False) in \
        other.execute("SHOW ALL TABLES").fetchall()

    row = Table.objects.get(id=table_id)
    commits = list(DeltaCommit.objects.filter(table=row).order_by("version"))
    assert row.latest_version == 2 and [c.version for c in commits] == [1, 2]
    for commit in commits:  # each ratified version is a staged file DuckDB wrote, with its size
        staged = join(location, "_delta_log", "_staged_commits", commit.file_name)
        assert len(storage_for(staged).read(staged)) == commit.file_size
    # The catalog and the log agree: the published versions are contiguous from 0, cover at least
    # what was reported backfilled (DuckDB reports a publication with its next commit), never go
    # beyond the latest ratified version, and every published file is the ratified one.
    published = published_versions(location)
    assert published == list(range(max(published) + 1))
    assert row.latest_published_version <= max(published) <= row.latest_version
    for commit in commits:
        if commit.version in published:
            staged = join(location, "_delta_log", "_staged_commits", commit.file_name)
            log = join(location, "_delta_log", f"{commit.version:020d}.json")
            assert storage_for(log).read(log) == storage_for(staged).read(staged)
    loaded = v1.load("unity", "default", "events")
    assert loaded["latest-table-version"] == 2
    assert [c["version"] for c in loaded["commits"]] == list(range(2, row.latest_published_version, -1))
    # Through /delta/v1 updateTable, as the audit trail says.
    assert AuditEvent.objects.filter(securable_id=table_id, action="updateDeltaTable").count() >= 2
    assert not AuditEvent.objects.filter(securable_id=table_id, action="commitDelta").exists()


# -- Sail (legacy /delta/preview/commits) and DuckDB (/delta/v1) on one table ------------------------
from tests.test_sail import connect, managed, rows, sail, sail_catalog, sail_storage, sail_token  # noqa: E402,F401


@pytest.mark.spark
def test_sail_and_duckdb_write_the_same_table_alternately(connect, live_server, make_token):
    token = make_token("admin", admin=True)

    def duck_session():
        return unity_duckdb(live_server.url, token)

    spark = connect()
    spark.sql("CREATE TABLE unity.default.mixed (id INT, city STRING) USING DELTA")
    spark.sql("INSERT INTO unity.default.mixed VALUES (1, 'Lisbon')")
    assert sorted(duck_session().execute("SELECT id, city FROM lake.default.mixed").fetchall()) == [(1, "Lisbon")]
    duck_session().execute("INSERT INTO lake.default.mixed VALUES (2, 'Porto')")
    assert rows(spark, "SELECT id, city FROM unity.default.mixed") == [(1, "Lisbon"), (2, "Porto")]
    spark.sql("INSERT INTO unity.default.mixed VALUES (3, 'Braga')")
    duck_session().execute("INSERT INTO lake.default.mixed VALUES (4, 'Faro')")
    expected = [(1, "Lisbon"), (2, "Porto"), (3, "Braga"), (4, "Faro")]
    assert sorted(duck_session().execute("SELECT id, city FROM lake.default.mixed").fetchall()) == expected
    assert rows(connect(), "SELECT id, city FROM unity.default.mixed") == expected
    table = managed("mixed")
    assert table.latest_version == 4
    assert list(DeltaCommit.objects.filter(table=table).order_by("version").values_list("version", flat=True)) == [
        1, 2, 3, 4]
    actions = list(AuditEvent.objects.filter(securable_id=table.id, action__in=["commitDelta", "updateDeltaTable"])
                   .values_list("action", flat=True))
    assert "commitDelta" in actions and "updateDeltaTable" in actions
