"""PySpark 3.5 with the Iceberg Spark runtime 1.10.2, through ucweb's Iceberg REST catalog. One
SparkSession serves the whole test run (tests/spark_iceberg.py); every test has a fresh database,
so the token Spark sends is put back before each test."""

import pyarrow as pa
import pytest

from catalog.models import Table
from tests.duckdb_sessions import iceberg_duckdb
from tests.spark_iceberg import SPARK_TOKEN, admit_token, pyiceberg_catalog, spark  # noqa: F401 - fixtures
from tests.spark_iceberg import spark_rows as rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark, pytest.mark.xdist_group("spark")]


@pytest.fixture(autouse=True)
def spark_principal(bootstrap, storage_root):
    admit_token()


def test_spark_sql_through_the_catalog(spark):
    spark.sql("CREATE NAMESPACE ucweb.sales")
    assert ("sales",) in rows(spark, "SHOW NAMESPACES IN ucweb")
    spark.sql("""CREATE TABLE ucweb.sales.orders (id BIGINT, city STRING, amount DOUBLE, ts TIMESTAMP)
                 USING iceberg PARTITIONED BY (days(ts))""")
    spark.sql("""INSERT INTO ucweb.sales.orders VALUES
                 (1, 'Lyon', 10.0, TIMESTAMP '2024-01-01 10:00:00'),
                 (2, 'Paris', 20.0, TIMESTAMP '2024-01-02 11:00:00')""")
    spark.sql("INSERT INTO ucweb.sales.orders VALUES (3, 'Nice', 30.0, TIMESTAMP '2024-01-02 12:00:00')")
    assert rows(spark, "SELECT id, city FROM ucweb.sales.orders ORDER BY id") == [(1, "Lyon"), (2, "Paris"), (3, "Nice")]

    snapshots = rows(spark, "SELECT snapshot_id FROM ucweb.sales.orders.snapshots ORDER BY committed_at")
    assert len(snapshots) == 2
    assert rows(spark, f"SELECT count(*) FROM ucweb.sales.orders VERSION AS OF {snapshots[0][0]}") == [(2,)]

    spark.sql("ALTER TABLE ucweb.sales.orders ADD COLUMN note STRING")
    spark.sql("DELETE FROM ucweb.sales.orders WHERE id = 1")
    spark.sql("CREATE TABLE ucweb.sales.updates USING iceberg AS "
              "SELECT 2L AS id, 'Paris' AS city, 25.0D AS amount, TIMESTAMP '2024-01-02 11:00:00' AS ts, 'fixed' AS note "
              "UNION ALL SELECT 4L, 'Lille', 40.0D, TIMESTAMP '2024-01-03 09:00:00', 'new'")
    spark.sql("""MERGE INTO ucweb.sales.orders t USING ucweb.sales.updates s ON t.id = s.id
                 WHEN MATCHED THEN UPDATE SET t.amount = s.amount, t.note = s.note
                 WHEN NOT MATCHED THEN INSERT *""")
    assert rows(spark, "SELECT id, amount, note FROM ucweb.sales.orders ORDER BY id") == [
        (2, 25.0, "fixed"), (3, 30.0, None), (4, 40.0, "new")]

    table = Table.objects.get(name="orders")
    assert table.data_source_format == "ICEBERG"
    assert [c.name for c in table.columns.order_by("position")] == ["id", "city", "amount", "ts", "note"]
    assert table.columns.get(name="ts").partition_index == 0

    spark.sql("DROP TABLE ucweb.sales.updates")
    spark.sql("DROP TABLE ucweb.sales.orders PURGE")
    assert not Table.objects.filter(name__in=["orders", "updates"]).exists()


def test_spark_metadata_table_names_resolve(spark):
    """Spark first loads `snapshots` in namespace `sales.orders`: ucweb must answer 404
    NoSuchTableException for it, or the metadata table cannot be read."""
    spark.sql("CREATE NAMESPACE ucweb.sales")
    spark.sql("CREATE TABLE ucweb.sales.orders (id BIGINT) USING iceberg")
    spark.sql("INSERT INTO ucweb.sales.orders VALUES (1)")
    assert rows(spark, "SELECT count(*) FROM ucweb.sales.orders.history") == [(1,)]
    assert rows(spark, "SELECT count(*) FROM ucweb.sales.orders.files") == [(1,)]


def test_spark_and_pyiceberg_and_duckdb_read_each_other(spark, pyiceberg_catalog, live_server):
    spark.sql("CREATE NAMESPACE ucweb.shared")
    spark.sql("CREATE TABLE ucweb.shared.from_spark (id BIGINT, name STRING) USING iceberg")
    spark.sql("INSERT INTO ucweb.shared.from_spark VALUES (1, 'a'), (2, 'b')")
    read = pyiceberg_catalog.load_table("shared.from_spark").scan().to_arrow()
    assert sorted(read.column("id").to_pylist()) == [1, 2]

    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    table = pyiceberg_catalog.create_table("shared.from_pyiceberg", schema=Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "name", StringType(), required=False)))
    table.append(pa.table({"id": pa.array([7, 8], pa.int64()), "name": ["x", "y"]}))
    assert rows(spark, "SELECT id, name FROM ucweb.shared.from_pyiceberg ORDER BY id") == [(7, "x"), (8, "y")]

    connection = iceberg_duckdb(f"{live_server.url}/api/catalog", SPARK_TOKEN)
    assert connection.sql("SELECT id FROM lake.shared.from_spark ORDER BY id").fetchall() == [(1,), (2,)]
    connection.execute("CREATE TABLE lake.shared.from_duckdb (id BIGINT)")
    connection.execute("INSERT INTO lake.shared.from_duckdb VALUES (42)")
    connection.close()
    assert rows(spark, "SELECT id FROM ucweb.shared.from_duckdb") == [(42,)]
