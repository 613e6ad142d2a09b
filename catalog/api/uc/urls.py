from catalog.api.routes import routes
from catalog.api.uc import assets, delta_commits, dropped, staging, views

urlpatterns = routes("", {
    "catalogs": views.CatalogsView,
    "catalogs/<str:name>": views.CatalogView,
    "schemas": views.SchemasView,
    "schemas/<str:full_name>": views.SchemaView,
    "staging-tables": staging.StagingTablesView,
    "tables": views.TablesView,
    "tables/<str:full_name>": views.TableView,
    "dropped-tables": dropped.DroppedTablesView,
    "dropped-tables/<str:table_id>": dropped.DroppedTableView,
    "dropped-tables/<str:table_id>/undrop": dropped.UndropTableView,
    "permissions/<str:securable_type>/<str:full_name>": views.PermissionsView,
    "metastore_summary": views.MetastoreSummaryView,
    "volumes": assets.VolumesView,
    "volumes/<str:name>": assets.VolumeView,
    "dropped-volumes": dropped.DroppedVolumesView,
    "dropped-volumes/<str:volume_id>": dropped.DroppedVolumeView,
    "dropped-volumes/<str:volume_id>/undrop": dropped.UndropVolumeView,
    "functions": assets.FunctionsView,
    "functions/<str:name>": assets.FunctionView,
    "models": assets.RegisteredModelsView,
    "models/versions": assets.ModelVersionsCreateView,
    "models/<str:full_name>": assets.RegisteredModelView,
    "models/<str:full_name>/versions": assets.ModelVersionsView,
    "models/<str:full_name>/versions/<str:version>": assets.ModelVersionView,
    "models/<str:full_name>/versions/<str:version>/finalize": assets.FinalizeModelVersionView,
    "credentials": assets.CredentialsView,
    "credentials/<str:name>": assets.CredentialView,
    "external-locations": assets.ExternalLocationsView,
    "external-locations/<str:name>": assets.ExternalLocationView,
    "temporary-table-credentials": assets.TemporaryTableCredentialsView,
    "temporary-volume-credentials": assets.TemporaryVolumeCredentialsView,
    "temporary-path-credentials": assets.TemporaryPathCredentialsView,
    "temporary-model-version-credentials": assets.TemporaryModelVersionCredentialsView,
    # Seed 000 names the commit endpoints /delta/commits (GET) and /delta/commit (POST); shipped
    # clients call /delta/preview/commits for both. All of them are one view.
    "delta/commits": delta_commits.DeltaCommitsView,
    "delta/commit": delta_commits.DeltaCommitsView,
    "delta/preview/commits": delta_commits.DeltaCommitsView,
    "delta/preview/transactions/commit": delta_commits.DeltaTransactionView,
    "delta/metrics": delta_commits.DeltaMetricsView,
    "delta/preview/metrics": delta_commits.DeltaMetricsView,
})

# Databricks' workspace settings API (/api/2.0/settings/...), of which clients of Unity Catalog read
# the default namespace.
workspace_settings_urlpatterns = routes("", {
    "types/default_namespace_ws/names/default": views.DefaultNamespaceSettingView,
})
