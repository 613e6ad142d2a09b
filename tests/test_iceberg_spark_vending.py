"""Spark with the Iceberg runtime and S3FileIO on SeaweedFS with STS, holding no S3 keys: INSERT,
SELECT and MERGE with vended credentials, and separately with remote signing. The shared local
SparkSession (tests/spark_iceberg.py) gets one catalog per delegation mode."""

from __future__ import annotations

import uuid

import pytest

from catalog.models import Table
from tests.seaweedfs_sts import sts_s3_server  # noqa: F401 - the module-scoped server fixture
from tests.spark_iceberg import admit_token, iceberg_spark_session
from tests.spark_iceberg import spark_rows as rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark, pytest.mark.s3, pytest.mark.xdist_group("spark")]
SPARK_TOKEN = "ucw_spark_vending_test_token"


@pytest.fixture(autouse=True)
def lake(sts_s3_server, settings, bootstrap):  # noqa: F811
    for name, value in sts_s3_server.env().items():
        setattr(settings, name, value)
    settings.UCWEB_STORAGE_ROOT = sts_s3_server.url(f"spark-{uuid.uuid4().hex[:8]}")
    admit_token(SPARK_TOKEN)
    return sts_s3_server


# What a Spark catalog on S3 adds to its configuration (docs/iceberg.md shows it).
S3_CATALOG_CONF = {"io-impl": "org.apache.iceberg.aws.s3.S3FileIO"}


def spark_with(live_server, catalog_name: str, delegation: str):
    return iceberg_spark_session(catalog_name, f"{live_server.url}/api/catalog", "unity", token=SPARK_TOKEN,
                                 extra_conf={**S3_CATALOG_CONF, "header.X-Iceberg-Access-Delegation": delegation})


def insert_select_merge(spark, catalog: str, lake, *, purge: bool):  # noqa: F811
    spark.sql(f"CREATE NAMESPACE {catalog}.sales")
    spark.sql(f"CREATE TABLE {catalog}.sales.orders (id BIGINT, city STRING, amount DOUBLE) USING iceberg")
    spark.sql(f"INSERT INTO {catalog}.sales.orders VALUES (1, 'Lyon', 10.0), (2, 'Paris', 20.0)")
    spark.sql(f"INSERT INTO {catalog}.sales.orders VALUES (3, 'Nice', 30.0)")
    assert rows(spark, f"SELECT id, city FROM {catalog}.sales.orders ORDER BY id") == [
        (1, "Lyon"), (2, "Paris"), (3, "Nice")]
    spark.sql(f"CREATE TABLE {catalog}.sales.updates USING iceberg AS "
              "SELECT 2L AS id, 'Paris' AS city, 25.0D AS amount UNION ALL SELECT 4L, 'Lille', 40.0D")
    spark.sql(f"""MERGE INTO {catalog}.sales.orders t USING {catalog}.sales.updates s ON t.id = s.id
                  WHEN MATCHED THEN UPDATE SET t.amount = s.amount
                  WHEN NOT MATCHED THEN INSERT *""")
    assert rows(spark, f"SELECT id, amount FROM {catalog}.sales.orders ORDER BY id") == [
        (1, 10.0), (2, 25.0), (3, 30.0), (4, 40.0)]
    table = Table.objects.get(name="orders")
    assert table.storage_location.startswith(f"s3://{lake.bucket}/")
    key = table.storage_location.split(f"s3://{lake.bucket}/", 1)[1]
    listed = lake.client().list_objects_v2(Bucket=lake.bucket, Prefix=key + "/data/")
    assert len([o for o in listed.get("Contents", []) if o["Key"].endswith(".parquet")]) >= 3
    # Spark's DROP ... PURGE drops the table, then deletes its files itself: with remote signing
    # the table is gone by then and nothing is signed for it, so those tables are dropped without
    # PURGE (a REST client's purgeRequested=true has the server purge them instead).
    suffix = " PURGE" if purge else ""
    spark.sql(f"DROP TABLE {catalog}.sales.updates{suffix}")
    spark.sql(f"DROP TABLE {catalog}.sales.orders{suffix}")
    assert not Table.objects.filter(name__in=["orders", "updates"]).exists()


def test_spark_with_vended_credentials(live_server, lake):
    insert_select_merge(spark_with(live_server, "vended", "vended-credentials"), "vended", lake, purge=True)


def test_spark_with_remote_signing(live_server, lake):
    insert_select_merge(spark_with(live_server, "signed", "remote-signing"), "signed", lake, purge=False)
