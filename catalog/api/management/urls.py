from catalog.api.management import views
from catalog.api.routes import routes

CATALOG = "catalogs/<str:catalog>"
PRINCIPAL = "principals/<str:principal>"
PRINCIPAL_ROLE = "principal-roles/<str:role>"
CATALOG_ROLE = f"{CATALOG}/catalog-roles/<str:catalog_role>"

urlpatterns = [
    *routes("", {
        "catalogs": views.CatalogsView,
        CATALOG: views.CatalogView,
        "principals": views.PrincipalsView,
        "principal-roles": views.PrincipalRolesView,
    }),
    *routes(PRINCIPAL, {
        "": views.PrincipalView,
        "rotate": views.RotateCredentialsView,
        "principal-roles": views.PrincipalRolesAssignedView,
        "principal-roles/<str:role>": views.PrincipalRoleAssignmentView,
    }),
    *routes(PRINCIPAL_ROLE, {
        "": views.PrincipalRoleView,
        "principals": views.PrincipalRolePrincipalsView,
        "catalog-roles/<str:catalog>": views.PrincipalRoleCatalogRolesView,
        "catalog-roles/<str:catalog>/<str:catalog_role>": views.PrincipalRoleCatalogRoleView,
    }),
    *routes(CATALOG, {"catalog-roles": views.CatalogRolesView}),
    *routes(CATALOG_ROLE, {
        "": views.CatalogRoleView,
        "principal-roles": views.CatalogRolePrincipalRolesView,
        "grants": views.CatalogRoleGrantsView,
    }),
]
