"""The governance view: every admin page renders, and a managed table shows its commits."""

import pytest
from django.contrib.auth import get_user_model

from tests.helpers import UC

pytestmark = pytest.mark.django_db(transaction=True)

CHANGELISTS = [
    "catalog/catalog", "catalog/schema", "catalog/table", "catalog/principal", "catalog/token",
    "catalog/grant", "catalog/auditevent", "catalog/stagingtable", "catalog/metastore", "commits/deltacommit",
    "maintenance/purgerequest", "maintenance/tablealert", "maintenance/maintenanceplan", "maintenance/tablehealth",
    "django_celery_beat/periodictask", "django_celery_results/taskresult",
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
    admin_client.post(f"{UC}/delta/metrics", {
        "table_id": created.table_id, "table_uri": created.storage_location,
        "report": {"commit_report": {"commit_version": 1, "num_rows_inserted": 4242}}}, format="json")
    page = browser.get(f"/admin/catalog/table/{created.table_id}/change/").content.decode()
    assert info.file_name in page and "4242" in page


def test_table_page_plots_health_and_lists_plans(browser, delta):
    from maintenance.health import refresh_table
    from catalog.models import Table
    from commits.models import CommitReport

    created = delta.create_table("unity", "default", "events")
    delta.append(created.table_id, created.storage_location, 1, "p1.parquet")
    table = Table.objects.get(id=created.table_id)
    CommitReport.objects.create(table=table, commit_version=1, reported_by="admin", num_files_added=20,
                                file_size_histogram={"sorted_bin_boundaries": [0, 1024, 1 << 30],
                                                     "file_counts": [19, 1, 0], "total_bytes": [100, 5000, 0]})
    assert refresh_table(table) == ["OPTIMIZE"]
    page = browser.get(f"/admin/catalog/table/{table.id}/change/").content.decode()
    assert '<tr class="uc-plan"><td>OPTIMIZE</td><td>PLANNED</td>' in page and "<svg" in page
    assert "Commits to unity.default.events per hour" in page and "File sizes of unity.default.events" in page
    health_page = browser.get(f"/admin/maintenance/tablehealth/{table.id}/change/").content.decode()
    assert "File sizes of unity.default.events" in health_page and "hour (UTC)" in health_page
