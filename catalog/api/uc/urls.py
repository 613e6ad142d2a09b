from django.urls import path

from catalog.api.uc import staging, views
from commits.api import DeltaCommitsView, DeltaMetricsView

urlpatterns = [
    path("catalogs", views.CatalogsView.as_view()),
    path("catalogs/<str:name>", views.CatalogView.as_view()),
    path("schemas", views.SchemasView.as_view()),
    path("schemas/<str:full_name>", views.SchemaView.as_view()),
    path("staging-tables", staging.StagingTablesView.as_view()),
    path("tables", views.TablesView.as_view()),
    path("tables/<str:full_name>", views.TableView.as_view()),
    path("permissions/<str:securable_type>/<str:full_name>", views.PermissionsView.as_view()),
    path("metastore_summary", views.MetastoreSummaryView.as_view()),
    # Seed 000 names the commit endpoints /delta/commits (GET) and /delta/commit (POST); shipped
    # clients call /delta/preview/commits for both. All of them are one view.
    path("delta/commits", DeltaCommitsView.as_view()),
    path("delta/commit", DeltaCommitsView.as_view()),
    path("delta/preview/commits", DeltaCommitsView.as_view()),
    path("delta/metrics", DeltaMetricsView.as_view()),
    path("delta/preview/metrics", DeltaMetricsView.as_view()),
]
