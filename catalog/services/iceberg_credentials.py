"""Access delegation for the Iceberg REST API: engines that hold no storage keys of their own.

A client says what it can use in the `X-Iceberg-Access-Delegation` header (a comma-separated
list); the server answers with what it can give:

- `vended-credentials`: createTable, loadTable, registerTable and stage-create answer temporary
  S3 keys in `config` and in `storage-credentials` (prefix: the table location). They come from
  the one vendor of the catalog (catalog.services.vendor: STS with a session policy limited
  to the table's prefix), read-write when the caller holds MODIFY on the
  table (or owns it, or is creating it), read-only with SELECT alone. `config` also names the
  refresh endpoint (`client.refresh-credentials-endpoint`, `GET .../credentials`) so that long
  jobs renew the keys before `s3.session-token-expires-at-ms`.
- `remote-signing`: `config` turns the client's S3 signer on (`s3.remote-signing-enabled`, and
  `s3.signer` for pyiceberg) and points it at `POST .../tables/{table}/sign`, which signs a
  request only for objects under the table's location and only as the caller's grants allow
  (catalog.storage.signing): reads with SELECT or MODIFY, writes with MODIFY.

Tables on file:// storage need neither: nothing is added. When the token service cannot vend
(an S3 server without STS), loadTable, its siblings and `GET .../credentials` answer without keys,
as they would to a client that asked for nothing, and log a warning.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from urllib.parse import quote

from django.core import signing as signing_tokens

from catalog import authz, resolve
from catalog.authz import Action
from catalog.choices import AuditAction, SecurableType
from catalog.models import Principal, Table
from catalog.services import audit, iceberg
from catalog.services import vendor as credentials
from catalog.storage import StorageError, normalize, parse, signing
from ucweb import metrics
from ucweb.errors import InvalidParameter, PermissionDenied, TemporarilyUnavailable

logger = logging.getLogger(__name__)

VENDED_CREDENTIALS = "vended-credentials"
REMOTE_SIGNING = "remote-signing"


@dataclass(frozen=True)
class Delegation:
    """What the client asked for, and the catalog's base URI as the client reached it
    (`.../api/catalog`, or another root of ucweb.mounts), which relative endpoints in `config` are
    resolved against."""

    vended_credentials: bool = False
    remote_signing: bool = False
    base_uri: str = ""

    @classmethod
    def parse(cls, header: str | None, *, base_uri: str) -> Delegation:
        modes = {mode.strip().lower() for mode in (header or "").split(",")}
        return cls(VENDED_CREDENTIALS in modes, REMOTE_SIGNING in modes, base_uri.rstrip("/"))

    @property
    def requested(self) -> bool:
        return self.vended_credentials or self.remote_signing


def _table_path(prefix: str, namespace: str, name: str) -> str:
    return (f"v1/{quote(prefix, safe='')}/namespaces/{quote(namespace, safe='')}"
            f"/tables/{quote(name, safe='')}")


def _is_s3(location: str | None) -> bool:
    try:
        return bool(location) and parse(location).scheme == "s3"
    except StorageError:
        return False


def _vend(caller: Principal, table_name: str, table, location: str, *, write: bool) -> dict:
    """`table` is None for a staged create: its location was placed by the create itself."""
    answer = credentials.vend(location, write=write, caller=caller, securable=table)
    table_id = table.id if table is not None else None
    config = credentials.s3_config(answer)
    if config:
        audit.record(principal=caller.name, action="vendIcebergCredentials", securable_type=SecurableType.TABLE,
                     securable_name=table_name, securable_id=table_id,
                     details={"url": answer["url"], "write": write})
    return config


def _delegate(loaded: iceberg.Loaded, *, caller: Principal, delegation: Delegation, prefix: str, namespace: str,
              name: str, location: str | None, write: bool) -> iceberg.Loaded:
    """`loaded` with the delegated access the client asked for and the server can give."""
    if not delegation.requested or not _is_s3(location):
        return loaded
    config = dict(loaded.config)
    storage_credentials = None
    path = _table_path(prefix, namespace, name)
    table = loaded.table
    full_name = table.full_name if table is not None else f"{prefix}.{namespace}.{name}"
    if delegation.vended_credentials:
        try:
            vended = _vend(caller, full_name, table, location, write=write)
        except (TemporarilyUnavailable, PermissionDenied, InvalidParameter) as exc:
            logger.warning("No credentials vended for Iceberg table %s: %s", full_name, exc)
            vended = {}
        if vended:
            vended["client.refresh-credentials-endpoint"] = f"{path}/credentials"
            vended["client.refresh-credentials-enabled"] = "true"
            config.update(vended)
            storage_credentials = [{"prefix": normalize(location), "config": {**loaded.config, **vended}}]
    if delegation.remote_signing:
        endpoint = f"{path}/sign"
        if table is None:
            # A staged table has no row until its create commits: the signer endpoint carries the
            # staged location, signed by the server, for this caller only.
            endpoint += "/" + _staged_token(caller, location)
        config.update({
            "s3.remote-signing-enabled": "true",
            "s3.signer": "S3V4RestSigner",
            "s3.signer.uri": delegation.base_uri,
            "s3.signer.endpoint": endpoint,
        })
    return replace(loaded, config=config, storage_credentials=storage_credentials)


_STAGED_SALT = "ucweb.iceberg.staged-signing"


def _staged_token(caller: Principal, location: str) -> str:
    return signing_tokens.dumps({"p": caller.name, "l": normalize(location)}, salt=_STAGED_SALT, compress=True)


def _staged_location(caller: Principal, token: str) -> str:
    """The staged location a signer token names, if the token is this server's, for this caller,
    and younger than the credential lifetime."""
    try:
        data = signing_tokens.loads(token, salt=_STAGED_SALT, max_age=credentials.lifetime_seconds())
    except signing_tokens.BadSignature:
        raise PermissionDenied("The staged-table signer token is invalid or expired.") from None
    if not isinstance(data, dict) or data.get("p") != caller.name or not isinstance(data.get("l"), str):
        raise PermissionDenied("The staged-table signer token was issued to another principal.")
    return data["l"]


def _can_write(caller: Principal, loaded: iceberg.Loaded) -> bool:
    return authz.allows(caller, loaded.table, Action.WRITE, access=loaded.access)


# -- the endpoints ------------------------------------------------------------------------------
def load_table(*, caller: Principal, prefix: str, namespace: str, name: str, delegation: Delegation,
               view: bool = False) -> iceberg.Loaded:
    loaded = iceberg.load_table(caller=caller, prefix=prefix, namespace=namespace, name=name, view=view)
    if view or not delegation.requested or not _is_s3(loaded.table.storage_location):
        return loaded
    return _delegate(loaded, caller=caller, delegation=delegation, prefix=prefix, namespace=namespace, name=name,
                     location=loaded.table.storage_location, write=_can_write(caller, loaded))


def delegate_new_table(loaded: iceberg.Loaded, *, caller: Principal, delegation: Delegation, prefix: str,
                       namespace: str, name: str) -> iceberg.Loaded:
    """createTable, stage-create and registerTable: the creator will own the table, so its keys may write."""
    if loaded.table is not None:
        location = loaded.table.storage_location
    else:
        location = json.loads(loaded.metadata_json).get("location")
    return _delegate(loaded, caller=caller, delegation=delegation, prefix=prefix, namespace=namespace,
                     name=name, location=location, write=True)


def load_credentials(*, caller: Principal, prefix: str, namespace: str, name: str) -> dict:
    """`GET .../credentials`: the table's storage settings and, on S3, freshly vended keys."""
    loaded = iceberg.load_table(caller=caller, prefix=prefix, namespace=namespace, name=name)
    answer = iceberg.credentials(loaded)
    table, location = loaded.table, loaded.table.storage_location
    if not _is_s3(location):
        return answer
    try:
        vended = _vend(caller, table.full_name, table, location, write=_can_write(caller, loaded))
    except TemporarilyUnavailable as exc:
        # An S3 server without STS: the settings without keys, as before vending existed (such a
        # server still serves remote signing).
        logger.warning("No credentials vended for Iceberg table %s: %s", table.full_name, exc)
        return answer
    except PermissionDenied:
        return answer  # stored outside managed storage and every external location: nothing to vend
    for entry in answer["storage-credentials"]:
        entry["config"] = {**entry["config"], **vended}
    return answer


