from django.urls import path

from catalog.api.scim import views

urlpatterns = [
    path("Users", views.UsersView.as_view()),
    path("Users/<str:user_id>", views.UserView.as_view()),
    path("Me", views.MeView.as_view()),
    path("Groups", views.GroupsView.as_view()),
    path("Groups/<str:group_id>", views.GroupView.as_view()),
    path("ServiceProviderConfig", views.ServiceProviderConfigView.as_view()),
    path("ResourceTypes", views.ResourceTypesView.as_view()),
    path("Schemas", views.SchemasView.as_view()),
]
