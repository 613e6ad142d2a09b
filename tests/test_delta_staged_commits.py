"""A Delta commit is ratified only for a staged file that exists, has the declared size and is a
Delta commit; the maintenance policy is read from those very bytes, and the catalog never
publishes a staged file that was rewritten after ratification. On file:// and on S3."""

import hashlib
import json
import uuid

import pytest

from catalog.models import Table
from catalog.storage import join, storage_for
from commits.models import DeltaCommit
from maintenance.models import TableAlert
from maintenance.publish import verify_table
from tests.delta_client import write_staged
from tests.helpers import UC, audited_successes

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["file", pytest.param("s3", marks=pytest.mark.s3)])
def writer(request):
    """(Delta client, table id, table location) for a fresh managed table on file:// or S3."""
    fixture = "delta" if request.param == "file" else "delta_s3"
    client = request.getfixturevalue(fixture)
    created = client.create_table("unity", "default", "events")
    return client, created.table_id, created.storage_location


def tree(location):
    """Every object under the table, with its bytes' digest: what 'nothing changed' means."""
    storage = storage_for(location)
    return {item.url: hashlib.sha256(storage.read(item.url)).hexdigest() for item in storage.list(location)}


def state(table_id):
    row = Table.objects.get(id=table_id)
    return (row.latest_version, row.latest_published_version, row.properties,
            list(DeltaCommit.objects.filter(table=row).values_list("version", "file_name")),
            audited_successes("commitDelta"))


def propose(client, table_id, location, version, file_name, size):
    body = {"table_id": table_id, "table_uri": location, "commit_info": {
        "version": version, "timestamp": 1704067200000 + version, "file_name": file_name,
        "file_size": size, "file_modification_timestamp": 1704067200000 + version}}
    return client.post(f"{UC}/delta/commit", body, format="json")


def ratify(client, table_id, location, *, size=None) -> tuple[str, int]:
    """A staged WRITE commit of version 1 (padded to `size` bytes when given), proposed and
    ratified; its file name and size."""
    name = f"{1:020d}.{uuid.uuid4()}.json"
    size = write_staged(location, name, size=size)
    assert propose(client, table_id, location, 1, name, size).status_code == 200
    return name, size


def staged_and_published(location, name) -> tuple[str, str]:
    """The URLs of staged commit `name` and of the published log file of version 1."""
    return join(location, "_delta_log", "_staged_commits", name), join(location, "_delta_log", f"{1:020d}.json")


def refused(client, table_id, location, version, file_name, size, *, status=400):
    before = (state(table_id), tree(location))
    response = propose(client, table_id, location, version, file_name, size)
    assert response.status_code == status, response.content
    assert (state(table_id), tree(location)) == before, "a refused commit changes nothing"
    return response.json()


def test_a_staged_file_that_does_not_exist_is_not_ratified(writer, admin_client):
    _, table_id, location = writer
    name = f"{1:020d}.{uuid.uuid4()}.json"
    body = refused(admin_client, table_id, location, 1, name, 1024)
    assert body["error_code"] == "INVALID_PARAMETER_VALUE"
    assert name in body["message"] and "does not exist" in body["message"]


def test_the_declared_size_must_be_the_files(writer, admin_client):
    _, table_id, location = writer
    name = f"{1:020d}.{uuid.uuid4()}.json"
    size = write_staged(location, name)
    for declared in (size - 1, size + 1):
        body = refused(admin_client, table_id, location, 1, name, declared)
        assert body["error_code"] == "INVALID_PARAMETER_VALUE"
        assert f"has {size} bytes" in body["message"] and str(declared) in body["message"]
    assert propose(admin_client, table_id, location, 1, name, size).status_code == 200


