from django.urls import path

from catalog.api.management import views

PRINCIPAL = "principals/<str:principal>"
PRINCIPAL_ROLE = "principal-roles/<str:role>"
CATALOG_ROLE = "catalogs/<str:catalog>/catalog-roles/<str:catalog_role>"

urlpatterns = [
    path("catalogs", views.CatalogsView.as_view()),
    path("catalogs/<str:catalog>", views.CatalogView.as_view()),
    path("principals", views.PrincipalsView.as_view()),
    path(PRINCIPAL, views.PrincipalView.as_view()),
    path(f"{PRINCIPAL}/rotate", views.RotateCredentialsView.as_view()),
    path(f"{PRINCIPAL}/principal-roles", views.PrincipalRolesAssignedView.as_view()),
    path(f"{PRINCIPAL}/principal-roles/<str:role>", views.PrincipalRoleAssignmentView.as_view()),
    path("principal-roles", views.PrincipalRolesView.as_view()),
    path(PRINCIPAL_ROLE, views.PrincipalRoleView.as_view()),
    path(f"{PRINCIPAL_ROLE}/principals", views.PrincipalRolePrincipalsView.as_view()),
    path(f"{PRINCIPAL_ROLE}/catalog-roles/<str:catalog>", views.PrincipalRoleCatalogRolesView.as_view()),
    path(f"{PRINCIPAL_ROLE}/catalog-roles/<str:catalog>/<str:catalog_role>",
         views.PrincipalRoleCatalogRoleView.as_view()),
    path("catalogs/<str:catalog>/catalog-roles", views.CatalogRolesView.as_view()),
    path(CATALOG_ROLE, views.CatalogRoleView.as_view()),
    path(f"{CATALOG_ROLE}/principal-roles", views.CatalogRolePrincipalRolesView.as_view()),
    path(f"{CATALOG_ROLE}/grants", views.CatalogRoleGrantsView.as_view()),
]
