from django.urls import path

from catalog.api.iceberg import config, credentials, namespaces, scans, tables, transactions, views

NS = "v1/<str:prefix>/namespaces/<str:namespace>"

urlpatterns = [
    path("v1/config", config.ConfigView.as_view()),
    path("v1/oauth/tokens", config.OAuthTokensView.as_view()),
    path("v1/<str:prefix>/namespaces", namespaces.NamespacesView.as_view()),
    path(NS, namespaces.NamespaceView.as_view()),
    path(f"{NS}/properties", namespaces.NamespacePropertiesView.as_view()),
    path(f"{NS}/tables", tables.TablesView.as_view()),
    path(f"{NS}/tables/<str:table>", tables.TableView.as_view()),
    path(f"{NS}/tables/<str:table>/credentials", credentials.CredentialsView.as_view()),
    path(f"{NS}/tables/<str:table>/metrics", tables.MetricsView.as_view()),
    path(f"{NS}/tables/<str:table>/undrop", tables.UndropTableView.as_view()),
    path(f"{NS}/tables/<str:table>/sign", credentials.SignView.as_view()),
    path(f"{NS}/tables/<str:table>/sign/<str:staged>", credentials.StagedSignView.as_view()),
    path(f"{NS}/tables/<str:table>/plan", scans.PlanView.as_view()),
    path(f"{NS}/tables/<str:table>/plan/<str:plan_id>", scans.PlanResultView.as_view()),
    path(f"{NS}/tables/<str:table>/tasks", scans.TasksView.as_view()),
    path(f"{NS}/register", tables.RegisterTableView.as_view()),
    path(f"{NS}/register-view", views.RegisterViewView.as_view()),
    path(f"{NS}/tables/<str:table>/notifications", tables.NotificationsView.as_view()),
    path("v1/<str:prefix>/tables/rename", tables.RenameTableView.as_view()),
    path("v1/<str:prefix>/transactions/commit", transactions.TransactionsView.as_view()),
    path(f"{NS}/views", views.ViewsView.as_view()),
    path(f"{NS}/views/<str:table>", views.ViewView.as_view()),
    path("v1/<str:prefix>/views/rename", views.RenameViewView.as_view()),
]
