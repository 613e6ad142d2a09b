"""Bearer-token authentication for every API: ucweb's own tokens, and the JWTs of the configured
OpenID providers (catalog.services.oidc). `UCWEB_ALLOW_ANONYMOUS=1` lets requests without a
token act as the metastore admin `anonymous` (local playgrounds only). The console's login
backend, with passwords that UCWEB_LOCAL_PASSWORDS=0 switches off."""

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from catalog.models import Principal
from catalog.services import oidc, principals
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
            token = token.strip()
            if oidc.is_provider_token(token):
                return oidc.principal_for_token(token), token
            return principals.principal_for_token(token), token
        except Unauthenticated as exc:
            raise AuthenticationFailed(exc.message) from exc

    def authenticate_header(self, request):
        return 'Bearer realm="ucweb"'


class ConsoleLoginBackend(ModelBackend):
    """Django's user and password check, unless local passwords are off (then only a sign-in
    through an OpenID provider, catalog.admin.sign_in, logs a console user in)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not settings.UCWEB_LOCAL_PASSWORDS:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id):
        """The session's user, unless its principal was deactivated (SCIM): then the session ends
        at its next page, as the principal's tokens stop working at their next request."""
        user = super().get_user(user_id)
        if user is not None and Principal.objects.filter(name=user.get_username(), active=False).exists():
            return None
        return user


def console_sign_in(request) -> dict:
    """Template context of the console's login page: the providers to sign in with, and whether
    the password form is shown."""
    return {"sign_in_providers": [provider.name for provider in oidc.providers() if provider.client_id],
            "local_passwords": settings.UCWEB_LOCAL_PASSWORDS}


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
