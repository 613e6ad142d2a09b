"""What the tests of the UC Delta commit API (`/delta/commit`, `/delta/preview/commits`) share:
the preview path (below the UC prefix) that the Sail tests call it by, a managed Delta table made
through the Delta client, the table's commit state, and commit proposals as a client posts them."""

import uuid

import pytest

from catalog.models import Table
from commits.models import DeltaCommit
from tests.delta_client import write_staged
from tests.helpers import UC

COMMITS = "/delta/preview/commits"


@pytest.fixture
def table(delta):
    created = delta.create_table("unity", "default", "events")
    return created.table_id, created.storage_location


def state(table_id):
    row = Table.objects.get(id=table_id)
    return row.latest_version, row.latest_published_version, DeltaCommit.objects.filter(table=row).count()


def post_commit(client, body):
    return client.post(f"{UC}/delta/commit", body, format="json")


def commit_body(table_id, location, version, file_name=None, *, stage=True, **extra):
    """A commit proposal; with `stage`, its staged file is written first (1024 bytes)."""
    file_name = file_name or f"{version:020d}.{uuid.uuid4()}.json"
    if stage:
        write_staged(location, file_name, size=1024)
    body = {
        "table_id": table_id,
        "table_uri": location,
        "commit_info": {
            "version": version,
            "timestamp": 1704067200000 + version,
            "file_name": file_name,
            "file_size": 1024,
            "file_modification_timestamp": 1704067200000 + version,
        },
    }
    body.update(extra)
    return body
