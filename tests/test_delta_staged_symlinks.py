"""The commit path follows no symbolic link out of a table either: a writer who replaces a staged
commit of table A by a link to table B's staged commit has nothing ratified for A, and the
server's publication neither reads nor writes through such a link. B's files stay as they were."""

from __future__ import annotations

import os

import pytest
from unitycatalog.client.exceptions import ApiException

from catalog.models import Table
from catalog.storage import join, parse
from maintenance import publish
from maintenance.models import TableAlert
from tests.delta_client import log_name

pytestmark = pytest.mark.django_db(transaction=True)


def staged_path(location: str, file_name: str):
    return parse(join(location, "_delta_log", "_staged_commits", file_name)).path


@pytest.fixture
def two_tables(delta):
    a = delta.create_table("unity", "default", "a")
    b = delta.create_table("unity", "default", "b")
    b_info = delta.stage_commit(b.storage_location, 1, "b-rows.parquet")
    return a, b, b_info


def test_a_staged_commit_that_links_to_another_tables_is_not_ratified(delta, two_tables):
    a, b, b_info = two_tables
    b_file = staged_path(b.storage_location, b_info.file_name)
    before = open(b_file, "rb").read()
    os.makedirs(os.path.dirname(staged_path(a.storage_location, b_info.file_name)), exist_ok=True)
    os.symlink(b_file, staged_path(a.storage_location, b_info.file_name))
    with pytest.raises(ApiException) as refused:
        delta.ratify(a.table_id, a.storage_location, b_info)
    assert refused.value.status == 400 and "leads outside the table's location" in refused.value.body
    assert Table.objects.get(id=a.table_id).latest_version == 0
    assert open(b_file, "rb").read() == before


def test_publication_reads_and_writes_through_no_link(delta, two_tables):
    a, b, b_info = two_tables
    info = delta.append(a.table_id, a.storage_location, 1, "a-rows.parquet", publish=False)
    # The ratified staged file of A is replaced by a link to B's, and A's log file by a link into B.
    a_staged = staged_path(a.storage_location, info.file_name)
    os.remove(a_staged)
    b_file = staged_path(b.storage_location, b_info.file_name)
    os.symlink(b_file, a_staged)
    b_log = parse(join(b.storage_location, "_delta_log")).path
    a_log_file = os.path.join(parse(join(a.storage_location, "_delta_log")).path, log_name(1))
    os.symlink(os.path.join(b_log, "elsewhere.json"), a_log_file)
    before = sorted(os.listdir(b_log)), open(b_file, "rb").read()
    assert publish.verify_table(a.table_id) == 0
    alert = TableAlert.objects.get(table_id=a.table_id)
    assert alert.version == 1 and "outside the table's location" in alert.message
    assert Table.objects.get(id=a.table_id).latest_published_version == 0
    assert (sorted(os.listdir(b_log)), open(b_file, "rb").read()) == before
    assert not os.path.exists(os.path.join(b_log, "elsewhere.json"))
