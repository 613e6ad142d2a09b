"""A pipeline around Sail (tests/sail_server.py): Sail writes a batch's Parquet files into two
managed Delta tables, `ucweb_client.delta_transactions` stages one commit per table and has the
catalog ratify both at once, and Sail reads both tables with the batch in them. A transaction
built on a version another writer took meanwhile is refused whole: Sail reads neither table's
part of it."""

from __future__ import annotations

import pytest

from commits.models import DeltaCommit
from tests.test_sail import connect, local_path, managed, recorder, rows, sail, sail_catalog  # noqa: F401
from tests.test_sail import sail_log, sail_storage, sail_token, spark  # noqa: F401 - the Sail fixtures
from ucweb_client.delta_transactions import DeltaTransaction, TransactionFailed, files_under

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.spark, pytest.mark.xdist_group("sail")]


def write_batch(spark, batch: str):
    """What a pipeline's engine does: the batch's rows into each table's location, as Parquet."""
    orders, totals = managed("orders"), managed("city_totals")
    data = spark.createDataFrame([(2, "Porto"), (3, "Porto"), (4, "Braga")], "id INT, city STRING")
    data.write.parquet(str(local_path(orders.storage_location) / batch))
    data.groupBy("city").count().withColumnRenamed("count", "orders").write.parquet(
        str(local_path(totals.storage_location) / batch))
    return orders, totals


@pytest.mark.parametrize("api", ["v1", "preview"])
def test_a_pipeline_commits_two_tables_at_once(api, spark, live_server, sail_token, sail_log):
    spark.sql("CREATE TABLE unity.default.orders (id INT, city STRING) USING DELTA")
    spark.sql("CREATE TABLE unity.default.city_totals (city STRING, orders BIGINT) USING DELTA")
    spark.sql("INSERT INTO unity.default.orders VALUES (1, 'Lisbon')")
    orders, totals = write_batch(spark, "batch-1")

    txn = DeltaTransaction(live_server.url, sail_token, api=api)
    assert txn.append("unity.default.orders", files_under(orders.storage_location, "batch-1")) == 2
    assert txn.append("unity.default.city_totals", files_under(totals.storage_location, "batch-1")) == 1
    answer = txn.commit()
    versions = ([r["latest-table-version"] for r in answer["results"]] if api == "v1"
                else [c["latest_table_version"] for c in answer["commits"]])
    assert versions == [2, 1]
    assert txn.commit() == answer, "sent again, the same answer"
    assert DeltaCommit.objects.filter(table__in=[orders, totals]).count() == 3

    assert rows(spark, "SELECT id, city FROM unity.default.orders") == [
        (1, "Lisbon"), (2, "Porto"), (3, "Porto"), (4, "Braga")]
    assert rows(spark, "SELECT city, orders FROM unity.default.city_totals") == [("Braga", 1), ("Porto", 2)]

    # The next batch is staged on orders' version 3; Sail takes it first: nothing of the batch lands.
    write_batch(spark, "batch-2")
    late = DeltaTransaction(live_server.url, sail_token, api=api)
    late.append("unity.default.city_totals", files_under(totals.storage_location, "batch-2"))
    late.append("unity.default.orders", files_under(orders.storage_location, "batch-2"))
    spark.sql("INSERT INTO unity.default.orders VALUES (5, 'Faro')")
    with pytest.raises(TransactionFailed) as refused:
        late.commit()
    assert refused.value.status == 409
    assert rows(spark, "SELECT count(*) FROM unity.default.orders") == [(5,)]
    assert rows(spark, "SELECT city, orders FROM unity.default.city_totals") == [("Braga", 1), ("Porto", 2)]