def scan_credentials(loaded: iceberg.Loaded, *, caller: Principal, delegation: Delegation, url: str) -> list | None:
    """A scan plan's `storage-credentials`: read-only keys for `url` (the folder of the table that
    holds the plan's files), when the client asked for vended credentials and the table is on S3;
    None otherwise, or when the token service cannot vend (the loadTable keys still serve)."""
    table = loaded.table
    if not delegation.vended_credentials or not _is_s3(table.storage_location):
        return None
    try:
        vended = _vend(caller, table.full_name, table, url, write=False)
    except (TemporarilyUnavailable, PermissionDenied, InvalidParameter) as exc:
        logger.warning("No credentials vended for the scan of Iceberg table %s: %s", table.full_name, exc)
        return None
    return [{"prefix": normalize(url), "config": {**loaded.config, **vended}}] if vended else None


# -- remote signing -------------------------------------------------------------------------------
def _headers(value) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidParameter("headers must be an object of header names to arrays of strings.")
    headers = {}
    for header, values in value.items():
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InvalidParameter("headers must be an object of header names to arrays of strings.")
        if not header or any(ord(c) <= 32 or ord(c) >= 127 or c == ":" for c in header) \
                or any(not v.isascii() or c in v for v in values for c in "\r\n\x00"):
            raise InvalidParameter("Header names and values must be printable ASCII text on one line.")
        headers[header] = ",".join(values)
    return headers


