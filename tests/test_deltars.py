"""delta-rs (the `deltalake` package) through `uc://catalog.schema.table`, as its documentation shows
it: it looks the table up with GET /tables/{full_name}, asks POST /temporary-table-credentials for
READ_WRITE credentials (READ when those are refused) and reads or writes the files with nothing but
what it was vended. That is all it asks the catalog (deltalake 1.6.6, crates/catalog-unity:
`get_uc_location_and_token`), so:

- an EXTERNAL table on S3 (SeaweedFS with STS, tests/seaweedfs_sts.py) is read and appended to
  with prefix-scoped credentials, read-only for a reader with SELECT alone, whose append the object
  store refuses;
- a CATALOG-MANAGED table is refused by delta-rs's own Delta kernel, which needs the catalog's
  latest version to load one (`with_max_catalog_version`); delta-rs never asks for it (the catalog
  answers it in /delta/v1 loadTable and GET /delta/preview/commits, which delta-rs does not call);
- a table on `file://` is refused by delta-rs: it accepts a credentials answer only when it
  carries cloud keys (AWS, Azure, GCP or R2), and a `file://` answer has none.

The refusals are delta-rs's own errors, pinned so that these tests fail when delta-rs changes.

delta-rs reads its Unity Catalog settings from the environment (DATABRICKS_HOST, DATABRICKS_TOKEN,
UNITY_ALLOW_HTTP_URL); the S3 endpoint of an S3-compatible server is a storage option, since the
vended credentials carry only keys. Each client runs in its own process, as a client would: with a
clean environment (no S3 keys of the test's own) and a time limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pyarrow as pa
import pytest
from deltalake import __version__ as deltalake_version
from deltalake import DeltaTable, write_deltalake
from unitycatalog.client.models import Privilege, SecurableType

from catalog.choices import AuditOutcome
from catalog.models import AuditEvent
from catalog.services import principals
from tests.delta_client import DeltaClient
from tests.helpers import UC, external_table_body, grant
from tests.seaweedfs_sts import fresh_prefix, register_trips
from tests.seaweedfs_sts import sts_s3_server  # noqa: F401 - the module-scoped server fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.s3, pytest.mark.xdist_group("deltars")]

# DELTA_RS_HANGS: deltalake 1.6.6 often never returns from a `uc://` table once the server has
# answered both its calls (GET /tables, then POST /temporary-table-credentials): traced on a
# two-core machine, every runtime thread is parked and its main thread waits on a future that
# nothing wakes, before it opens any connection to the object store, in five attempts out of ten
# (with 1, 8 or 32 runtime threads alike, and whether or not the server keeps the connection open).
# Its maintainers note that the way it runs Unity Catalog calls can still deadlock (delta-rs pull
# request 3113). The server is not involved: it has answered and waits. So each call is a fresh
# client process, tried until one is not stuck; a call without side effects starts
# PROCESSES_AT_ONCE processes together and takes the first answer. A call that does not hang takes
# 0.2 to 3.5 s here, so a process still running after CLIENT_SECONDS is taken as stuck; being
# wrong costs one more attempt, never a wrong result. A process taken as stuck may in fact only be
# slow (on a loaded machine) and have committed its change before it was ended, so a call that
# changes a table must be idempotent across its attempts: all attempts of one call share a key
# (the program's third argument), and WRITER records its append under it as a Delta application
# transaction (txn app id), answers "written" without appending again when the table already holds
# that key, and cannot commit from a snapshot older than an attempt that did (a conflict).
# The same fault sometimes ends in an abort of delta-rs's runtime instead (seen in CI):
RUNTIME_ABORT = "terminate called without an active exception"
CLIENT_ATTEMPTS = 16
CLIENT_SECONDS = 8
PROCESSES_AT_ONCE = 3

# What a client process does: open the table through Unity Catalog and read it all, or append to it.
READER = """
import json, sys
from deltalake import DeltaTable
try:
    table = DeltaTable(sys.argv[1], storage_options=json.loads(sys.argv[2]))
    rows = sorted(table.to_pyarrow_table().to_pylist(), key=lambda row: row["id"])
    print(json.dumps({"version": table.version(), "rows": rows}))
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""
# The append is idempotent under the call's key (sys.argv[3]): an attempt of the same call that
# committed it, even one ended as stuck before it answered, leaves the key in the table's log.
WRITER = """
import json, sys
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import CommitFailedError
uri, options, key = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
def already_written():
    return DeltaTable(uri, storage_options=options).transaction_version(key) is not None
try:
    table = DeltaTable(uri, storage_options=options)
    if table.transaction_version(key) is None:
        rows = pa.table({"id": pa.array([4], pa.int64()), "city": ["Accra"]})
        try:
            write_deltalake(table, rows, mode="append",
                            commit_properties=CommitProperties(app_transactions=[Transaction(key, 1)]))
        except CommitFailedError:
            # Refused because an earlier attempt of this call committed after this one loaded the
            # table: the append is there once. Anything else is a real failure.
            if not already_written():
                raise
    print(json.dumps({"written": True}))
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""
TRIPS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "city": ["Lyon", "Oslo", "Quito"]})
TRIPS_COLUMNS = [{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0},
                 {"name": "city", "type_name": "STRING", "type_text": "string", "position": 1}]


def run_client(program: str, table_uri: str, storage_options: dict, *, host: str, token: str,
               changes_the_table: bool = False) -> dict:
    """Runs `program` (READER or WRITER) on `table_uri` in a new process with the given Unity Catalog
    host and token; returns its JSON answer. Processes stuck in delta-rs's own deadlock
    (DELTA_RS_HANGS) are ended and others started; one that may change the table runs alone. Every
    attempt of this call gets the same fresh key as its third argument, under which a program that
    changes the table must make its change idempotent (see WRITER): an attempt ended as stuck may
    have committed it."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("AWS_", "DATABRICKS_", "UNITY_", "UCWEB_", "TOKIO_"))}
    env.update({
        "DATABRICKS_HOST": host.replace("//localhost:", "//127.0.0.1:"),
        "DATABRICKS_TOKEN": token, "UNITY_ALLOW_HTTP_URL": "true",
        # Without credentials of its own, object_store asks the EC2 instance metadata service;
        # it is pointed at a closed loopback port so that nothing leaves this machine.
        "AWS_METADATA_ENDPOINT": "http://127.0.0.1:9", "AWS_EC2_METADATA_DISABLED": "true",
    })
    command = [sys.executable, "-c", program, table_uri, json.dumps(storage_options), f"ucweb-test-{uuid.uuid4()}"]
    at_once = 1 if changes_the_table else PROCESSES_AT_ONCE
    hung = 0
    for _round in range(CLIENT_ATTEMPTS // at_once):
        running = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                   for _ in range(at_once)]
        try:
            answered = first_answer(running)
        finally:
            for process in running:
                if process.poll() is None:
                    process.kill()
                process.communicate()
        if answered is not None:
            if hung:
                print(f"delta-rs hung in {hung} process(es) before this answer (see DELTA_RS_HANGS)")
            return answered
        hung += at_once
    # Every attempt met the client library's own fault (DELTA_RS_HANGS): this run cannot say
    # anything about ucweb, either way. A wrong answer or an error still fails in first_answer.
    pytest.skip(f"delta-rs {deltalake_version} hung or aborted in all {CLIENT_ATTEMPTS} attempts "
                "(its upstream Unity Catalog deadlock, see DELTA_RS_HANGS)")


