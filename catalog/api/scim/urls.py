from catalog.api.routes import routes
from catalog.api.scim import views

urlpatterns = routes("", {
    "Users": views.UsersView,
    "Users/<str:user_id>": views.UserView,
    "Me": views.MeView,
    "Groups": views.GroupsView,
    "Groups/<str:group_id>": views.GroupView,
    "ServiceProviderConfig": views.ServiceProviderConfigView,
    "ResourceTypes": views.ResourceTypesView,
    "Schemas": views.SchemasView,
})
