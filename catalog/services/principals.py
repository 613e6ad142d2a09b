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
from catalog.models import Group, Principal, Token
from catalog.services import audit
from ucweb.errors import AlreadyExists, InvalidParameter, PermissionDenied, PrincipalDoesNotExist, Unauthenticated

TOKEN_PREFIX = "ucw_"
ANONYMOUS_PRINCIPAL = "anonymous"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def validate_principal_name(name: str, *, what: str = "principal") -> str:
    """Principals (and groups) are user names or e-mail addresses: dots are fine, slashes, spaces
    and control characters are not."""
    if not isinstance(name, str) or not name or len(name) > 255 or any(
            c in name for c in " /") or not name.isprintable():
        raise InvalidParameter(f"Invalid {what} name {name!r}.")
    return name


def _audit_principal(*, actor: str | None, action: str, name: str, principal_id=None, details=None) -> None:
    """Changes to a principal are audited as whoever made them: the operator who ran a command
    (`actor`), a console user, or the principal itself (for example its OAuth token request)."""
    audit.record(principal=actor or name, action=action, securable_type="principal", securable_name=name,
                 securable_id=principal_id, details=details)


@transaction.atomic
def ensure_principal(*, name: str, admin: bool = False, kind: str = PrincipalKind.USER,
                     actor: str | None = None) -> Principal:
    validate_principal_name(name)
    if not Principal.objects.filter(name=name).exists() and Group.objects.filter(name=name).exists():
        raise AlreadyExists(f"{name} is the name of a group; a principal needs a name of its own.")
    principal, created = Principal.objects.get_or_create(
        name=name, defaults={"is_metastore_admin": admin, "kind": kind}
    )
    if created:
        _audit_principal(actor=actor, action="createPrincipal", name=name, principal_id=principal.id,
                         details={"metastore_admin": admin, "kind": kind})
    elif admin and not principal.is_metastore_admin:
        principal.is_metastore_admin = True
        principal.save(update_fields=["is_metastore_admin"])
        forget_cached_tokens()
        _audit_principal(actor=actor, action="setMetastoreAdmin", name=name, principal_id=principal.id,
                         details={"metastore_admin": True})
    return principal


@transaction.atomic
def issue_token(*, principal: Principal, lifetime: timedelta | None = None, description: str = "",
                actor: str | None = None) -> str:
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    Token.objects.create(
        key_hash=_digest(token),
        principal=principal,
        expires_at=timezone.now() + lifetime if lifetime else None,
        description=description,
    )
    _audit_principal(actor=actor, action="issueToken", name=principal.name, principal_id=principal.id,
                     details={"description": description} if description else None)
    return token


def may_set_metastore_admin(caller: Principal) -> bool:
    """Whether the caller may make principals metastore admins, or take the flag away."""
    return caller.is_metastore_admin


@transaction.atomic
def set_metastore_admin(*, caller: Principal, name: str, admin: bool) -> Principal:
    """Make a principal a metastore admin, or take the flag away. Only a metastore admin may, and
    the last metastore admin stays one (someone must be able to govern)."""
    if not isinstance(admin, bool):
        raise InvalidParameter("admin must be true or false.")
    if not may_set_metastore_admin(caller):
        raise PermissionDenied("Only a metastore admin may change who is a metastore admin.")
    principal = Principal.objects.select_for_update().filter(name=name).first()
    if principal is None:
        raise PrincipalDoesNotExist(f"Principal {name} does not exist.")
    if principal.is_metastore_admin == admin:
        return principal
    if not admin and not Principal.objects.filter(is_metastore_admin=True).exclude(id=principal.id).exists():
        raise InvalidParameter(f"{name} is the last metastore admin; make another principal an admin first.")
    principal.is_metastore_admin = admin
    principal.save(update_fields=["is_metastore_admin"])
    forget_cached_tokens()
    _audit_principal(actor=caller.name, action="setMetastoreAdmin", name=name, principal_id=principal.id,
                     details={"metastore_admin": admin})
    return principal


# Tokens resolved in the last few seconds, by digest: every request authenticates, and clients
# such as the Delta connectors send many requests a second. A revoked token, a deactivated
# principal or a changed admin flag takes effect within UCWEB_TOKEN_CACHE_SECONDS.
_recent_tokens: dict[str, tuple[float, Principal, object]] = {}


def cached_principal(token: str, resolve) -> Principal:
    """The principal of `token`, from the cache or from `resolve(token)`, which answers (principal,
    expiry or None) or raises Unauthenticated: ucweb's own tokens and OpenID providers' alike."""
    digest = _digest(token)
    now = time.monotonic()
    cached = _recent_tokens.get(digest)
    if cached is not None and now - cached[0] < settings.UCWEB_TOKEN_CACHE_SECONDS:
        _, principal, expires_at = cached
    else:
        principal, expires_at = resolve(token)
        if len(_recent_tokens) > 10_000:
            _recent_tokens.clear()
        _recent_tokens[digest] = (now, principal, expires_at)
    if expires_at is not None and expires_at <= timezone.now():
        raise Unauthenticated("Bearer token has expired.")
    return principal


