"""delta-rs (the `deltalake` package) reads an EXTERNAL Delta table through `uc://catalog.schema.table`:
it looks the table up with GET /tables/{full_name}, asks POST /temporary-table-credentials for READ
credentials, and reads the files from S3 (SeaweedFS with STS, tests/seaweedfs_sts.py) with the
vended, prefix-scoped credentials only.

delta-rs reads its Unity Catalog settings from the environment (DATABRICKS_HOST, DATABRICKS_TOKEN,
UNITY_ALLOW_HTTP_URL); the S3 endpoint of an S3-compatible server is a storage option, since the
vended credentials carry only keys. The reader runs in its own process, as a client would: with a
clean environment (no S3 keys of the test's own) and a time limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest
from deltalake import __version__ as deltalake_version
from deltalake import write_deltalake
from unitycatalog.client.models import Privilege, SecurableType

from catalog.models import AuditEvent
from catalog.services import principals
from tests.helpers import grant
from tests.seaweedfs_sts import fresh_prefix, register_trips
from tests.seaweedfs_sts import sts_s3_server  # noqa: F401 - the module-scoped server fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.s3, pytest.mark.xdist_group("deltars")]


# DELTA_RS_HANGS: deltalake 1.6.6 often never returns from DeltaTable("uc://...") once the
# server has answered both its calls (GET /tables, then POST /temporary-table-credentials): traced
# on a two-core machine, its main thread and a runtime thread then wait on each other for good,
# before it opens any connection to the object store, in seven attempts out of ten. Its maintainers
# note that the way it runs Unity Catalog calls can still deadlock (delta-rs pull request 3113).
# The server is not involved: it has answered and waits. So each read is a fresh client process,
# tried until one is not stuck. A read that does not hang takes about a second here with the whole
# suite running, so a reader still running after READER_SECONDS is taken as stuck; being wrong
# costs one more attempt, never a wrong result.
# The same fault sometimes ends in an abort of delta-rs's runtime instead (seen in CI):
RUNTIME_ABORT = "terminate called without an active exception"
READER_ATTEMPTS = 16
READER_SECONDS = 8

# What a client process does: open the table through Unity Catalog and read it all.
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


@pytest.fixture
def delta_lake(sts_s3_server, settings, live_server, bootstrap, make_client, make_token):  # noqa: F811
    server = sts_s3_server
    prefix = fresh_prefix(server, settings)
    table_url = server.url(f"{prefix}/ext/trips")
    endpoint = {"AWS_ENDPOINT_URL": server.endpoint_url, "AWS_ALLOW_HTTP": "true", "AWS_REGION": server.region}
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "city": ["Lyon", "Oslo", "Quito"]})
    write_deltalake(table_url, data, storage_options={
        **endpoint, "AWS_ACCESS_KEY_ID": server.access_key, "AWS_SECRET_ACCESS_KEY": server.secret_key,
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true", "AWS_METADATA_ENDPOINT": "http://127.0.0.1:9"})
    server.client().put_object(Bucket=server.bucket, Key=f"{prefix}/secret.txt", Body=b"not for readers")

    admin = make_client("admin", admin=True)
    register_trips(admin, server, prefix, data_source_format="DELTA",
                   columns=[{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0},
                            {"name": "city", "type_name": "STRING", "type_text": "string", "position": 1}])

    def read_as(name):
        """Runs the reader as principal `name` in a new process; returns its JSON answer."""
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("AWS_", "DATABRICKS_", "UNITY_", "UCWEB_", "TOKIO_"))}
        env.update({
            "DATABRICKS_HOST": live_server.url.replace("//localhost:", "//127.0.0.1:"),
            "DATABRICKS_TOKEN": make_token(name), "UNITY_ALLOW_HTTP_URL": "true",
            # Without credentials of its own, object_store asks the EC2 instance metadata service;
            # it is pointed at a closed loopback port so that nothing leaves this machine.
            "AWS_METADATA_ENDPOINT": "http://127.0.0.1:9", "AWS_EC2_METADATA_DISABLED": "true",
            # See DELTA_RS_HANGS: more runtime threads make the hang rarer on a small machine.
            "TOKIO_WORKER_THREADS": "8",
        })
        hung = 0
        for _attempt in range(READER_ATTEMPTS):
            try:
                result = subprocess.run(
                    [sys.executable, "-c", READER, "uc://unity.default.trips", json.dumps(endpoint)],
                    env=env, capture_output=True, text=True, timeout=READER_SECONDS,
                )
            except subprocess.TimeoutExpired:
                hung += 1
                continue
            if result.returncode != 0 and RUNTIME_ABORT in result.stderr:
                hung += 1  # the same upstream runtime fault, ending in an abort instead of a hang
                continue
            assert result.returncode == 0, result.stderr[-2000:]
            if hung:
                print(f"delta-rs hung in {hung} attempt(s) before this read (see DELTA_RS_HANGS)")
            return json.loads(result.stdout.strip().splitlines()[-1])
        # Every attempt met the client library's own fault (DELTA_RS_HANGS): this run cannot say
        # anything about ucweb, either way. A wrong answer or an error still fails above.
        pytest.skip(f"delta-rs {deltalake_version} hung or aborted in all {READER_ATTEMPTS} attempts "
                    "(its upstream Unity Catalog deadlock, see DELTA_RS_HANGS)")

    return {"read_as": read_as, "data": data}


def grant_select(uc_sdk, principal):
    grant(principal, SecurableType.CATALOG, "unity", Privilege.USE_CATALOG)
    grant(principal, SecurableType.SCHEMA, "unity.default", Privilege.USE_SCHEMA)
    grant(principal, SecurableType.TABLE, "unity.default.trips", Privilege.SELECT)


def read_through_unity_catalog(delta_lake, principal):
    answer = delta_lake["read_as"](principal)
    assert answer.get("error") is None, answer
    assert answer["version"] == 0
    assert answer["rows"] == delta_lake["data"].to_pylist()
    # delta-rs asks for READ_WRITE; a reader with SELECT only gets read-only credentials.
    events = AuditEvent.objects.filter(action="generateTemporaryTableCredentials", principal=principal)
    assert events and {(e.details["operation"], e.details["vended"]) for e in events} == {("READ_WRITE", "READ")}


def test_deltalake_reads_a_new_external_table(delta_lake, uc_sdk):
    """Lookup, READ credentials scoped to the table's prefix, and the read itself with nothing but
    those credentials (delta-rs needs updated_at, which a new table carries)."""
    grant_select(uc_sdk, "reader")
    read_through_unity_catalog(delta_lake, "reader")


def test_deltalake_without_select_is_refused(delta_lake):
    principals.ensure_principal(name="stranger")
    answer = delta_lake["read_as"]("stranger")
    # A catalog the stranger may not see answers as a missing one (no existence oracle).
    assert "CATALOG_DOES_NOT_EXIST" in (answer.get("error") or ""), answer
