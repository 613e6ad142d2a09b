from catalog.api.iceberg import config, credentials, namespaces, scans, tables, transactions, views
from catalog.api.routes import routes

PREFIX = "v1/<str:prefix>"
NAMESPACE = f"{PREFIX}/namespaces/<str:namespace>"
TABLE = f"{NAMESPACE}/tables/<str:table>"

urlpatterns = [
    *routes("v1", {"config": config.ConfigView, "oauth/tokens": config.OAuthTokensView}),
    *routes(PREFIX, {
        "namespaces": namespaces.NamespacesView,
        "tables/rename": tables.RenameTableView,
        "transactions/commit": transactions.TransactionsView,
        "views/rename": views.RenameViewView,
    }),
    *routes(NAMESPACE, {
        "": namespaces.NamespaceView,
        "properties": namespaces.NamespacePropertiesView,
        "tables": tables.TablesView,
        "register": tables.RegisterTableView,
        "register-view": views.RegisterViewView,
        "views": views.ViewsView,
        "views/<str:table>": views.ViewView,
    }),
    *routes(TABLE, {
        "": tables.TableView,
        "credentials": credentials.CredentialsView,
        "metrics": tables.MetricsView,
        "undrop": tables.UndropTableView,
        "sign": credentials.SignView,
        "sign/<str:staged>": credentials.StagedSignView,
        "plan": scans.PlanView,
        "plan/<str:plan_id>": scans.PlanResultView,
        "tasks": scans.TasksView,
        "notifications": tables.NotificationsView,
    }),
]
