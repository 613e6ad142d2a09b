"""Server-side scan planning of tables whose deletes Spark wrote as position delete files
(merge-on-read): pyiceberg in `scan-planning-mode=server` reads the rows pyiceberg planning on
the client reads, and the plan hands each data file the delete files that apply to it."""

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import AlwaysTrue, EqualTo, GreaterThanOrEqual

from tests.spark_iceberg import SPARK_TOKEN, admit_token, spark  # noqa: F401 - fixtures
from tests.spark_iceberg import spark_rows as rows

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark, pytest.mark.xdist_group("spark")]


@pytest.fixture(autouse=True)
def spark_principal(bootstrap, storage_root):
    admit_token()


def test_position_deletes_planned_by_the_server(spark, live_server):
    spark.sql("""CREATE TABLE ucweb.default.orders (id BIGINT, city STRING, amount DOUBLE)
                 USING iceberg PARTITIONED BY (city)
                 TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read',
                                'write.update.mode'='merge-on-read')""")
    spark.sql("""INSERT INTO ucweb.default.orders VALUES (1, 'Lyon', 10.0), (2, 'Lyon', 20.0), (3, 'Paris', 30.0),
                 (4, 'Paris', 40.0), (5, 'Nice', 50.0)""")
    spark.sql("INSERT INTO ucweb.default.orders VALUES (6, 'Lyon', 60.0), (7, 'Nice', 70.0)")
    spark.sql("DELETE FROM ucweb.default.orders WHERE id IN (2, 4)")
    spark.sql("UPDATE ucweb.default.orders SET amount = 71.0 WHERE id = 7")
    spark.sql("ALTER TABLE ucweb.default.orders ADD COLUMN note STRING")
    spark.sql("INSERT INTO ucweb.default.orders VALUES (8, 'Paris', 80.0, 'new')")
    assert sorted(rows(spark, "SELECT id FROM ucweb.default.orders")) == [(1,), (3,), (5,), (6,), (7,), (8,)]

    uri = f"{live_server.url}/api/catalog"
    client = RestCatalog("client", uri=uri, token=SPARK_TOKEN, warehouse="unity")
    server = RestCatalog("server", uri=uri, token=SPARK_TOKEN, warehouse="unity", **{"scan-planning-mode": "server"})
    local_tasks = list(client.load_table(("default", "orders")).scan().plan_files())
    assert any(task.delete_files for task in local_tasks)  # Spark wrote position deletes
    for row_filter in (AlwaysTrue(), EqualTo("city", "Lyon"), GreaterThanOrEqual("amount", 40.0), EqualTo("id", 7)):
        on_client = client.load_table(("default", "orders")).scan(row_filter=row_filter)
        on_server = server.load_table(("default", "orders")).scan(row_filter=row_filter)
        key = lambda row: row["id"]  # noqa: E731
        assert sorted(on_server.to_arrow().to_pylist(), key=key) == sorted(on_client.to_arrow().to_pylist(), key=key)
        assert on_server.count() == on_client.count(), row_filter
        planned = {task.file.file_path: sorted(d.file_path for d in task.delete_files)
                   for task in on_server.plan_files()}
        local = {task.file.file_path: sorted(d.file_path for d in task.delete_files)
                 for task in on_client.plan_files()}
        assert planned == local, row_filter
    assert sorted(row["id"] for row in server.load_table(("default", "orders")).scan().to_arrow().to_pylist()) == [
        1, 3, 5, 6, 7, 8]
    # A selective filter on the partition column: fewer tasks than data files.
    lyon = list(server.load_table(("default", "orders")).scan(row_filter=EqualTo("city", "Lyon")).plan_files())
    assert 0 < len(lyon) < len(local_tasks)
