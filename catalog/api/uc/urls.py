from django.urls import path

from catalog.api.uc import assets, delta_commits, dropped, staging, views

urlpatterns = [
    path("catalogs", views.CatalogsView.as_view()),
    path("catalogs/<str:name>", views.CatalogView.as_view()),
    path("schemas", views.SchemasView.as_view()),
    path("schemas/<str:full_name>", views.SchemaView.as_view()),
    path("staging-tables", staging.StagingTablesView.as_view()),
    path("tables", views.TablesView.as_view()),
    path("tables/<str:full_name>", views.TableView.as_view()),
    path("dropped-tables", dropped.DroppedTablesView.as_view()),
    path("dropped-tables/<str:table_id>", dropped.DroppedTableView.as_view()),
    path("dropped-tables/<str:table_id>/undrop", dropped.UndropTableView.as_view()),
    path("permissions/<str:securable_type>/<str:full_name>", views.PermissionsView.as_view()),
    path("metastore_summary", views.MetastoreSummaryView.as_view()),
    path("volumes", assets.VolumesView.as_view()),
    path("volumes/<str:name>", assets.VolumeView.as_view()),
    path("dropped-volumes", dropped.DroppedVolumesView.as_view()),
    path("dropped-volumes/<str:volume_id>", dropped.DroppedVolumeView.as_view()),
    path("dropped-volumes/<str:volume_id>/undrop", dropped.UndropVolumeView.as_view()),
    path("functions", assets.FunctionsView.as_view()),
    path("functions/<str:name>", assets.FunctionView.as_view()),
    path("models", assets.RegisteredModelsView.as_view()),
    path("models/versions", assets.ModelVersionsCreateView.as_view()),
    path("models/<str:full_name>", assets.RegisteredModelView.as_view()),
    path("models/<str:full_name>/versions", assets.ModelVersionsView.as_view()),
    path("models/<str:full_name>/versions/<str:version>", assets.ModelVersionView.as_view()),
    path("models/<str:full_name>/versions/<str:version>/finalize", assets.FinalizeModelVersionView.as_view()),
    path("credentials", assets.CredentialsView.as_view()),
    path("credentials/<str:name>", assets.CredentialView.as_view()),
    path("external-locations", assets.ExternalLocationsView.as_view()),
    path("external-locations/<str:name>", assets.ExternalLocationView.as_view()),
    path("temporary-table-credentials", assets.TemporaryTableCredentialsView.as_view()),
    path("temporary-volume-credentials", assets.TemporaryVolumeCredentialsView.as_view()),
    path("temporary-path-credentials", assets.TemporaryPathCredentialsView.as_view()),
    path("temporary-model-version-credentials", assets.TemporaryModelVersionCredentialsView.as_view()),
    # Seed 000 names the commit endpoints /delta/commits (GET) and /delta/commit (POST); shipped
    # clients call /delta/preview/commits for both. All of them are one view.
    path("delta/commits", delta_commits.DeltaCommitsView.as_view()),
    path("delta/commit", delta_commits.DeltaCommitsView.as_view()),
    path("delta/preview/commits", delta_commits.DeltaCommitsView.as_view()),
    path("delta/preview/transactions/commit", delta_commits.DeltaTransactionView.as_view()),
    path("delta/metrics", delta_commits.DeltaMetricsView.as_view()),
    path("delta/preview/metrics", delta_commits.DeltaMetricsView.as_view()),
]

# Databricks' workspace settings API (/api/2.0/settings/...), of which clients of Unity Catalog read
# the default namespace.
workspace_settings_urlpatterns = [
    path("types/default_namespace_ws/names/default", views.DefaultNamespaceSettingView.as_view()),
]
