"""dlt with dlt-iceberg's REST catalog destination, as dlt-iceberg's README shows it for Unity
Catalog: `iceberg_rest(catalog_uri=..., warehouse=<catalog>, namespace=<schema>, token=...)`, a
pipeline run in its own process (dlt keeps its state in a working folder and reads its settings
from the environment). It creates the tables of its resources and of its own state (`_dlt_loads`,
`_dlt_version`, `_dlt_pipeline_state`), appends on each run, and is refused by a principal
without MODIFY."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from pyiceberg.catalog.rest import RestCatalog

from catalog.models import Table
from tests.helpers import grant

pytestmark = pytest.mark.django_db(transaction=True)

# The catalog path dlt-iceberg's Unity Catalog example names is /api/2.1/unity-catalog/iceberg-rest;
# the same catalog is served at /api/catalog.
CATALOG_PATH = "/api/catalog"

PIPELINE = """
import json, sys
import dlt
from dlt_iceberg import iceberg_rest

uri, token, first_id = sys.argv[1], sys.argv[2], int(sys.argv[3])

@dlt.resource(name="events", write_disposition="append")
def events():
    yield [{"event_id": first_id + i, "value": 100 + i} for i in range(3)]

pipeline = dlt.pipeline(pipeline_name="ucweb_events", destination=iceberg_rest(
    catalog_uri=uri, warehouse="unity", namespace="default", token=token))
try:
    info = pipeline.run(events())
    print(json.dumps({"loaded": not info.has_failed_jobs}))
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""


@pytest.fixture
def pipeline(live_server, bootstrap, make_token, storage_root, tmp_path):
    """run(principal, first_id) runs the pipeline as `principal` and returns its JSON answer; every
    run of a test shares one dlt working folder, as runs on one machine do."""
    uri = f"{live_server.url}{CATALOG_PATH}"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DLT_", "RUNTIME__"))}
    # dlt's working folder for this test, and no telemetry (nothing leaves this machine).
    env.update({"DLT_DATA_DIR": str(tmp_path / "dlt"), "RUNTIME__DLTHUB_TELEMETRY": "false"})

    def run(principal: str, first_id: int) -> dict:
        process = subprocess.run(
            [sys.executable, "-c", PIPELINE, uri, make_token(principal, admin=principal == "admin"), str(first_id)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert process.returncode == 0 and process.stdout.strip(), process.stderr[-3000:]
        return json.loads(process.stdout.strip().splitlines()[-1])

    run.catalog = RestCatalog("check", uri=uri, warehouse="unity", token=make_token("admin", admin=True))
    return run


def event_ids(catalog: RestCatalog) -> list[int]:
    return sorted(catalog.load_table(("default", "events")).scan().to_arrow().column("event_id").to_pylist())


def test_dlt_iceberg_creates_and_appends(pipeline):
    grant("loader", "catalog", "unity", "USE CATALOG")
    grant("loader", "schema", "unity.default", "USE SCHEMA", "CREATE TABLE", "SELECT", "MODIFY")
    assert pipeline("loader", 1) == {"loaded": True}
    assert pipeline("loader", 4) == {"loaded": True}
    assert event_ids(pipeline.catalog) == [1, 2, 3, 4, 5, 6]
    names = set(Table.objects.filter(schema__name="default").values_list("name", flat=True))
    assert {"events", "_dlt_loads", "_dlt_version", "_dlt_pipeline_state"} <= names
    assert Table.objects.get(schema__name="default", name="events").data_source_format == "ICEBERG"


def test_dlt_iceberg_without_modify_is_refused(pipeline):
    assert pipeline("admin", 1) == {"loaded": True}
    grant("reader", "catalog", "unity", "USE CATALOG")
    grant("reader", "schema", "unity.default", "USE SCHEMA", "SELECT")
    answer = pipeline("reader", 4)
    assert "ForbiddenException: Missing MODIFY on unity.default.events" in (answer.get("error") or ""), answer
    assert event_ids(pipeline.catalog) == [1, 2, 3]