def _staged_target(caller: Principal, prefix: str, namespace: str, name: str, token: str) -> tuple[str, str]:
    """(full name, location) of a table the caller is creating (stage-create), from the token of
    its signer endpoint. The caller must still hold CREATE TABLE on the namespace, and once the
    table exists it must be the staged one."""
    location = _staged_location(caller, token)
    schema, access = resolve.namespace(caller, iceberg.warehouse(prefix, caller), namespace)
    authz.require(caller, schema, Action.CREATE_TABLE, access=access)
    existing = Table.objects.filter(schema=schema, name=name).only("storage_location").first()
    if existing is not None and normalize(existing.storage_location or "") != location:
        raise PermissionDenied(f"Table {schema.full_name}.{name} exists at another location.")
    return f"{schema.full_name}.{name}", location


def sign_request(*, caller: Principal, prefix: str, namespace: str, name: str, body: dict,
                 staged: str | None = None) -> dict:
    """`POST .../sign` (RemoteSignRequest -> RemoteSignResult); `staged` is the token of a staged
    table's signer endpoint."""
    if staged is not None:
        full_name, location = _staged_target(caller, prefix, namespace, name, staged)
        table, write = None, True
    else:
        loaded = iceberg.load_table(caller=caller, prefix=prefix, namespace=namespace, name=name)
        table = loaded.table
        full_name, location = table.full_name, table.storage_location
        write = None
    method, uri, payload = body.get("method"), body.get("uri"), body.get("body")
    if not isinstance(method, str) or not isinstance(uri, str) or not uri:
        raise InvalidParameter("method and uri are required strings.")
    if payload is not None and not isinstance(payload, str):
        raise InvalidParameter("body must be a string.")
    provider = body.get("provider", "s3")
    if provider not in ("s3", None):
        raise InvalidParameter("Only s3 requests are signed.")
    headers = _headers(body.get("headers"))
    if not _is_s3(location):
        raise InvalidParameter(f"Table {full_name} is not stored on S3: there is nothing to sign.")
    canonical = parse(normalize(location))
    if write is None:
        write = _can_write(caller, loaded)
    keys = credentials.signing_keys(canonical.url, write=write, caller=caller,
                                    securable=None if staged is not None else table)
    target = signing.Target(bucket=canonical.bucket, prefix=canonical.key.rstrip("/"), endpoint=keys.endpoint,
                            region=keys.region)
    try:
        checked = signing.check(method=method, url=uri, headers=headers, body=payload, target=target)
    except signing.Refused as exc:
        raise PermissionDenied(f"Not signed for table {full_name}: {exc}").about(table) from None
    if checked.access == signing.WRITE and not write:
        raise PermissionDenied(
            f"Missing MODIFY on {full_name}: {method.upper()} requests are not signed.").about(table)
    signed = signing.sign(method=method, url=uri, checked=checked, region=keys.region,
                          access_key_id=keys.access_key_id, secret_access_key=keys.secret_access_key,
                          session_token=keys.session_token)
    metrics.REQUESTS_SIGNED.labels(checked.access).inc()
    audit.record(principal=caller.name, action=AuditAction.SIGN_ICEBERG_REQUEST, securable_type=SecurableType.TABLE,
                 securable_name=full_name, securable_id=table.id if table is not None else None,
                 details={"method": method.upper(), "uri": uri, "staged": staged is not None})
    return {"uri": uri, "headers": signed}
