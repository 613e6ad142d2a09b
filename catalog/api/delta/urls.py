from django.urls import path

from catalog.api.delta import views

SCHEMA = "catalogs/<str:catalog>/schemas/<str:schema>"
TABLE = f"{SCHEMA}/tables/<str:table>"

urlpatterns = [
    path("config", views.ConfigView.as_view()),
    path(f"{SCHEMA}/staging-tables", views.StagingTablesView.as_view()),
    path(f"{SCHEMA}/tables", views.TablesView.as_view()),
    path(TABLE, views.TableView.as_view()),
    path(f"{TABLE}/credentials", views.TableCredentialsView.as_view()),
    path(f"{TABLE}/metrics", views.MetricsView.as_view()),
    path(f"{TABLE}/rename", views.RenameView.as_view()),
    path("staging-tables/<str:table_id>/credentials", views.StagingCredentialsView.as_view()),
    path("temporary-path-credentials", views.PathCredentialsView.as_view()),
    path("transactions/commit", views.TransactionView.as_view()),
]