def first_answer(running: list[subprocess.Popen]) -> dict | None:
    """The JSON answer of the first of `running` to finish within CLIENT_SECONDS, or None when every
    one is stuck or aborted (DELTA_RS_HANGS)."""
    deadline = time.monotonic() + CLIENT_SECONDS
    waiting = list(running)
    while waiting and time.monotonic() < deadline:
        for process in [p for p in waiting if p.poll() is not None]:
            waiting.remove(process)
            stdout, stderr = process.communicate()
            if process.returncode != 0 and RUNTIME_ABORT in stderr:
                continue  # the same upstream runtime fault, ending in an abort instead of a hang
            assert process.returncode == 0, stderr[-2000:]
            return json.loads(stdout.strip().splitlines()[-1])
        time.sleep(0.05)
    return None


@pytest.fixture
def delta_lake(sts_s3_server, settings, live_server, bootstrap, make_client, make_token):  # noqa: F811
    """EXTERNAL Delta table unity.default.trips on S3 (three rows, written with the server's keys),
    managed storage on the same S3, and `run(program, principal, table=...)`."""
    server = sts_s3_server
    prefix = fresh_prefix(server, settings)
    table_url = server.url(f"{prefix}/ext/trips")
    endpoint = {"AWS_ENDPOINT_URL": server.endpoint_url, "AWS_ALLOW_HTTP": "true", "AWS_REGION": server.region}
    own_keys = {**endpoint, "AWS_ACCESS_KEY_ID": server.access_key, "AWS_SECRET_ACCESS_KEY": server.secret_key,
                "AWS_S3_ALLOW_UNSAFE_RENAME": "true", "AWS_METADATA_ENDPOINT": "http://127.0.0.1:9"}
    write_deltalake(table_url, TRIPS, storage_options=own_keys)
    server.client().put_object(Bucket=server.bucket, Key=f"{prefix}/secret.txt", Body=b"not for readers")
    register_trips(make_client("admin", admin=True), server, prefix, data_source_format="DELTA", columns=TRIPS_COLUMNS)

    def run(program, principal, table="unity.default.trips", changes_the_table=False):
        return run_client(program, f"uc://{table}", endpoint, host=live_server.url,
                          token=make_token(principal, admin=principal == "admin"), changes_the_table=changes_the_table)

    def stored() -> tuple[int, list[dict]]:
        """The table's version and rows as they are on S3, read with the storage's own keys."""
        table = DeltaTable(table_url, storage_options=own_keys)
        return table.version(), sorted(table.to_pyarrow_table().to_pylist(), key=lambda row: row["id"])

    run.stored = stored
    return run


