"""Principals and their credentials: bearer tokens and service-principal client secrets."""

import hashlib
import hmac
import secrets
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalog.choices import PrincipalKind
from catalog.models import Principal, Token
from catalog.services import audit
from catalog.services.names import validate_name
from ucweb.errors import InvalidParameter, Unauthenticated

TOKEN_PREFIX = "ucw_"
ANONYMOUS_PRINCIPAL = "anonymous"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _validate_principal_name(name: str) -> str:
    # Principals are user names or e-mail addresses: dots are fine, slashes and spaces are not.
    if not isinstance(name, str) or not name or len(name) > 255 or any(c in name for c in " /\t\n"):
        raise InvalidParameter(f"Invalid principal name {name!r}.")
    return name


@transaction.atomic
def ensure_principal(*, name: str, admin: bool = False, kind: str = PrincipalKind.USER) -> Principal:
    _validate_principal_name(name)
    principal, created = Principal.objects.get_or_create(
        name=name, defaults={"is_metastore_admin": admin, "kind": kind}
    )
    if admin and not principal.is_metastore_admin:
        principal.is_metastore_admin = True
        principal.save(update_fields=["is_metastore_admin"])
        forget_cached_tokens()
    if created:
        audit.record(principal=name, action="createPrincipal", securable_type="principal", securable_name=name)
    return principal


@transaction.atomic
def issue_token(*, principal: Principal, lifetime: timedelta | None = None, description: str = "") -> str:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    Token.objects.create(
        key_hash=_digest(token),
        principal=principal,
        expires_at=timezone.now() + lifetime if lifetime else None,
        description=description,
    )
    audit.record(principal=principal.name, action="issueToken", securable_type="principal", securable_name=principal.name)
    return token


# Tokens resolved in the last few seconds, by digest: every request authenticates, and clients
# such as the Delta connectors send many requests a second. A revoked token or a changed admin
# flag takes effect within UCWEB_TOKEN_CACHE_SECONDS.
_recent_tokens: dict[str, tuple[float, Principal, object]] = {}


def principal_for_token(token: str) -> Principal:
    digest = _digest(token)
    now = time.monotonic()
    cached = _recent_tokens.get(digest)
    if cached is not None and now - cached[0] < settings.UCWEB_TOKEN_CACHE_SECONDS:
        _, principal, expires_at = cached
    else:
        row = (
            Token.objects.select_related("principal")
            .filter(key_hash=digest)
            .only("expires_at", "principal__id", "principal__name", "principal__is_metastore_admin",
                  "principal__kind")
            .first()
        )
        if row is None:
            raise Unauthenticated("Invalid bearer token.")
        principal, expires_at = row.principal, row.expires_at
        if len(_recent_tokens) > 10_000:
            _recent_tokens.clear()
        _recent_tokens[digest] = (now, principal, expires_at)
    if expires_at is not None and expires_at <= timezone.now():
        raise Unauthenticated("Bearer token has expired.")
    return principal


def forget_cached_tokens() -> None:
    _recent_tokens.clear()


@transaction.atomic
def create_service_principal(*, name: str, admin: bool = False) -> tuple[Principal, str, str]:
    """Returns the principal, its client id and its client secret (shown once)."""
    principal = ensure_principal(name=name, admin=admin, kind=PrincipalKind.SERVICE_PRINCIPAL)
    client_id = principal.client_id or secrets.token_hex(16)
    client_secret = secrets.token_urlsafe(32)
    principal.kind = PrincipalKind.SERVICE_PRINCIPAL
    principal.client_id = client_id
    principal.client_secret_hash = _digest(client_secret)
    principal.save(update_fields=["kind", "client_id", "client_secret_hash"])
    audit.record(principal=name, action="rotateClientSecret", securable_type="principal", securable_name=name)
    return principal, client_id, client_secret


def principal_for_client_credentials(*, client_id: str, client_secret: str) -> Principal:
    principal = Principal.objects.filter(client_id=client_id).first() if client_id else None
    if principal is None or not hmac.compare_digest(principal.client_secret_hash, _digest(client_secret or "")):
        raise Unauthenticated("Invalid client credentials.")
    return principal


def anonymous_principal() -> Principal:
    principal, _ = Principal.objects.get_or_create(
        name=ANONYMOUS_PRINCIPAL, defaults={"is_metastore_admin": True}
    )
    return principal
