"""Server-side scan planning for engines with no storage keys of their own, on SeaweedFS with STS
and IAM (tests/seaweedfs_sts.py): a plan asked for with `X-Iceberg-Access-Delegation:
vended-credentials` carries read-only keys for the deepest folder of the table that holds the
files it returns, which the object store enforces; pyiceberg in server mode reads with them."""

from __future__ import annotations

import pytest
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.transforms import IdentityTransform

from tests.iceberg_vending_support import SCHEMA, rows
from tests.iceberg_vending_support import lake  # noqa: F401 - the fixture
from tests.seaweedfs_sts import allowed
from tests.seaweedfs_sts import sts_s3_server  # noqa: F401 - the module-scoped server fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.s3, pytest.mark.xdist_group("iceberg_vending")]

BY_NAME = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="name"))


def test_a_plan_vends_read_only_keys_for_the_files_it_returns(lake):
    writer = lake.catalog("writer")
    table = writer.create_table(("default", "trips"), schema=SCHEMA, partition_spec=BY_NAME)
    table.append(rows((1, "a"), (2, "b")))
    table.append(rows((3, "a"), (4, "c")))
    location = table.metadata.location

    plan = lake.http("POST", "/namespaces/default/tables/trips/plan", name="reader",
                     json={"filter": {"type": "eq", "term": "name", "value": "a"}})
    assert plan.status_code == 200, plan.text
    answer = plan.json()
    files = [task["data-file"]["file-path"] for task in answer["file-scan-tasks"]]
    assert len(files) == 2
    [credential] = answer["storage-credentials"]
    # Every file of the plan lies in the prefix, which is the partition's folder of the table.
    assert credential["prefix"] == f"{location}/data/name=a"
    assert all(path.startswith(credential["prefix"] + "/") for path in files)
    s3 = lake.s3(credential["config"])
    bucket = lake.server.bucket
    for path in files:
        assert s3.get_object(Bucket=bucket, Key=lake.key(path))["Body"].read()[:4] == b"PAR1"
    # Not the other partitions' files, not the metadata, and nothing written.
    every_file = lake.catalog("reader").load_table(("default", "trips")).scan().plan_files()
    others = [task.file.file_path for task in every_file if task.file.file_path not in files]
    assert others and not any(allowed(lambda path=path: s3.get_object(Bucket=bucket, Key=lake.key(path)))
                              for path in others)
    assert not allowed(lambda: s3.get_object(Bucket=bucket, Key=lake.key(table.metadata_location)))
    assert not allowed(lambda: s3.put_object(Bucket=bucket, Key=lake.key(files[0]) + ".x", Body=b"x"))

    # fetchPlanningResult answers fresh keys for the same prefix; without delegation, none.
    again = lake.http("GET", f"/namespaces/default/tables/trips/plan/{answer['plan-id']}", name="reader").json()
    assert again["storage-credentials"][0]["prefix"] == credential["prefix"]
    assert "storage-credentials" not in lake.http("POST", "/namespaces/default/tables/trips/plan", name="reader",
                                                  delegation=None, json={}).json()

    # pyiceberg planning on the server reads the rows its own planning reads, with vended keys.
    client = lake.catalog("reader")
    server = lake.catalog("reader", **{"scan-planning-mode": "server"})
    for row_filter in (EqualTo("name", "a"), EqualTo("id", 4)):
        on_client = client.load_table(("default", "trips")).scan(row_filter=row_filter).to_arrow().to_pylist()
        on_server = server.load_table(("default", "trips")).scan(row_filter=row_filter).to_arrow().to_pylist()
        assert sorted(on_server, key=lambda r: r["id"]) == sorted(on_client, key=lambda r: r["id"])
