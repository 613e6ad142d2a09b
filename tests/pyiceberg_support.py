"""What the modules that drive the Iceberg REST catalog (/api/catalog) with pyiceberg's RestCatalog
share: the schema, partition spec and sort order of their tables and rows of it, the storage they
run on (the `storage` fixture: file:// and a real S3-compatible server, SeaweedFS), pyiceberg and
raw-HTTP clients of the live server (the fixtures `connect`, `catalog` and `http`), and the check
of the Iceberg error envelope."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import NullOrder, SortDirection, SortField, SortOrder
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestampType

from catalog.storage import storage_for


ICEBERG = "/api/catalog"
WAREHOUSE = "unity"

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestampType(), required=False),
    NestedField(3, "category", StringType(), required=False),
    NestedField(4, "amount", DoubleType(), required=False),
)
BY_DAY = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="ts_day"))
BY_ID = SortOrder(SortField(source_id=1, transform=IdentityTransform(), direction=SortDirection.ASC,
                            null_order=NullOrder.NULLS_FIRST))
ARROW = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("ts", pa.timestamp("us")),
    pa.field("category", pa.string()),
    pa.field("amount", pa.float64()),
])


def rows(*items) -> pa.Table:
    """rows((1, "2024-01-01T10:00", "a", 1.5), ...) as an Arrow table of SCHEMA."""
    return pa.Table.from_pylist(
        [{"id": i, "ts": datetime.fromisoformat(ts), "category": c, "amount": a} for i, ts, c, a in items],
        schema=ARROW,
    )


def ids(table) -> list[int]:
    """The sorted ids of an Arrow table or of a pyiceberg table's current snapshot."""
    arrow = table if isinstance(table, pa.Table) else table.scan().to_arrow()
    return sorted(arrow.column("id").to_pylist())


# -- fixtures ---------------------------------------------------------------------------------------
@dataclass
class Storage:
    kind: str
    root: str
    # What a client needs on top of the loadTable config: the object store's keys (the catalog
    # vends endpoint, region and path style itself, and no long-lived secrets).
    client_properties: dict

    def files(self, location: str) -> list[str]:
        return [info.url for info in storage_for(location).list(location)]


@pytest.fixture(params=["file", pytest.param("s3", marks=pytest.mark.s3)])
def storage(request) -> Storage:
    if request.param == "file":
        root = request.getfixturevalue("storage_root")
        return Storage("file", root.as_uri(), {})
    server = request.getfixturevalue("s3_server")
    root = request.getfixturevalue("s3_storage_root")
    return Storage("s3", root, {"s3.access-key-id": server.access_key, "s3.secret-access-key": server.secret_key})


file_only = pytest.mark.parametrize("storage", ["file"], indirect=True)


@pytest.fixture
def connect(live_server, bootstrap, make_token, storage):
    """connect("bob") → a RestCatalog acting as principal bob (admin for "admin")."""

    def connect(name: str = "admin", *, admin: bool | None = None, **properties) -> RestCatalog:
        token = make_token(name, admin=(name == "admin") if admin is None else admin)
        return RestCatalog(
            "ucweb", uri=f"{live_server.url}{ICEBERG}", warehouse=WAREHOUSE, token=token,
            **storage.client_properties, **properties,
        )

    return connect


@pytest.fixture
def catalog(connect) -> RestCatalog:
    return connect()


class Http:
    """Raw requests to the Iceberg REST routes of the live server, with a bearer token."""

    def __init__(self, base: str, token: str | None):
        self.base = base
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def __call__(self, method: str, path: str, body=None, **kwargs) -> requests.Response:
        return self.session.request(method, self.base + path, json=body, timeout=30, **kwargs)


@pytest.fixture
def http(live_server, bootstrap, make_token, storage):
    """http(method, path, body) against /api/catalog/v1/unity as the metastore admin;
    http.as_("bob") for another principal."""
    base = f"{live_server.url}{ICEBERG}/v1/{WAREHOUSE}"
    token = make_token("admin", admin=True)
    client = Http(base, token)
    client.as_ = lambda name, admin=False: Http(base, make_token(name, admin=admin))
    client.root = Http(f"{live_server.url}{ICEBERG}/v1", token)  # paths without the warehouse
    return client


def error_of(response: requests.Response) -> tuple[int, str]:
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == response.status_code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return response.status_code, body["error"]["type"]


def new_table(catalog: RestCatalog, name: str = "events", namespace: str = "default", **kwargs):
    kwargs.setdefault("partition_spec", BY_DAY)
    kwargs.setdefault("sort_order", BY_ID)
    return catalog.create_table((namespace, name), schema=SCHEMA, **kwargs)
