"""Multi-table Delta transactions through both Delta APIs (`/delta/preview/transactions/commit`,
`/delta/v1/transactions/commit`): all tables or none, each table's own checks, the transaction
id's replay, and every bad request refused with nothing changed. The concurrency and SIGKILL
cases, on the real server process, are in tests/test_delta_transactions_storm.py."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from catalog.models import AuditEvent, Table
from catalog.schema_contract import PROPERTY
from commits.models import DeltaCommit, DeltaTransaction
from tests.delta_client import stage_commit
from tests.delta_v1_client import DeltaV1Client
from tests.helpers import UC, grant

pytestmark = pytest.mark.django_db(transaction=True)
PREVIEW = f"{UC}/delta/preview/transactions/commit"
V1 = f"{UC}/delta/v1/transactions/commit"


@pytest.fixture
def tables(live_server, bootstrap, make_token, storage_root, admin_client):
    """Managed tables unity.default.a and .b, and two.s.c in a second catalog."""
    for path, body in ((f"{UC}/catalogs", {"name": "two"}), (f"{UC}/schemas", {"name": "s", "catalog_name": "two"})):
        assert admin_client.post(path, body, format="json").status_code == 200
    client = DeltaV1Client(f"{live_server.url}{UC}", make_token("admin", admin=True))
    made = {}
    for catalog, schema, name in (("unity", "default", "a"), ("unity", "default", "b"), ("two", "s", "c")):
        metadata = client.create_table(catalog, schema, name)["metadata"]
        made[name] = {"identifier": {"catalog": catalog, "schema": schema, "name": name},
                      "id": metadata["table-uuid"], "location": metadata["location"]}
    return made


def staged(table, version, txn_id=None):
    file_name, size, now = stage_commit(table["location"], version, f"{uuid.uuid4()}.parquet",
                                        txn_id=txn_id or str(uuid.uuid4()))
    return {"version": version, "timestamp": now, "file_name": file_name, "file_size": size,
            "file_modification_timestamp": now}


def preview_item(table, version, **extra):
    return {"table_id": table["id"], "table_uri": table["location"], "commit_info": staged(table, version), **extra}


def v1_item(table, version):
    commit = {key.replace("_", "-"): value for key, value in staged(table, version).items()}
    return {"identifier": table["identifier"], "requirements": [{"type": "assert-table-uuid", "uuid": table["id"]}],
            "updates": [{"action": "add-commit", "commit": commit}]}


def preview_body(items, transaction_id=None):
    return {"transaction_id": transaction_id or str(uuid.uuid4()), "commits": items}


def v1_body(items, transaction_id=None):
    return {"transaction-id": transaction_id or str(uuid.uuid4()), "table-changes": items}


API = {"preview": (PREVIEW, preview_item, preview_body), "v1": (V1, v1_item, v1_body)}


def versions(*tables):
    return [Table.objects.get(id=t["id"]).latest_version for t in tables]


def everything(tables):
    """What a refused request must leave as it was."""
    return (sorted(DeltaCommit.objects.values_list("table_id", "version", "file_name")),
            versions(*tables.values()), DeltaTransaction.objects.count(),
            AuditEvent.objects.filter(outcome="SUCCESS").count())


def message(response):
    body = response.json()
    return body["message"] if "message" in body else body["error"]["message"]


# -- all tables or none ---------------------------------------------------------------------------------
@pytest.mark.parametrize("api", ["preview", "v1"])
def test_a_transaction_ratifies_every_table_and_audits_each(api, tables, admin_client):
    path, item, body_of = API[api]
    a, b, c = tables["a"], tables["b"], tables["c"]
    body = body_of([item(a, 1), item(c, 1), item(b, 1)])
    response = admin_client.post(path, body, format="json")
    assert response.status_code == 200, response.content
    answer = response.json()
    if api == "preview":
        assert answer == {"transaction_id": body["transaction_id"], "commits": [
            {"table_id": t["id"], "latest_table_version": 1} for t in (a, c, b)]}
    else:
        assert answer == {"transaction-id": body["transaction-id"], "results": [
            {"identifier": t["identifier"], "table-uuid": t["id"], "latest-table-version": 1} for t in (a, c, b)]}
    assert versions(a, b, c) == [1, 1, 1]
    per_table = AuditEvent.objects.filter(action="commitDelta" if api == "preview" else "updateDeltaTable")
    transaction_id = body.get("transaction_id") or body.get("transaction-id")
    assert sorted(e.securable_name for e in per_table) == ["two.s.c", "unity.default.a", "unity.default.b"]
    assert {e.details["transaction_id"] for e in per_table} == {transaction_id}
    event = AuditEvent.objects.get(action="commitDeltaTransaction")
    assert (event.securable_name, event.details["api"], len(event.details["tables"])) == (transaction_id, api, 3)

    # Each table's commit is read back through both APIs.
    for table in (a, b, c):
        commits = admin_client.get(f"{UC}/delta/preview/commits",
                                   {"table_id": table["id"], "table_uri": table["location"]}).json()
        assert [commit["version"] for commit in commits["commits"]] == [1]
        ident = table["identifier"]
        loaded = admin_client.get(f"{UC}/delta/v1/catalogs/{ident['catalog']}/schemas/{ident['schema']}/tables/"
                                  f"{ident['name']}").json()
        assert [commit["version"] for commit in loaded["commits"]] == [1]


@pytest.mark.parametrize("api", ["preview", "v1"])
def test_one_conflict_refuses_the_whole_transaction_and_names_its_table(api, tables, admin_client):
    path, item, body_of = API[api]
    a, b = tables["a"], tables["b"]
    assert admin_client.post(path, body_of([item(b, 1)]), format="json").status_code == 200
    before = everything(tables)
    body = body_of([item(a, 1), item(b, 1)])  # b's version 1 is taken
    response = admin_client.post(path, body, format="json")
    assert response.status_code == 409, response.content
    label = "commits[1] (table " if api == "preview" else "table-changes[1] (unity.default.b)"
    assert message(response).startswith(label) and "Version 1 of table unity.default.b" in message(response)
    assert everything(tables) == before
    refused = AuditEvent.objects.get(action="commitDeltaTransaction", outcome="FAILED")
    assert refused.details["status"] == 409
    # A refused transaction recorded nothing: its id may be sent again, with the conflict fixed.
    items = body.get("commits") or body.get("table-changes")
    items[1] = item(b, 2)
    fixed = {**body, ("commits" if api == "preview" else "table-changes"): items}
    response = admin_client.post(path, fixed, format="json")
    assert response.status_code == 200, response.content
    assert versions(a, b) == [1, 2]


@pytest.mark.parametrize("api", ["preview", "v1"])
def test_the_same_transaction_id_is_answered_once(api, tables, admin_client, make_client):
    path, item, body_of = API[api]
    a, b = tables["a"], tables["b"]
    body = body_of([item(a, 1), item(b, 1)])
    first = admin_client.post(path, body, format="json")
    assert first.status_code == 200, first.content
    after_first = everything(tables)
    again = admin_client.post(path, body, format="json")
    assert (again.status_code, again.json()) == (200, first.json())
    assert everything(tables) == after_first, "nothing ratified or audited again"

    other = body_of([item(a, 2), item(b, 2)], transaction_id=body.get("transaction_id") or body["transaction-id"])
    response = admin_client.post(path, other, format="json")
    assert response.status_code == 409 and "committed already with another body" in message(response)
    kind = response.json()["error_code"] if api == "preview" else response.json()["error"]["type"]
    assert kind == ("ABORTED" if api == "preview" else "UpdateRequirementConflictException")
    assert everything(tables) == after_first

    # Another principal's transaction ids are its own.
    grant("bob", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY")
    response = make_client("bob").post(path, other, format="json")
    assert response.status_code == 200, response.content
    assert versions(a, b) == [2, 2]


def test_a_transaction_id_is_forgotten_after_its_lifetime(tables, admin_client):
    a = tables["a"]
    body = preview_body([preview_item(a, 1)])
    assert admin_client.post(PREVIEW, body, format="json").status_code == 200
    DeltaTransaction.objects.update(created_at=timezone.now() - timedelta(seconds=1801))
    again = preview_body([preview_item(a, 2)], transaction_id=body["transaction_id"])
    response = admin_client.post(PREVIEW, again, format="json")
    assert response.status_code == 200, response.content
    assert versions(a) == [2] and DeltaTransaction.objects.count() == 1


def test_a_backfill_and_metadata_travel_in_a_transaction(tables, admin_client):
    a, b = tables["a"], tables["b"]
    assert admin_client.post(PREVIEW, preview_body([preview_item(a, 1)]), format="json").status_code == 200
    from tests.delta_client import publish

    first = DeltaCommit.objects.get(table_id=a["id"], version=1)
    publish(a["location"], 1, first.file_name)
    body = preview_body([{"table_id": a["id"], "table_uri": a["location"], "latest_published_version": 1},
                         preview_item(b, 1, metadata={"description": "totals"})])
    response = admin_client.post(PREVIEW, body, format="json")
    assert response.status_code == 200, response.content
    assert [c["latest_table_version"] for c in response.json()["commits"]] == [1, 1]
    assert Table.objects.get(id=a["id"]).latest_published_version == 1
    assert Table.objects.get(id=b["id"]).comment == "totals"


def test_a_tables_schema_contract_holds_in_a_transaction(tables, admin_client):
    """Each table's own checks run in a transaction: one table's contract refuses its narrowing,
    and the other table's commit does not land either."""
    a, b = tables["a"], tables["b"]
    path = f"{UC}/delta/v1/catalogs/unity/schemas/default/tables/a"
    attach = {"requirements": [{"type": "assert-table-uuid", "uuid": a["id"]}],
              "updates": [{"action": "set-properties", "updates": {PROPERTY: "additive-only"}}]}
    assert admin_client.post(path, attach, format="json").status_code == 200
    before = everything(tables)
    narrowing = v1_item(a, 1)
    narrowing["updates"].append({"action": "set-columns", "columns": {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}}]}})
    response = admin_client.post(V1, v1_body([v1_item(b, 1), narrowing]), format="json")
    assert response.status_code == 400, response.content
    assert message(response).startswith("table-changes[1] (unity.default.a)") and "drops column city" in message(
        response)
    assert everything(tables) == before


