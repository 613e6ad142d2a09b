"""Polaris policies configure the maintenance the catalog runs (maintenance.policy.for_table):
`enable: false` stops the catalog planning the operations of that type, the deepest policy of a
type wins, and a data-compaction policy's target file size is the compaction target."""

import json

import pytest

from catalog.models import Principal, Table
from catalog.services import policies
from maintenance import health
from maintenance import policy as maintenance_policy
from maintenance.models import MaintenancePlan

pytestmark = pytest.mark.django_db

ICEBERG = "/api/catalog/v1/unity/namespaces/default/tables"


@pytest.fixture
def table(admin_client, storage_root):
    response = admin_client.post(ICEBERG, {"name": "events", "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": False}]}}, format="json")
    assert response.status_code == 200, response.content
    return Table.objects.select_related("schema__catalog").get(name="events")


def _policy(name: str, policy_type: str, content: dict, target: dict) -> None:
    admin = Principal.objects.get(name="admin")
    policies.create_policy(caller=admin, prefix="unity", namespace="default",
                           body={"name": name, "type": policy_type, "content": json.dumps(content)})
    policies.attach_policy(caller=admin, prefix="unity", namespace="default", name=name, body={"target": target})


def test_without_policies_every_operation_is_planned(table):
    assert maintenance_policy.for_table(table).disabled_operations == frozenset()
    planned = []
    health._plan(planned, table, MaintenancePlan.Operation.OPTIMIZE, "small files")
    assert planned == ["OPTIMIZE"]
    assert MaintenancePlan.objects.filter(table=table, operation="OPTIMIZE").count() == 1


def test_a_disabled_policy_stops_planning_its_operations_only(table):
    _policy("no-compaction", "system.data-compaction", {"enable": False}, {"type": "catalog", "path": []})
    _policy("no-orphans", "system.orphan-file-removal", {"enable": False}, {"type": "namespace", "path": ["default"]})
    policy = maintenance_policy.for_table(table)
    assert policy.disabled_operations == {"OPTIMIZE", "REMOVE_ORPHANS", "VACUUM"}
    planned = []
    for operation in ("OPTIMIZE", "REMOVE_ORPHANS", "EXPIRE_SNAPSHOTS"):
        health._plan(planned, table, operation, "due")
    assert planned == ["EXPIRE_SNAPSHOTS"]
    assert list(MaintenancePlan.objects.filter(table=table).values_list("operation", flat=True)) == [
        "EXPIRE_SNAPSHOTS"]


def test_the_deepest_policy_of_a_type_wins_and_sets_the_target_size(table, settings):
    _policy("catalog-off", "system.data-compaction", {"enable": False}, {"type": "catalog", "path": []})
    assert "OPTIMIZE" in maintenance_policy.for_table(table).disabled_operations
    _policy("table-on", "system.data-compaction", {"enable": True, "target_file_size_bytes": 4096},
            {"type": "table-like", "path": ["default", "events"]})
    policy = maintenance_policy.for_table(table)
    assert "OPTIMIZE" not in policy.disabled_operations
    assert policy.target_file_bytes == 4096 != settings.UCWEB_TARGET_FILE_BYTES
    # A table property still names the target over the policy.
    Table.objects.filter(id=table.id).update(properties={"write.target-file-size-bytes": "8192"})
    table.refresh_from_db()
    assert maintenance_policy.for_table(table).target_file_bytes == 8192