def grant_select(principal, *more):
    grant(principal, SecurableType.CATALOG, "unity", Privilege.USE_CATALOG)
    grant(principal, SecurableType.SCHEMA, "unity.default", Privilege.USE_SCHEMA)
    grant(principal, SecurableType.TABLE, "unity.default.trips", Privilege.SELECT, *more)


def vended(principal) -> set[tuple[str, str]]:
    """(asked, vended) operations of `principal`'s temporary table credentials that were vended.
    A refused request vends nothing, and leaves an event without them: run_client ends the
    parallel attempts still running once one has answered, some in the middle of a request (seen
    in CI once, beside three hung attempts)."""
    events = AuditEvent.objects.filter(action="generateTemporaryTableCredentials", principal=principal)
    refused = [event.details for event in events.exclude(outcome=AuditOutcome.SUCCESS)]
    # A cut-off request is the client's fault; a refusal of access, or a failure of the server, is not.
    assert all(event.get("status") not in (401, 403) and event.get("status", 500) < 500 for event in refused), refused
    events = events.filter(outcome=AuditOutcome.SUCCESS)
    return {(event.details["operation"], event.details["vended"]) for event in events}


def test_deltalake_reads_a_new_external_table(delta_lake):
    """Lookup, READ credentials scoped to the table's prefix, and the read itself with nothing but
    those credentials (delta-rs needs updated_at, which a new table carries)."""
    grant_select("reader")
    answer = delta_lake(READER, "reader")
    assert answer == {"version": 0, "rows": TRIPS.to_pylist()}
    # delta-rs asks for READ_WRITE; a reader with SELECT only gets read-only credentials.
    assert vended("reader") == {("READ_WRITE", "READ")}


def test_deltalake_appends_to_an_external_table_with_modify(delta_lake):
    grant_select("writer", Privilege.MODIFY)
    assert delta_lake(WRITER, "writer", changes_the_table=True) == {"written": True}
    assert vended("writer") == {("READ_WRITE", "READ_WRITE")}
    assert delta_lake.stored() == (1, TRIPS.to_pylist() + [{"id": 4, "city": "Accra"}])


