"""The catalog's one credential vendor: short-lived access to one storage location, for every
protocol (Unity Catalog temporary credentials, Iceberg loadTable / `.../credentials` / remote
signing, the Delta REST API, Polaris generic tables).

Authorization happens before the call: whoever calls `vend(url, write=..., caller=...)` has
checked that the caller may read (and, with `write`, change) what lies at `url`. The vendor only
decides how that access is given, from the URL alone:

    file://  nothing to vend: the answer holds the URL and an expiration time;
    s3://    temporary keys from STS whose session policy is limited to the URL's prefix
             (catalog.storage.vending), obtained
             - in an external location: as its credential says (its role, keys and endpoint);
             - in managed storage: as the server is configured (UCWEB_STS_ROLE_ARN for
               AssumeRole, else GetFederationToken with the server's keys; UCWEB_STS_ENDPOINT_URL,
               else UCWEB_S3_ENDPOINT_URL; UCWEB_STS_EXTERNAL_ID);
             - anywhere else nothing can be vended (PermissionDenied).

The answer is the Unity Catalog `TemporaryCredentials` body:

    {"url": "s3://bucket/tables/t1", "expiration_time": 1767225600000,
     "aws_temp_credentials": {"access_key_id": ..., "secret_access_key": ..., "session_token": ...}}

and `s3_config(answer)` is the same keys as the `s3.*` FileIO properties of Iceberg and Delta
clients. Credentials live UCWEB_TEMPORARY_CREDENTIALS_SECONDS (at least 900 for STS).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from catalog.locations import containing_location, is_within, managed_roots
from catalog.services.credentials import secret_access_key
from catalog.storage import vending
from catalog.storage.errors import StorageError
from catalog.storage.urls import normalize, parse
from ucweb import metrics
from ucweb.errors import InvalidParameter, PermissionDenied, TemporarilyUnavailable


def lifetime_seconds() -> int:
    return settings.UCWEB_TEMPORARY_CREDENTIALS_SECONDS


def _server_sts() -> vending.StsSettings:
    return vending.StsSettings(
        endpoint_url=settings.UCWEB_STS_ENDPOINT_URL or settings.UCWEB_S3_ENDPOINT_URL,
        region=settings.UCWEB_S3_REGION,
        access_key_id=settings.AWS_ACCESS_KEY_ID,
        secret_access_key=settings.AWS_SECRET_ACCESS_KEY,
        session_token=settings.AWS_SESSION_TOKEN,
        role_arn=settings.UCWEB_STS_ROLE_ARN,
        external_id=settings.UCWEB_STS_EXTERNAL_ID,
    )


def _credential_sts(credential) -> vending.StsSettings:
    own_keys = bool(credential.aws_access_key_id)
    server = _server_sts()
    return vending.StsSettings(
        endpoint_url=credential.endpoint_url or server.endpoint_url,
        region=credential.region or server.region,
        access_key_id=credential.aws_access_key_id if own_keys else server.access_key_id,
        secret_access_key=secret_access_key(credential) if own_keys else server.secret_access_key,
        session_token=None if own_keys else server.session_token,
        role_arn=credential.aws_role_arn,
        external_id=credential.aws_external_id,
    )


def sts_for_url(canonical: str) -> vending.StsSettings:
    """As whom and where credentials for canonical s3:// `canonical` are obtained: the credential
    of the external location that contains it, or the server's own for managed storage.
    PermissionDenied anywhere else."""
    location = containing_location(canonical)
    if location is not None:
        return _credential_sts(location.credential)
    if any(is_within(canonical, root) for root in managed_roots()):
        return _server_sts()
    raise PermissionDenied(f"No external location or managed storage contains {canonical}; "
                           "no credential can be vended for it.")


def _require_own(url: str, securable) -> None:
    """Keys for a securable's storage are never keys for another's: a location that another live
    securable holds part of gets none (catalog.locations), whichever protocol asks."""
    if securable is not None:
        from catalog.locations import require_own_location  # the location rule sits above storage

        require_own_location(url, own_id=securable.id, what=f"{type(securable).__name__.lower()} {securable}")


def vend(url: str, *, write: bool, caller, securable=None) -> dict:
    """TemporaryCredentials for `url`, which the caller is already authorized to read (and, with
    `write`, to change); `securable` is the table or volume whose location `url` is."""
    _require_own(url, securable)
    try:
        canonical = normalize(url)
        scheme = parse(canonical).scheme
    except StorageError as exc:
        raise InvalidParameter(f"Cannot vend credentials for {url!r}: {exc}") from None
    expires = timezone.now() + timedelta(seconds=lifetime_seconds())
    answer = {"url": canonical}
    if scheme == "file":
        answer["expiration_time"] = int(expires.timestamp() * 1000)
        return answer
    if scheme != "s3":
        raise InvalidParameter(f"Cannot vend credentials for {scheme}:// storage; only file:// and s3://.")
    sts = sts_for_url(canonical)
    try:
        vended = vending.vend(sts, url=canonical, write=write, principal=caller.name,
                              duration_seconds=lifetime_seconds())
    except vending.VendingError as exc:
        raise TemporarilyUnavailable(f"The token service did not vend credentials for {canonical}: {exc}") from None
    answer["aws_temp_credentials"] = {
        "access_key_id": vended.access_key_id,
        "secret_access_key": vended.secret_access_key,
        "session_token": vended.session_token,
    }
    answer["expiration_time"] = int(vended.expiration.timestamp() * 1000)
    metrics.CREDENTIALS_VENDED.labels("write" if write else "read").inc()
    return answer


def s3_config(answer: dict) -> dict:
    """The keys of a `vend` answer as `s3.*` FileIO properties (empty when it holds none)."""
    keys = answer.get("aws_temp_credentials")
    if not keys:
        return {}
    return {
        "s3.access-key-id": keys["access_key_id"],
        "s3.secret-access-key": keys["secret_access_key"],
        "s3.session-token": keys["session_token"],
        "s3.session-token-expires-at-ms": str(answer["expiration_time"]),
    }


# -- keys that sign requests for a client (Iceberg remote signing) ------------------------------
@dataclass(frozen=True)
class SigningKeys:
    access_key_id: str
    secret_access_key: str
    session_token: str | None
    endpoint: str | None
    region: str


class _KeyCache:
    """Temporary keys for signing (when storage is reached through a role), per location and
    access, reused until five minutes before they expire."""

    def __init__(self):
        self._lock = threading.Lock()
        self._entries: dict = {}

    def get(self, key, make):
        now = time.time()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.expiration.timestamp() - 300 > now:
                return entry
        entry = make()
        with self._lock:
            self._entries[key] = entry
        return entry


_signing_keys = _KeyCache()


def signing_keys(canonical: str, *, write: bool, caller, securable=None) -> SigningKeys:
    """The keys that sign requests for canonical s3:// `canonical` on the caller's behalf (already
    authorized): static keys as configured, or, where storage is reached through a role,
    temporary keys limited to the location, as `vend` would give them."""
    _require_own(canonical, securable)
    sts = sts_for_url(canonical)
    external = containing_location(canonical)
    endpoint = (external.credential.endpoint_url if external is not None else None) or settings.UCWEB_S3_ENDPOINT_URL
    region = (external.credential.region if external is not None else None) or settings.UCWEB_S3_REGION
    if sts.role_arn:
        def make():
            return vending.vend(sts, url=canonical, write=write, principal=caller.name,
                                duration_seconds=lifetime_seconds())
        try:
            temporary = _signing_keys.get((canonical, write, sts, caller.name), make)
        except vending.VendingError as exc:
            raise TemporarilyUnavailable(f"The token service did not vend signing keys: {exc}") from None
        return SigningKeys(temporary.access_key_id, temporary.secret_access_key, temporary.session_token,
                           endpoint, region)
    if external is not None and external.credential.aws_access_key_id:
        return SigningKeys(external.credential.aws_access_key_id, secret_access_key(external.credential), None,
                           endpoint, region)
    if not sts.access_key_id or not sts.secret_access_key:
        raise TemporarilyUnavailable("The server has no S3 keys to sign with.")
    return SigningKeys(sts.access_key_id, sts.secret_access_key, sts.session_token, endpoint, region)