def _stored_token(token: str) -> tuple[Principal, object]:
    row = (
        Token.objects.select_related("principal")
        .filter(key_hash=_digest(token))
        .only("expires_at", "principal__id", "principal__name", "principal__is_metastore_admin",
              "principal__kind", "principal__active")
        .first()
    )
    if row is None or not row.principal.active:  # a deactivated principal's tokens stop working
        raise Unauthenticated("Invalid bearer token.")
    return row.principal, row.expires_at


def principal_for_token(token: str) -> Principal:
    return cached_principal(token, _stored_token)


def forget_cached_tokens() -> None:
    _recent_tokens.clear()


@transaction.atomic
def create_service_principal(*, name: str, admin: bool = False, rotate: bool = False,
                             actor: str | None = None) -> tuple[Principal, str, str]:
    """Returns the principal, its client id and its client secret (shown once). A principal that
    already has a client secret keeps it unless `rotate` is given: replacing it breaks every
    client configured with the old one."""
    validate_principal_name(name)
    existing = Principal.objects.select_for_update().filter(name=name).first()
    if existing is not None and existing.client_secret_hash and not rotate:
        raise InvalidParameter(
            f"Principal {name} already has a client secret; pass --rotate to replace it "
            "(clients using the old secret stop working)."
        )
    principal = ensure_principal(name=name, admin=admin, kind=PrincipalKind.SERVICE_PRINCIPAL, actor=actor)
    client_id = principal.client_id or secrets.token_hex(16)
    # Hex, not URL-safe base64: a secret that begins with "-" is taken for an option by the CLIs
    # it is passed to (`polaris --client-secret -x...` fails), and one with "_" or "-" anywhere
    # trips some shells' word splitting in copied commands.
    client_secret = secrets.token_hex(32)
    principal.kind = PrincipalKind.SERVICE_PRINCIPAL
    principal.client_id = client_id
    principal.client_secret_hash = _digest(client_secret)
    principal.save(update_fields=["kind", "client_id", "client_secret_hash"])
    _audit_principal(actor=actor, action="rotateClientSecret" if existing is not None and existing.client_secret_hash
                     else "createClientSecret", name=name, principal_id=principal.id)
    return principal, client_id, client_secret


def principal_for_client_credentials(*, client_id: str, client_secret: str) -> Principal:
    principal = Principal.objects.filter(client_id=client_id).first() if client_id else None
    if principal is None or not hmac.compare_digest(principal.client_secret_hash, _digest(client_secret or "")) \
            or not principal.active:
        raise Unauthenticated("Invalid client credentials.")
    return principal


def anonymous_principal() -> Principal:
    principal, _ = Principal.objects.get_or_create(
        name=ANONYMOUS_PRINCIPAL, defaults={"is_metastore_admin": True}
    )
    return principal


@transaction.atomic
def revoke_token(*, caller: Principal, token_id: int) -> None:
    """A metastore admin revokes someone's token (anyone may revoke their own)."""
    token = Token.objects.select_related("principal").select_for_update().filter(id=token_id).first()
    if token is None:
        raise InvalidParameter(f"There is no token {token_id}.")
    if not caller.is_metastore_admin and token.principal_id != caller.id:
        raise PermissionDenied("Only a metastore admin may revoke another principal's token.")
    name = token.principal.name
    token.delete()
    forget_cached_tokens()
    _audit_principal(actor=caller.name, action="revokeToken", name=name, principal_id=token.principal_id,
                     details={"description": token.description, "created_at": token.created_at.isoformat()})


@transaction.atomic
def delete_principal(*, caller: Principal, principal: Principal, details: dict | None = None) -> None:
    """Deletes `principal` (the caller has checked that it may) with its tokens, group memberships
    and direct grants, in one transaction; the audit event lists the grants revoked. What it owns
    keeps its name as owner."""
    from catalog.models import Grant, GroupClosure

    revoked = list(Grant.objects.filter(principal=principal.name).values_list("securable_name", "privilege"))
    Grant.objects.filter(principal=principal.name).delete()
    GroupClosure.objects.filter(principal=principal.name).delete()
    name, principal_id = principal.name, principal.id
    principal.delete()  # its tokens and group memberships go with it (foreign keys)
    transaction.on_commit(forget_cached_tokens)
    audit.record(principal=caller.name, action="deletePrincipal", securable_type="principal", securable_name=name,
                 securable_id=principal_id, details={
                     **(details or {}), "revoked": [f"{privilege} on {securable}" for securable, privilege in revoked]})
