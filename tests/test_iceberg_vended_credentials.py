"""Iceberg engines with no storage keys of their own, on SeaweedFS with STS and IAM
(tests/seaweedfs_sts.py): credentials vended for one table (pyiceberg, DuckDB, and raw S3 calls
with the vended keys), refreshed, and vended on staged create and register. The object store
enforces the vended session policies; the server's own keys appear in no response, no log line
and no admin page."""

from __future__ import annotations

import pytest
import requests

from catalog.models import AuditEvent
from tests.duckdb_sessions import iceberg_duckdb
from tests.iceberg_vending_support import SCHEMA, WAREHOUSE, rows
from tests.iceberg_vending_support import lake  # noqa: F401 - the fixture
from tests.seaweedfs_sts import allowed
from tests.seaweedfs_sts import sts_s3_server  # noqa: F401 - the module-scoped server fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.s3, pytest.mark.xdist_group("iceberg_vending")]


# == vended credentials ================================================================================
def test_pyiceberg_creates_appends_and_scans_with_vended_credentials(lake):
    catalog = lake.catalog("writer")
    table = catalog.create_table(("default", "trips"), schema=SCHEMA)
    table.append(rows((1, "a"), (2, "b")))
    table.append(rows((3, "c")))
    assert sorted(catalog.load_table(("default", "trips")).scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]

    loaded = lake.http("GET", "/namespaces/default/tables/trips", name="writer").json()
    config = loaded["config"]
    assert config["s3.session-token"] and config["s3.access-key-id"] != lake.server.access_key
    assert int(config["s3.session-token-expires-at-ms"]) > 0
    assert config["client.refresh-credentials-enabled"] == "true"
    assert config["client.refresh-credentials-endpoint"] == "v1/unity/namespaces/default/tables/trips/credentials"
    location = loaded["metadata"]["location"]
    assert loaded["storage-credentials"] == [{"prefix": location, "config": config}]

    # The refresh endpoint, resolved against the catalog URI, answers fresh keys for the same prefix.
    refreshed = requests.get(f"{lake.uri}/{config['client.refresh-credentials-endpoint']}", timeout=60,
                             headers={"Authorization": f"Bearer {lake.token['writer']}"}).json()
    [credential] = refreshed["storage-credentials"]
    assert credential["prefix"] == location and credential["config"]["s3.session-token"]
    s3 = lake.s3(credential["config"])
    key = lake.key(location) + "/data/extra.txt"
    s3.put_object(Bucket=lake.server.bucket, Key=key, Body=b"x")
    s3.delete_object(Bucket=lake.server.bucket, Key=key)
    assert AuditEvent.objects.filter(action="vendIcebergCredentials", principal="writer",
                                     securable_name="unity.default.trips").exists()


def test_select_only_reads_and_the_storage_refuses_its_writes(lake):
    lake.catalog("writer").create_table(("default", "trips"), schema=SCHEMA).append(rows((1, "a")))
    reader = lake.catalog("reader")
    table = reader.load_table(("default", "trips"))
    assert table.scan().to_arrow().column("id").to_pylist() == [1]
    before = table.metadata_location
    with pytest.raises(OSError, match="(?i)denied|forbidden|403"):
        table.append(rows((2, "b")))
    assert reader.load_table(("default", "trips")).metadata_location == before

    config = lake.http("GET", "/namespaces/default/tables/trips", name="reader").json()["config"]
    s3 = lake.s3(config)
    prefix = lake.key(table.metadata.location)
    metadata_key = lake.key(before)
    assert s3.get_object(Bucket=lake.server.bucket, Key=metadata_key)["Body"].read()
    assert not allowed(lambda: s3.put_object(Bucket=lake.server.bucket, Key=f"{prefix}/data/x.parquet", Body=b"x"))
    assert not allowed(lambda: s3.delete_object(Bucket=lake.server.bucket, Key=metadata_key))


