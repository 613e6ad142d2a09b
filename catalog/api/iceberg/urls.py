from django.urls import path

from catalog.api.iceberg import views

NS = "v1/<str:prefix>/namespaces/<str:namespace>"

urlpatterns = [
    path("v1/config", views.ConfigView.as_view()),
    path("v1/oauth/tokens", views.OAuthTokensView.as_view()),
    path("v1/<str:prefix>/namespaces", views.NamespacesView.as_view()),
    path(NS, views.NamespaceView.as_view()),
    path(f"{NS}/properties", views.NamespacePropertiesView.as_view()),
    path(f"{NS}/tables", views.TablesView.as_view()),
    path(f"{NS}/tables/<str:table>", views.TableView.as_view()),
    path(f"{NS}/tables/<str:table>/credentials", views.CredentialsView.as_view()),
    path(f"{NS}/tables/<str:table>/metrics", views.MetricsView.as_view()),
    path(f"{NS}/tables/<str:table>/sign", views.SignView.as_view()),
    path(f"{NS}/tables/<str:table>/sign/<str:staged>", views.StagedSignView.as_view()),
    path(f"{NS}/register", views.RegisterTableView.as_view()),
    path(f"{NS}/register-view", views.RegisterViewView.as_view()),
    path(f"{NS}/tables/<str:table>/notifications", views.NotificationsView.as_view()),
    path("v1/<str:prefix>/tables/rename", views.RenameTableView.as_view()),
    path("v1/<str:prefix>/transactions/commit", views.TransactionsView.as_view()),
    path(f"{NS}/views", views.ViewsView.as_view()),
    path(f"{NS}/views/<str:table>", views.ViewView.as_view()),
    path("v1/<str:prefix>/views/rename", views.RenameViewView.as_view()),
]
