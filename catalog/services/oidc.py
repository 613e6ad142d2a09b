"""OpenID Connect providers of the organization (docs/security.md): their JWTs are accepted as
bearer tokens on every API and exchanged for ucweb tokens, their users sign in to the console.

A token is checked against the provider its `iss` names, with that provider's keys only
(discovery at `<issuer>/.well-known/openid-configuration`, its JWKS cached and fetched again
when a token names a key it does not hold): the signature, with an algorithm the provider
announces (never `none` nor an HMAC), the issuer, the audience, and `exp`/`nbf`/`iat` within
UCWEB_OIDC_LEEWAY_SECONDS. The principal is the one the configured claim names (created on first
use); a deactivated principal is refused. The groups claim is synced into ucweb's groups on every
token check that is not answered from the token cache (catalog.services.groups).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from catalog.choices import AuditAction
from catalog.models import Principal
from catalog.services import audit, groups, principals
from ucweb.errors import AlreadyExists, InvalidParameter, Unauthenticated

# Signature algorithms a provider's keys may be used with: public-key ones only, so a token signed
# with HMAC under a provider's public key (or not signed at all) never verifies.
ASYMMETRIC_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                                   "ES256", "ES384", "ES512", "EdDSA"})
JWKS_CACHE_SECONDS = 300
# A token naming an unknown `kid` makes the keys be fetched again, at most this often: tokens with
# made-up kids do not turn ucweb into a client hammering the provider.
JWKS_REFETCH_SECONDS = 10
HTTP_TIMEOUT_SECONDS = 5


@dataclass(frozen=True)
class Provider:
    name: str
    issuer: str
    audience: str
    username_claim: str
    groups_claim: str
    client_id: str
    client_secret: str
    staff_group: str
    scopes: str

    @property
    def source(self) -> str:
        """Who the provider's changes (principals created, groups synced) are audited as."""
        return f"oidc:{self.name}"

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"


def providers() -> list[Provider]:
    return [Provider(**fields) for fields in settings.UCWEB_OIDC_PROVIDERS]


def provider_named(name: str) -> Provider | None:
    return next((provider for provider in providers() if provider.name == name), None)


def is_provider_token(token: str) -> bool:
    """Whether `token` is for the providers to check: a JWT (three dot-separated parts), when a
    provider is configured. ucweb's own tokens never contain a dot."""
    return bool(settings.UCWEB_OIDC_PROVIDERS) and token.count(".") == 2


# -- discovery and keys ------------------------------------------------------------------------
class _Keys:
    """A provider's discovery document and its JWKS client (which caches the keys and fetches
    them again when a token names an unknown `kid`)."""

    def __init__(self, provider: Provider):
        with urllib.request.urlopen(provider.discovery_url, timeout=HTTP_TIMEOUT_SECONDS) as response:
            metadata = json.load(response)
        if not isinstance(metadata, dict) or not isinstance(metadata.get("jwks_uri"), str):
            raise ValueError("The discovery document names no jwks_uri.")
        if str(metadata.get("issuer", "")).rstrip("/") != provider.issuer:
            raise Unauthenticated(f"The discovery document of {provider.issuer} names another issuer.")
        announced = metadata.get("id_token_signing_alg_values_supported") or ["RS256"]
        self.algorithms = sorted(ASYMMETRIC_ALGORITHMS & set(announced))
        self.jwks = jwt.PyJWKClient(metadata["jwks_uri"], cache_keys=False, lifespan=JWKS_CACHE_SECONDS,
                                    timeout=HTTP_TIMEOUT_SECONDS)
        self.refetched_at = -JWKS_REFETCH_SECONDS

    def may_fetch_for(self, kid) -> bool:
        """Whether a token's `kid` is among the cached keys or the keys may be fetched again now."""
        if kid in {key.key_id for key in self.jwks.get_signing_keys()}:
            return True
        now = time.monotonic()
        if now - self.refetched_at < JWKS_REFETCH_SECONDS:
            return False
        self.refetched_at = now
        return True


_keys: dict[Provider, _Keys] = {}
_keys_lock = threading.Lock()


def _keys_of(provider: Provider) -> _Keys:
    with _keys_lock:
        if provider not in _keys:
            try:
                _keys[provider] = _Keys(provider)
            except (OSError, ValueError, KeyError) as exc:
                raise Unauthenticated(f"The OpenID provider {provider.issuer} cannot be reached.") from exc
        return _keys[provider]


