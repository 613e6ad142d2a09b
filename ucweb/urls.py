from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from catalog.admin import sign_in
from catalog.api.uc.urls import workspace_settings_urlpatterns
from ucweb.mounts import ICEBERG_ROOTS
from ucweb.scrape import metrics_view
from ucweb.views import console_home, health, landing, ready

# The Iceberg REST catalog, and the Polaris-native API beside it, at every root of ucweb.mounts.
iceberg_mounts = [
    mount
    for root in (root.removeprefix("/") for root in ICEBERG_ROOTS)
    for mount in (path(f"{root}polaris/", include("catalog.api.polaris.urls")),
                  path(root, include("catalog.api.iceberg.urls")))
]

urlpatterns = [
    # APPEND_SLASH is off (the APIs' routes end without one), so the console's address as people
    # type it is sent where it lives instead of to a 404.
    path("admin", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.admin_view(console_home)),
    path("admin/sign-in/<str:name>/", sign_in.sign_in, name="console-sign-in"),
    path("admin/sign-in/<str:name>/callback", sign_in.callback, name="console-sign-in-callback"),
    path("admin/", admin.site.urls),
    path("api/2.1/unity-catalog/delta/v1/", include("catalog.api.delta.urls")),
    *iceberg_mounts,
    path("api/2.1/unity-catalog/", include("catalog.api.uc.urls")),
    path("api/management/v1/", include("catalog.api.management.urls")),
    path("api/2.0/settings/", include(workspace_settings_urlpatterns)),
    # SCIM 2.0 provisioning, where Unity Catalog OSS serves it (catalog.api.scim).
    path("api/1.0/unity-control/scim2/", include("catalog.api.scim.urls")),
    path("api/schema/", SpectacularAPIView.as_view(permission_classes=[], authentication_classes=[]), name="schema"),
    path(
        "api/docs/",
        SpectacularSwaggerView.as_view(url_name="schema", permission_classes=[], authentication_classes=[]),
        name="docs",
    ),
    path("healthz", health),
    path("readyz", ready),
    path("metrics", metrics_view),
    path("", landing, name="landing"),
]

handler404 = "ucweb.errors.not_found"
