from django.urls import path

from catalog.api.uc import views

urlpatterns = [
    path("catalogs", views.CatalogsView.as_view()),
    path("catalogs/<str:name>", views.CatalogView.as_view()),
    path("schemas", views.SchemasView.as_view()),
    path("schemas/<str:full_name>", views.SchemaView.as_view()),
    path("tables", views.TablesView.as_view()),
    path("tables/<str:full_name>", views.TableView.as_view()),
    path("permissions/<str:securable_type>/<str:full_name>", views.PermissionsView.as_view()),
    path("metastore_summary", views.MetastoreSummaryView.as_view()),
]
