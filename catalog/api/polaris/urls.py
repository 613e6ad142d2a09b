from catalog.api.iceberg.urls import NAMESPACE, PREFIX
from catalog.api.polaris import views
from catalog.api.routes import routes

urlpatterns = [
    *routes(NAMESPACE, {
        "generic-tables": views.GenericTablesView,
        "generic-tables/<str:table>": views.GenericTableView,
        "policies": views.PoliciesView,
        "policies/<str:policy>": views.PolicyView,
        "policies/<str:policy>/mappings": views.PolicyMappingsView,
    }),
    *routes(PREFIX, {"applicable-policies": views.ApplicablePoliciesView}),
]
