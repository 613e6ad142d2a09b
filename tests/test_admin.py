"""The governance view: every admin page renders, and a managed table shows its commits."""

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELISTS = [
    "catalog/catalog", "catalog/schema", "catalog/table", "catalog/principal", "catalog/token",
    "catalog/grant", "catalog/auditevent", "catalog/stagingtable", "catalog/metastore", "commits/deltacommit",
]


@pytest.fixture
def browser(client):
    user = get_user_model().objects.create_superuser("governance", "gov@example.com", "pw")
    client.force_login(user)
    return client


def test_changelists_render(browser, delta):
    delta.create_table("unity", "default", "events")
    for page in CHANGELISTS:
        response = browser.get(f"/admin/{page}/", {"q": "e"})
        assert response.status_code == 200, page


def test_managed_table_page_shows_commits_and_metrics(browser, delta, admin_client):
    created = delta.create_table("unity", "default", "events")
    info = delta.append(created.table_id, created.storage_location, 1, "p1.parquet", publish=False)
    admin_client.post("/api/2.1/unity-catalog/delta/metrics", {
        "table_id": created.table_id, "table_uri": created.storage_location,
        "report": {"commit_report": {"commit_version": 1, "num_rows_inserted": 4242}}}, format="json")
    page = browser.get(f"/admin/catalog/table/{created.table_id}/change/").content.decode()
    assert info.file_name in page and "4242" in page