def test_deltalake_append_with_select_only_is_refused_by_the_storage(delta_lake):
    """The append is expected to be refused, so its processes may run together: were it not, the
    table's version would show it."""
    grant_select("reader")
    answer = delta_lake(WRITER, "reader")
    assert "AccessDenied" in (answer.get("error") or ""), answer
    assert vended("reader") == {("READ_WRITE", "READ")}
    assert delta_lake.stored() == (0, TRIPS.to_pylist())


def test_deltalake_without_select_is_refused(delta_lake):
    principals.ensure_principal(name="stranger")
    answer = delta_lake(READER, "stranger")
    # A catalog the stranger may not see answers as a missing one (no existence oracle).
    assert "CATALOG_DOES_NOT_EXIST" in (answer.get("error") or ""), answer


def test_deltalake_cannot_load_a_catalog_managed_table(delta_lake, live_server, make_token):
    """delta-rs's kernel refuses a catalog-managed table unless it is told the catalog's latest
    version, which delta-rs never asks for: its own error, after a successful lookup and vend."""
    client = DeltaClient(f"{live_server.url}{UC}", make_token("admin", admin=True))
    try:
        client.create_table("unity", "default", "managed")
    finally:
        client.close()
    answer = delta_lake(READER, "admin", table="unity.default.managed")
    assert "Max catalog version is required when loading a catalog-managed table" in (answer.get("error") or ""), answer
    assert vended("admin") == {("READ_WRITE", "READ_WRITE")}


def test_deltalake_cannot_open_a_file_table_through_unity_catalog(live_server, bootstrap, make_client, make_token,
                                                                  storage_root, tmp_path):
    """The credentials answer of a file:// table carries its url and no cloud keys; delta-rs takes
    an answer without AWS, Azure, GCP or R2 keys as no credential at all."""
    location = tmp_path / "trips"
    write_deltalake(str(location), TRIPS)
    response = make_client("admin", admin=True).post(f"{UC}/tables", external_table_body(
        "trips", location.as_uri(), catalog="unity", schema="default", data_source_format="DELTA",
        columns=TRIPS_COLUMNS), format="json")
    assert response.status_code == 200, response.content
    answer = run_client(READER, "uc://unity.default.trips", {}, host=live_server.url,
                        token=make_token("admin", admin=True))
    assert "Failed to get a credential from UnityCatalog client configuration" in (answer.get("error") or ""), answer
    assert vended("admin") == {("READ_WRITE", "READ_WRITE")}


# WRITER, but its first attempt, once it has committed and answered, does not end: the harness takes
# it as stuck (DELTA_RS_HANGS), ends it and tries again, as it did with an append that was only slow.
WRITER_STUCK_AFTER_ITS_FIRST_COMMIT = WRITER + """
import os, time
first = uri + ".first-attempt"
if not os.path.exists(first):
    open(first, "w").close()
    time.sleep(600)
"""


def test_a_write_taken_as_stuck_after_its_commit_is_not_applied_again(tmp_path, capsys):
    """The harness itself: the retry of an append whose first attempt committed and was then ended
    as stuck finds the append in the table and does not append again."""
    location = tmp_path / "trips"
    write_deltalake(str(location), TRIPS)
    answer = run_client(WRITER_STUCK_AFTER_ITS_FIRST_COMMIT, str(location), {}, host="http://127.0.0.1:9",
                        token="unused", changes_the_table=True)
    assert answer == {"written": True}
    assert (tmp_path / "trips.first-attempt").exists()
    assert "delta-rs hung in" in capsys.readouterr().out  # the first attempt was ended and retried
    table = DeltaTable(str(location))
    assert table.version() == 1
    assert sorted(table.to_pyarrow_table().to_pylist(), key=lambda row: row["id"]) == \
        TRIPS.to_pylist() + [{"id": 4, "city": "Accra"}]