# -- authorization -------------------------------------------------------------------------------------
@pytest.mark.parametrize("api", ["preview", "v1"])
def test_tables_in_two_catalogs_the_caller_can_write_only_one_of(api, tables, make_client):
    path, item, body_of = API[api]
    a, c = tables["a"], tables["c"]
    grant("bob", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY")
    grant("bob", "catalog", "two", "USE CATALOG", "USE SCHEMA", "SELECT")
    bob = make_client("bob")
    before = everything(tables)
    response = bob.post(path, body_of([item(a, 1), item(c, 1)]), format="json")
    assert response.status_code == 403, response.content
    assert message(response).startswith("commits[1]" if api == "preview" else "table-changes[1] (two.s.c)")
    assert "two.s.c" in message(response)
    assert everything(tables) == before
    refusal = AuditEvent.objects.get(action="commitDeltaTransaction")
    assert refusal.outcome == "DENIED"

    # A table the caller may not see answers as one that does not exist.
    carol = make_client("carol")
    grant("carol", "catalog", "unity", "USE CATALOG", "USE SCHEMA", "SELECT", "MODIFY")
    before = everything(tables)
    hidden = carol.post(path, body_of([item(a, 1), item(c, 1)]), format="json")
    ghost = dict(c, id=str(uuid.uuid4()), identifier={"catalog": "two", "schema": "s", "name": "ghost"})
    missing = carol.post(path, body_of([item(a, 1), item(ghost, 1)]), format="json")
    assert hidden.status_code == missing.status_code == 404, (hidden.content, missing.content)
    if api == "v1":
        assert message(hidden).replace(".c", ".ghost").replace("'c'", "'ghost'") == message(missing)
    else:
        assert message(hidden).replace(c["id"], "<id>") == message(missing).replace(ghost["id"], "<id>")
    assert everything(tables) == before


# -- bad input -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("api", ["preview", "v1"])
def test_bad_transactions_are_refused_and_change_nothing(api, tables, admin_client):
    path, item, body_of = API[api]
    a, b = tables["a"], tables["b"]
    key = "commits" if api == "preview" else "table-changes"
    twice = body_of([item(a, 1), item(b, 1), item(a, 2)])
    many = body_of([item(a, 1)] * 1001)
    no_id = body_of([item(a, 1)])
    no_id.pop("transaction_id" if api == "preview" else "transaction-id")
    bad_item = body_of([item(a, 1), {**item(b, 1), "requirements" if api == "v1" else "commit_info": "x"}])
    cases = {
        "the same table twice": (twice, "names the same table as"),
        "1,001 tables": (many, "at most 1000 tables; this one names 1001"),
        "no tables": (body_of([]), f"{key} must be a non-empty array"),
        "not a list": ({**body_of([]), key: {"a": 1}}, f"{key} must be a non-empty array"),
        "no transaction id": (no_id, "is required"),
        "a bad item": (bad_item, f"{key}[1]"),
    }
    before = everything(tables)
    for name, (body, expected) in cases.items():
        response = admin_client.post(path, body, format="json")
        assert response.status_code == 400, (name, response.content)
        assert expected in message(response), (name, message(response))
    assert everything(tables) == before
