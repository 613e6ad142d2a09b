from django.urls import path

from catalog.api.polaris import views

NS = "v1/<str:prefix>/namespaces/<str:namespace>"

urlpatterns = [
    path(f"{NS}/generic-tables", views.GenericTablesView.as_view()),
    path(f"{NS}/generic-tables/<str:table>", views.GenericTableView.as_view()),
    path(f"{NS}/policies", views.PoliciesView.as_view()),
    path(f"{NS}/policies/<str:policy>", views.PolicyView.as_view()),
    path(f"{NS}/policies/<str:policy>/mappings", views.PolicyMappingsView.as_view()),
    path("v1/<str:prefix>/applicable-policies", views.ApplicablePoliciesView.as_view()),
]