def test_a_credential_for_one_table_is_denied_on_another(lake):
    writer = lake.catalog("writer")
    a = writer.create_table(("default", "a"), schema=SCHEMA)
    a.append(rows((1, "a")))
    b = writer.create_table(("default", "b"), schema=SCHEMA)
    b.append(rows((2, "b")))
    s3 = lake.s3(lake.http("GET", "/namespaces/default/tables/a", name="writer").json()["config"])
    bucket = lake.server.bucket
    b_metadata = lake.key(writer.load_table(("default", "b")).metadata_location)
    b_prefix = lake.key(b.metadata.location)
    assert s3.get_object(Bucket=bucket, Key=lake.key(writer.load_table(("default", "a")).metadata_location))
    assert not allowed(lambda: s3.get_object(Bucket=bucket, Key=b_metadata))
    assert not allowed(lambda: s3.list_objects_v2(Bucket=bucket, Prefix=b_prefix + "/"))
    assert not allowed(lambda: s3.put_object(Bucket=bucket, Key=f"{b_prefix}/data/evil.parquet", Body=b"x"))
    assert not allowed(lambda: s3.delete_object(Bucket=bucket, Key=b_metadata))
    assert lake.server.client().get_object(Bucket=bucket, Key=b_metadata)["Body"].read()


def test_stage_create_and_register_vend_write_credentials(lake):
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
    staged = lake.http("POST", "/namespaces/default/tables", name="writer",
                       json={"name": "staged", "schema": schema, "stage-create": True}).json()
    assert staged["metadata-location"] is None
    s3 = lake.s3(staged["config"])
    key = lake.key(staged["metadata"]["location"]) + "/data/first.parquet"
    s3.put_object(Bucket=lake.server.bucket, Key=key, Body=b"x")
    assert staged["storage-credentials"][0]["prefix"] == staged["metadata"]["location"]

    created = lake.catalog("admin").create_table(("default", "original"), schema=SCHEMA)
    created.append(rows((1, "a")))
    metadata_location = lake.catalog("admin").load_table(("default", "original")).metadata_location
    assert lake.http("DELETE", "/namespaces/default/tables/original").status_code == 204
    registered = lake.http("POST", "/namespaces/default/register",
                           json={"name": "again", "metadata-location": metadata_location})
    assert registered.status_code == 200, registered.text
    config = registered.json()["config"]
    assert config["s3.session-token"]
    assert lake.s3(config).get_object(Bucket=lake.server.bucket, Key=lake.key(metadata_location))


def test_without_the_header_nothing_is_vended(lake):
    lake.catalog("admin").create_table(("default", "plain"), schema=SCHEMA)
    loaded = lake.http("GET", "/namespaces/default/tables/plain", delegation=None).json()
    assert "storage-credentials" not in loaded
    assert not any(key.startswith("s3.") and "key" in key or "token" in key for key in loaded["config"])


def test_duckdb_attaches_with_default_delegation_and_no_keys(lake, live_server):
    lake.catalog("writer").create_table(("default", "events"), schema=SCHEMA).append(rows((1, "a"), (2, "b")))
    con = iceberg_duckdb(lake.uri, lake.token["writer"], WAREHOUSE)
    assert con.execute("SELECT count(*) FROM lake.default.events").fetchone() == (2,)
    con.execute("INSERT INTO lake.default.events VALUES (3, 'c')")
    assert con.execute("SELECT sum(id) FROM lake.default.events").fetchone() == (6,)
    con.close()
    assert sorted(lake.catalog("reader").load_table(("default", "events")).scan().to_arrow()
                  .column("id").to_pylist()) == [1, 2, 3]


def test_admin_pages_show_no_server_key(lake, client):
    from django.contrib.auth import get_user_model

    table = lake.catalog("writer").create_table(("default", "shown"), schema=SCHEMA)
    table.append(rows((1, "a")))
    lake.http("GET", "/namespaces/default/tables/shown/credentials", name="writer")
    client.force_login(get_user_model().objects.create_superuser("governance", "gov@example.com", "pw"))
    from catalog.models import Table

    row = Table.objects.get(name="shown")
    pages = ["/admin/catalog/auditevent/", "/admin/catalog/table/", f"/admin/catalog/table/{row.id}/change/"]
    pages += [f"/admin/catalog/auditevent/{event.id}/change/"
              for event in AuditEvent.objects.filter(action="vendIcebergCredentials")]
    assert len(pages) > 3
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        body = response.content.decode()
        assert lake.server.secret_key not in body and lake.server.access_key not in body, page