def verified_claims(token: str, *, id_token_too: bool = False) -> tuple[Provider, dict]:
    """The provider that issued `token` and its claims, once everything is checked; raises
    Unauthenticated otherwise. The audience must be the provider's configured one (or, with
    `id_token_too`, its console client's: an ID token)."""
    try:
        issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise Unauthenticated("Invalid bearer token.") from exc
    provider = next((p for p in providers() if isinstance(issuer, str) and p.issuer == issuer.rstrip("/")), None)
    if provider is None:
        raise Unauthenticated("The token's issuer is not a configured OpenID provider.")
    keys = _keys_of(provider)
    audiences = [provider.audience, *([provider.client_id] if id_token_too and provider.client_id else [])]
    if header.get("alg") not in keys.algorithms or not isinstance(header.get("kid"), str):
        raise Unauthenticated(f"Tokens of {provider.issuer} name a key (kid) and are signed with "
                              f"{', '.join(keys.algorithms)}.")
    try:
        if not keys.may_fetch_for(header.get("kid")):
            raise Unauthenticated(f"Tokens of {provider.issuer} name no key {header.get('kid')!r}.")
        key = keys.jwks.get_signing_key_from_jwt(token)
        claims = jwt.decode(token, key.key, algorithms=keys.algorithms, issuer=issuer, audience=audiences,
                            leeway=settings.UCWEB_OIDC_LEEWAY_SECONDS, options={"require": ["exp", "iss", "aud"]})
    except (jwt.PyJWTError, jwt.PyJWKClientError) as exc:
        raise Unauthenticated(f"Invalid token of {provider.issuer}: {exc}") from exc
    return provider, claims


# -- principals ----------------------------------------------------------------------------------
def principal_for_claims(provider: Provider, claims: dict) -> Principal:
    """The principal the provider's claims name (created on first use), with its groups synced
    from the groups claim (when the token has one). A deactivated principal is refused."""
    name = claims.get(provider.username_claim)
    if not isinstance(name, str):
        raise Unauthenticated(f"The token has no {provider.username_claim} claim.")
    principal = Principal.objects.filter(name=name).first()
    if principal is None:
        try:
            principal = principals.ensure_principal(name=name, actor=provider.source)
        except (InvalidParameter, AlreadyExists) as exc:
            raise Unauthenticated(f"The token names no usable principal: {exc.message}") from exc
    if not principal.active:
        raise Unauthenticated("Invalid bearer token.")
    listed = claims.get(provider.groups_claim)
    if isinstance(listed, list):
        groups.sync_directory_memberships(principal=principal, source=provider.source, names=listed)
    return principal


def _expiry(claims: dict) -> datetime:
    return datetime.fromtimestamp(claims["exp"], tz=UTC) + timedelta(seconds=settings.UCWEB_OIDC_LEEWAY_SECONDS)


def _resolve(token: str) -> tuple[Principal, datetime]:
    provider, claims = verified_claims(token)
    return principal_for_claims(provider, claims), _expiry(claims)


def principal_for_token(token: str) -> Principal:
    """The principal of a provider's bearer token (checked at most every
    UCWEB_TOKEN_CACHE_SECONDS, as ucweb's own tokens are)."""
    return principals.cached_principal(token, _resolve)


@transaction.atomic
def console_user(provider: Provider, claims: dict):
    """The console user of a sign-in with `provider` (`claims`: its verified ID token): the
    Django user of the principal's name, created on first sign-in, staff when the provider has no
    staff group or the groups claim names it; None when it is not staff. A local account (one
    with a password) is never taken over, nor is a deactivated one reactivated."""
    principal = principal_for_claims(provider, claims)
    listed = claims.get(provider.groups_claim)
    staff = not provider.staff_group or (isinstance(listed, list) and provider.staff_group in listed)
    user, created = get_user_model().objects.get_or_create(username=principal.name)
    if created:
        user.set_unusable_password()
    elif user.has_usable_password():
        raise Unauthenticated(f"{principal.name} is a local account; it signs in with its password.")
    if not user.is_active:
        raise Unauthenticated(f"The console account {principal.name} is deactivated.")
    user.is_staff = staff
    user.save()
    return user if staff else None


@transaction.atomic
def exchange_token(subject_token: str) -> tuple[str, int]:
    """A ucweb token for a provider's token (RFC 8693 token exchange): an access token for the
    catalog, or an ID token issued to the console's client. It expires when the subject token
    does, or after UCWEB_OAUTH_TOKEN_SECONDS if that is sooner. Returns the token and its lifetime
    in seconds."""
    provider, claims = verified_claims(subject_token, id_token_too=True)
    principal = principal_for_claims(provider, claims)
    lifetime = int(min(settings.UCWEB_OAUTH_TOKEN_SECONDS, (_expiry(claims) - timezone.now()).total_seconds()))
    if lifetime <= 0:
        raise Unauthenticated("The subject token has expired.")
    token = principals.issue_token(principal=principal, lifetime=timedelta(seconds=lifetime),
                                   description=f"OAuth token exchange ({provider.name})", actor=principal.name)
    audit.record(principal=principal.name, action=AuditAction.EXCHANGE_TOKEN, securable_type="principal",
                 securable_name=principal.name, securable_id=principal.id,
                 details={"provider": provider.name, "issuer": provider.issuer, "expires_in": lifetime})
    return token, lifetime
