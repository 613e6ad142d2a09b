"""What the test modules of the UC Delta REST API (`/delta/v1`) share: its paths, a client acting
as the metastore admin, a managed table made through it, the table's state as the database
holds it, and the error envelope of the API."""

import pytest

from catalog.models import Table
from commits.models import DeltaCommit
from tests.delta_v1_client import DeltaV1Client
from tests.helpers import UC

V1 = f"{UC}/delta/v1"
TABLES = f"{V1}/catalogs/unity/schemas/default/tables"


@pytest.fixture
def v1(live_server, bootstrap, make_token, storage_root):
    return DeltaV1Client(f"{live_server.url}{UC}", make_token("admin", admin=True))


@pytest.fixture
def table(v1):
    loaded = v1.create_table("unity", "default", "events")
    return {"name": "events", "table-uuid": loaded["metadata"]["table-uuid"], "location": loaded["metadata"]["location"]}


def state(table_id):
    row = Table.objects.get(id=table_id)
    commits = list(DeltaCommit.objects.filter(table=row).order_by("version").values_list("version", "file_name"))
    return row.latest_version, row.latest_published_version, commits, row.comment, row.properties, \
        list(row.columns.values_list("name", flat=True))


def error_of(response):
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) >= {"type", "code", "message"}, body
    assert body["error"]["code"] == response.status_code
    return body["error"]["type"]
