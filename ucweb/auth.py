"""Bearer-token authentication for every API. `UCWEB_ALLOW_ANONYMOUS=1` lets requests without a
token act as the metastore admin `anonymous` (local playgrounds only)."""

from django.conf import settings
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from catalog.models import Principal
from catalog.services import principals
from ucweb.errors import Unauthenticated


class BearerTokenAuthentication(BaseAuthentication):
    keyword = "bearer"

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            if settings.UCWEB_ALLOW_ANONYMOUS:
                return principals.anonymous_principal(), None
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != self.keyword or not token.strip():
            raise AuthenticationFailed("Authorization header must be 'Bearer <token>'.")
        try:
            return principals.principal_for_token(token.strip()), token
        except Unauthenticated as exc:
            raise AuthenticationFailed(exc.message) from exc

    def authenticate_header(self, request):
        return 'Bearer realm="ucweb"'


class IsAuthenticatedPrincipal(BasePermission):
    message = "Authentication required: send 'Authorization: Bearer <token>'."

    def has_permission(self, request, view):
        return isinstance(request.user, Principal)


try:
    from drf_spectacular.extensions import OpenApiAuthenticationExtension

    class BearerTokenScheme(OpenApiAuthenticationExtension):
        target_class = "ucweb.auth.BearerTokenAuthentication"
        name = "bearerAuth"

        def get_security_definition(self, auto_schema):
            return {"type": "http", "scheme": "bearer"}

except ImportError:  # drf-spectacular is a dependency; this only keeps the module importable alone
    pass
