from catalog.api.delta import views
from catalog.api.routes import routes

urlpatterns = [
    *routes("", {
        "config": views.ConfigView,
        "staging-tables/<str:table_id>/credentials": views.StagingCredentialsView,
        "temporary-path-credentials": views.PathCredentialsView,
        "transactions/commit": views.TransactionView,
    }),
    *routes("catalogs/<str:catalog>/schemas/<str:schema>", {
        "staging-tables": views.StagingTablesView,
        "tables": views.TablesView,
        "tables/<str:table>": views.TableView,
        "tables/<str:table>/credentials": views.TableCredentialsView,
        "tables/<str:table>/metrics": views.MetricsView,
        "tables/<str:table>/rename": views.RenameView,
    }),
]