@pytest.mark.parametrize("content", [b"not json\n", b"[1, 2]\n", b"\xff\xfe\n"], ids=["text", "array", "binary"])
def test_a_staged_file_that_is_not_a_delta_commit_is_not_ratified(writer, admin_client, content):
    _, table_id, location = writer
    name = f"{1:020d}.{uuid.uuid4()}.json"
    url = join(location, "_delta_log", "_staged_commits", name)
    storage_for(url).put(url, content)
    body = refused(admin_client, table_id, location, 1, name, len(content))
    assert "is not a Delta commit" in body["message"]


def test_the_ratified_bytes_digest_is_recorded(writer, admin_client):
    _, table_id, location = writer
    name, _ = ratify(admin_client, table_id, location)
    url, _ = staged_and_published(location, name)
    digest = hashlib.sha256(storage_for(url).read(url)).hexdigest()
    assert DeltaCommit.objects.get(table_id=table_id, version=1).file_sha256 == digest


def test_a_file_written_after_a_refusal_meets_the_policy(writer, admin_client):
    """The attack of the issue: propose a name that was never written (refused now), then write
    an OPTIMIZE commit under that name: proposing it is refused by the maintenance policy."""
    _, table_id, location = writer
    name = f"{1:020d}.{uuid.uuid4()}.json"
    refused(admin_client, table_id, location, 1, name, 1024)
    size = write_staged(location, name, operation="OPTIMIZE", size=1024)
    body = refused(admin_client, table_id, location, 1, name, size, status=403)
    assert body["error_code"] == "PERMISSION_DENIED" and "ucweb.maintenance.client-operations" in body["message"]


def test_a_staged_file_rewritten_after_ratification_is_never_published(writer, admin_client):
    """Ratify a WRITE, then replace the staged file by an OPTIMIZE of the same size: the catalog
    does not publish it, raises an alert, and the published log stays without that version."""
    _, table_id, location = writer
    name, _ = ratify(admin_client, table_id, location, size=1024)
    write_staged(location, name, operation="OPTIMIZE", size=1024)
    _, published = staged_and_published(location, name)

    assert verify_table(table_id) == 0
    assert not storage_for(published).exists(published)
    alert = TableAlert.objects.get(table_id=table_id)
    assert alert.version == 1 and alert.kind == TableAlert.Kind.PUBLISHED_MISMATCH
    assert name in alert.message and "OPTIMIZE" not in alert.message
    assert Table.objects.get(id=table_id).latest_published_version == 0


def test_a_published_file_with_other_bytes_of_the_same_size_is_caught(writer, admin_client):
    _, table_id, location = writer
    name, size = ratify(admin_client, table_id, location, size=1024)
    staged, published = staged_and_published(location, name)
    storage_for(staged).delete(staged)
    forged = json.dumps({"commitInfo": {"operation": "OPTIMIZE"}}).encode()
    storage_for(published).put(published, forged + b" " * (size - len(forged) - 1) + b"\n")
    assert verify_table(table_id) == 0
    assert TableAlert.objects.get(table_id=table_id).kind == TableAlert.Kind.PUBLISHED_MISMATCH


def test_publish_verify_publishes_exactly_the_ratified_bytes(writer, admin_client):
    _, table_id, location = writer
    name, _ = ratify(admin_client, table_id, location)
    assert verify_table(table_id) == 1
    staged, published = staged_and_published(location, name)
    assert storage_for(published).read(published) == storage_for(staged).read(staged)
    assert not TableAlert.objects.filter(table_id=table_id).exists()


def test_a_retry_of_a_ratified_commit_needs_no_staged_file(writer, admin_client):
    """After publication a client may delete its staged file; a retry of the same proposal is
    still the idempotent 200 (the commit is already the catalog's)."""
    _, table_id, location = writer
    name, size = ratify(admin_client, table_id, location)
    assert verify_table(table_id) == 1
    staged, _ = staged_and_published(location, name)
    storage_for(staged).delete(staged)
    assert propose(admin_client, table_id, location, 1, name, size).status_code == 200
    assert DeltaCommit.objects.filter(table_id=table_id).count() == 1
