"""The order in which Sail creates a managed Delta table, replayed without Sail: POST /tables with
columns and no properties before version 0 is written, then the first commits through
/delta/preview/commits. Version 0 is checked once it is there, before anything is ratified on it
or recorded as published (see test_sail.py for Sail itself)."""

from __future__ import annotations

import json
import uuid

import pytest

from catalog.models import StagingTable, Table
from catalog.storage import join, storage_for
from commits.models import DeltaCommit
from tests.delta_client import encode, log_name, metadata_action, protocol_action
from tests.delta_commit_support import COMMITS
from tests.helpers import UC

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("sail")]


def sail_like_create(client, name, location):
    """POST /tables as Sail sends it: columns, no properties, and no version 0 written yet."""
    column = lambda n, t, tn, pos: {  # noqa: E731
        "name": n, "nullable": True, "position": pos, "type_name": tn, "type_text": t,
        "type_json": json.dumps({"name": n, "type": t, "nullable": True, "metadata": {}}),
    }
    return client.post(f"{UC}/tables", {
        "catalog_name": "unity", "schema_name": "default", "name": name, "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": location,
        "columns": [column("id", "long", "LONG", 0), column("city", "string", "STRING", 1)],
    }, format="json")


def propose(client, table_id, location, version, **extra):
    from tests.delta_client import write_staged

    body = {"table_id": table_id, "table_uri": location, **extra}
    if version is not None:
        file_name = f"{version:020d}.{uuid.uuid4()}.json"
        body["commit_info"] = {
            "version": version, "timestamp": 1704067200000 + version,
            "file_name": file_name, "file_size": write_staged(location, file_name),
            "file_modification_timestamp": 1704067200000 + version,
        }
    return client.post(f"{UC}{COMMITS}", body, format="json")


def test_version_zero_written_after_create_is_checked_before_version_one(admin_client, storage_root):
    staging = admin_client.post(
        f"{UC}/staging-tables", {"name": "later", "catalog_name": "unity", "schema_name": "default"}, format="json"
    ).json()
    table_id, location = staging["id"], staging["staging_location"]
    created = sail_like_create(admin_client, "later", location)
    assert created.status_code == 200, created.json()
    assert created.json()["table_id"] == table_id
    table = Table.objects.get(id=table_id)
    assert (table.latest_version, table.latest_published_version) == (0, None)
    assert [c.name for c in table.columns.order_by("position")] == ["id", "city"]
    response = admin_client.get(f"{UC}{COMMITS}", {"table_id": table_id, "table_uri": location})
    assert response.json() == {"commits": [], "latest_table_version": 0}

    def state():
        row = Table.objects.get(id=table_id)
        return row.latest_version, row.latest_published_version, DeltaCommit.objects.filter(table=row).count()

    # Nothing is ratified or recorded as published on a version 0 that is not there ...
    for extra in ({}, {"latest_backfilled_version": 0}):
        response = propose(admin_client, table_id, location, 1, **extra)
        assert response.status_code == 400 and "Version 0 of table unity.default.later" in response.json()["message"]
    response = propose(admin_client, table_id, location, None, latest_backfilled_version=0)
    assert response.status_code == 400 and "cannot read" in response.json()["message"]
    assert state() == (0, None, 0)

    # ... or that is not this catalog-managed table ...
    url = join(location, "_delta_log", log_name(0))
    storage_for(url).put(url, encode([protocol_action(), metadata_action(str(uuid.uuid4()))]))
    response = propose(admin_client, table_id, location, 1, latest_backfilled_version=0)
    assert response.status_code == 400 and "io.unitycatalog.tableId" in response.json()["message"]
    storage_for(url).put(url, encode([protocol_action(writerFeatures=["catalogManaged"]), metadata_action(table_id)]))
    response = propose(admin_client, table_id, location, 1)
    assert response.status_code == 400 and "inCommitTimestamp" in response.json()["message"]
    assert state() == (0, None, 0)

    # ... and once it is, the first commit goes through and version 0 counts as published.
    storage_for(url).put(url, encode([protocol_action(), metadata_action(table_id)]))
    assert propose(admin_client, table_id, location, 1, latest_backfilled_version=0).status_code == 200
    assert state() == (1, 0, 1)
    assert propose(admin_client, table_id, location, 1).status_code == 409
    assert propose(admin_client, table_id, location, 2, latest_backfilled_version=1).status_code == 200
    assert state() == (2, 1, 2)


def test_backfill_of_version_zero_alone_checks_it(admin_client, storage_root):
    staging = admin_client.post(
        f"{UC}/staging-tables", {"name": "later", "catalog_name": "unity", "schema_name": "default"}, format="json"
    ).json()
    table_id, location = staging["id"], staging["staging_location"]
    assert sail_like_create(admin_client, "later", location).status_code == 200
    url = join(location, "_delta_log", log_name(0))
    storage_for(url).put(url, encode([protocol_action(), metadata_action(table_id)]))
    assert propose(admin_client, table_id, location, None, latest_backfilled_version=0).status_code == 200
    assert Table.objects.get(id=table_id).latest_published_version == 0


def test_create_without_version_zero_still_needs_columns(admin_client, storage_root):
    staging = admin_client.post(
        f"{UC}/staging-tables", {"name": "bare", "catalog_name": "unity", "schema_name": "default"}, format="json"
    ).json()
    response = admin_client.post(f"{UC}/tables", {
        "catalog_name": "unity", "schema_name": "default", "name": "bare", "table_type": "MANAGED",
        "data_source_format": "DELTA", "storage_location": staging["staging_location"],
    }, format="json")
    assert response.status_code == 400 and "Not a Delta table" in response.json()["message"]
    assert not Table.objects.filter(name="bare").exists()
    assert StagingTable.objects.get(id=staging["id"]).finalized_at is None
