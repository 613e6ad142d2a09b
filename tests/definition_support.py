"""What the tests of a table's definition share (tests/test_definition_rights.py, the rights;
tests/test_schema_contract.py, the schema contract): the principals, a managed Delta table with a
commit function on each Delta API, staged commits that hide a metaData or protocol action, and
the state of a table (its row, its commits, the digest of every file) to compare before and after
a refusal."""

import hashlib
import json
import time
import uuid

import pytest
import requests

from catalog.models import Column, Table
from catalog.storage import join, storage_for
from commits.models import DeltaCommit
from tests.delta_client import SCHEMA, DeltaClient, encode
from tests.delta_v1_client import DeltaV1Client
from tests.helpers import UC, grant

WIDER = {"type": "struct", "fields": [*SCHEMA["fields"], {"name": "zip", "type": "string", "nullable": True,
                                                          "metadata": {}}]}


@pytest.fixture
def people(bootstrap, make_token, storage_root):
    """Tokens of: admin; olivia (creates, so owns, the tables); wally (MODIFY and SELECT on the
    catalog, owner of nothing); mary (the same, and MANAGE on the catalog)."""
    grant("olivia", "catalog", "unity", "USE CATALOG")
    grant("olivia", "schema", "unity.default", "USE SCHEMA", "CREATE TABLE")
    grant("wally", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY")
    grant("mary", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY", "MANAGE")
    return {name: make_token(name, admin=name == "admin") for name in ("admin", "olivia", "wally", "mary")}


def tree(location):
    storage = storage_for(location)
    return {item.url: hashlib.sha256(storage.read(item.url)).hexdigest() for item in storage.list(location)}


def delta_state(table_id):
    row = Table.objects.get(id=table_id)
    columns = list(Column.objects.filter(table=row).order_by("position").values_list("name", "type_text", "nullable"))
    return (row.latest_version, row.properties, columns, row.updated_at,
            list(DeltaCommit.objects.filter(table=row).values_list("version", "file_name")),
            tree(row.storage_location))


def stage(location, version, *extra):
    """A staged commit of `version` that adds a data file, with `extra` actions (a metaData or a
    protocol action: a definition change hidden in a data commit). (file name, size, timestamp)."""
    now = int(time.time() * 1000)
    payload = encode([
        {"commitInfo": {"inCommitTimestamp": now, "operation": "WRITE", "txnId": str(uuid.uuid4())}},
        *extra,
        {"add": {"path": f"{uuid.uuid4()}.parquet", "size": 100, "modificationTime": now, "dataChange": True,
                 "partitionValues": {}}},
    ])
    name = f"{version:020d}.{uuid.uuid4()}.json"
    url = join(location, "_delta_log", "_staged_commits", name)
    storage_for(url).put(url, payload)
    return name, len(payload), now


def metadata(table_id, schema, **configuration):
    return {"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps(schema), "partitionColumns": [],
                         "configuration": {"io.unitycatalog.tableId": table_id, **configuration},
                         "createdTime": int(time.time() * 1000)}}


@pytest.fixture
def legacy(live_server, people):
    """olivia's managed Delta table, its columns set by her first commit; a commit function."""
    olivia = DeltaClient(f"{live_server.url}{UC}", people["olivia"])
    created = olivia.create_table("unity", "default", "events")
    table_id, location = created.table_id, created.storage_location

    def commit(who, version, *extra, **body_metadata):
        name, size, now = stage(location, version, *extra)
        body = {"table_id": table_id, "table_uri": location, "commit_info": {
            "version": version, "timestamp": now, "file_name": name, "file_size": size,
            "file_modification_timestamp": now}}
        if body_metadata:
            body["metadata"] = body_metadata
        return requests.post(f"{live_server.url}{UC}/delta/commit", json=body, timeout=30,
                             headers={"Authorization": f"Bearer {people[who]}"})

    assert commit("olivia", 1, schema=SCHEMA["fields"]).status_code == 200
    return table_id, commit


@pytest.fixture
def v1(live_server, people):
    clients = {name: DeltaV1Client(f"{live_server.url}{UC}", token) for name, token in people.items()}
    loaded = clients["olivia"].create_table("unity", "default", "events")
    table = {"name": "events", "table-uuid": loaded["metadata"]["table-uuid"], "location": loaded["metadata"]["location"]}
    return clients, table
