"""The console's single sign-on: "Sign in with <provider>" for each configured OpenID provider
that has a client id (authorization code flow with PKCE; Authlib checks the state, the nonce and
the ID token). The login acts as the principal the provider names (catalog.services.oidc)."""

from __future__ import annotations

import threading

from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.django_client import OAuth
from django.contrib.auth import login
from django.http import Http404
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from catalog.services import oidc
from ucweb.errors import Unauthenticated

_clients: dict[oidc.Provider, object] = {}
_clients_lock = threading.Lock()


def _client(name: str):
    provider = oidc.provider_named(name)
    if provider is None or not provider.client_id:
        raise Http404("No such identity provider.")
    with _clients_lock:
        if provider not in _clients:
            registry = OAuth()
            registry.register(name=provider.name, client_id=provider.client_id, client_secret=provider.client_secret,
                              server_metadata_url=provider.discovery_url,
                              client_kwargs={"scope": provider.scopes, "code_challenge_method": "S256"})
            _clients[provider] = registry.create_client(provider.name)
        return provider, _clients[provider]


def sign_in(request, name: str):
    _, client = _client(name)
    next_url = request.GET.get("next", "")
    if url_has_allowed_host_and_scheme(next_url, allowed_hosts={request.get_host()}):
        request.session["sign_in_next"] = next_url
    return client.authorize_redirect(request, request.build_absolute_uri(reverse("console-sign-in-callback",
                                                                                 args=[name])))


def _refused(request, message: str, status: int):
    return TemplateResponse(request, "admin/login.html", {
        "sign_in_error": message, "title": "Log in", "site_header": "ucweb governance console",
        "site_title": "ucweb governance console"}, status=status)


def callback(request, name: str):
    provider, client = _client(name)
    try:
        token = client.authorize_access_token(request)
        user = oidc.console_user(provider, token["userinfo"])
    except OAuthError as exc:
        return _refused(request, f"Sign-in with {provider.name} failed: {exc.description or exc.error}", 401)
    except Unauthenticated as exc:
        return _refused(request, f"Sign-in with {provider.name} failed: {exc.message}", 401)
    if user is None:
        return _refused(request, f"Your account is not in the console's group ({provider.staff_group}).", 403)
    login(request, user, backend="ucweb.auth.ConsoleLoginBackend")
    return redirect(request.session.pop("sign_in_next", "") or reverse("admin:index"))
