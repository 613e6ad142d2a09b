"""S3 backend (``s3://`` URLs, ``s3a://`` accepted), for AWS S3 and S3-compatible servers.

Configuration is read from Django settings when an operation runs (ucweb/settings.py reads these
from the environment):

``UCWEB_S3_ENDPOINT_URL``
    Endpoint of an S3-compatible server (e.g. ``http://127.0.0.1:8333``). When set, path-style
    addressing is used. Unset means AWS S3.
``UCWEB_S3_REGION``
    Region name, default ``us-east-1``.
``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``
    Static credentials. When unset, boto3's default credential chain applies.
``UCWEB_S3_CONDITIONAL_WRITES``
    Default ``true``: ``put_if_absent`` uses ``PutObject`` with ``If-None-Match: *``. Set it to
    ``false`` only for a server without conditional writes *and* a single writer per table:
    ``put_if_absent`` then checks with ``HeadObject`` and writes with a plain ``PutObject``,
    which is not atomic (two racing writers can both "win", the last one's bytes stay).

If the server answers a conditional write with 501 NotImplemented, ``put_if_absent`` raises
``ConditionalWriteNotSupported`` rather than silently losing atomicity. A server that ignores
``If-None-Match`` altogether cannot be detected per request; such servers must not be used
with conditional writes enabled.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from .base import ObjectInfo, Storage
from .errors import (
    ConditionalWriteNotSupported,
    InvalidStorageUrl,
    StorageError,
    StorageObjectNotFound,
    StoragePermissionDenied,
)
from .urls import Location

DEFAULT_REGION = "us-east-1"

_NOT_FOUND_CODES = {"NoSuchKey", "NotFound", "404"}
_DENIED_CODES = {
    "AccessDenied",
    "403",
    "Forbidden",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AllAccessDisabled",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
}
_PRECONDITION_FAILED = {"PreconditionFailed", "412"}
_CONDITIONAL_CONFLICT = {"ConditionalRequestConflict", "409"}
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

# Backoff (seconds) between retries of a conditional write answered with 409
# ConditionalRequestConflict, which means another conditional write to the same key is in
# flight. Retrying turns the answer into a definite 412 (the other writer won) or a success
# (the other writer failed).
_CONFLICT_BACKOFF = (0.05, 0.1, 0.2, 0.4, 0.8)


@dataclass(frozen=True)
class S3Config:
    endpoint_url: str | None = None
    region: str = DEFAULT_REGION
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    conditional_writes: bool = True

    @classmethod
    def from_settings(cls) -> S3Config:
        from django.conf import settings

        return cls(
            endpoint_url=settings.UCWEB_S3_ENDPOINT_URL or None,
            region=settings.UCWEB_S3_REGION or DEFAULT_REGION,
            access_key_id=settings.AWS_ACCESS_KEY_ID or None,
            secret_access_key=settings.AWS_SECRET_ACCESS_KEY or None,
            session_token=settings.AWS_SESSION_TOKEN or None,
            conditional_writes=settings.UCWEB_S3_CONDITIONAL_WRITES,
        )

    def __repr__(self) -> str:  # keep secrets out of logs and tracebacks
        return (
            f"S3Config(endpoint_url={self.endpoint_url!r}, region={self.region!r}, "
            f"access_key_id={self.access_key_id!r}, conditional_writes={self.conditional_writes})"
        )


_clients: dict[tuple, Any] = {}
_clients_lock = threading.Lock()


def s3_client(config: S3Config) -> Any:
    """The boto3 S3 client for ``config``, created once and shared (clients are thread-safe)."""
    key = (
        config.endpoint_url,
        config.region,
        config.access_key_id,
        config.secret_access_key,
        config.session_token,
    )
    client = _clients.get(key)
    if client is None:
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = _make_client(config)
                _clients[key] = client
    return client


def _make_client(config: S3Config) -> Any:
    import boto3
    from botocore.config import Config

    if bool(config.access_key_id) != bool(config.secret_access_key):
        raise StorageError(
            "S3 credentials are incomplete: set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    options: dict[str, Any] = {
        "retries": {"mode": "standard", "max_attempts": 4},
        "connect_timeout": 10,
        "read_timeout": 60,
        "max_pool_connections": 32,
    }
    if config.endpoint_url:
        options["s3"] = {"addressing_style": "path"}
    try:
        # Only send checksums where the API requires them: many S3-compatible servers reject
        # the newer default of streaming checksums on every upload.
        client_config = Config(
            **options,
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
    except TypeError:  # botocore older than 1.36 has neither option (nor that default)
        client_config = Config(**options)
    # One session per client: sessions are not thread-safe, clients are.
    session = boto3.session.Session()
    try:
        return session.client(
            "s3",
            endpoint_url=config.endpoint_url or None,
            region_name=config.region,
            aws_access_key_id=config.access_key_id,
            aws_secret_access_key=config.secret_access_key,
            aws_session_token=config.session_token,
            config=client_config,
        )
    except Exception as exc:  # invalid endpoint URL, unknown region format, ...
        raise StorageError(f"cannot create S3 client for {config!r}: {exc}") from exc


def _error_code(exc: Any) -> tuple[str, int | None, str]:
    response = getattr(exc, "response", None) or {}
    error = response.get("Error") or {}
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return str(error.get("Code") or status or ""), status, str(error.get("Message") or "")


def _wrap_error(exc: Exception, action: str, url: str, location: Location) -> StorageError:
    from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

    if isinstance(exc, ClientError):
        code, status, message = _error_code(exc)
        detail = f"{code} (HTTP {status})" + (f": {message}" if message else "")
        if code == "NoSuchBucket":
            cls = StorageObjectNotFound if action == "read" else StorageError
            return cls(
                f"cannot {action} {url}: bucket {location.bucket!r} does not exist", url=url
            )
        if code in _NOT_FOUND_CODES or status == 404:
            return StorageObjectNotFound(f"object not found: {url}", url=url)
        if code in _DENIED_CODES or status == 403:
            return StoragePermissionDenied(f"cannot {action} {url}: {detail}", url=url)
        return StorageError(f"cannot {action} {url}: {detail}", url=url)
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return StoragePermissionDenied(
            f"cannot {action} {url}: no S3 credentials (set AWS_ACCESS_KEY_ID and "
            f"AWS_SECRET_ACCESS_KEY)",
            url=url,
        )
    return StorageError(f"cannot {action} {url}: {type(exc).__name__}: {exc}", url=url)


@contextmanager
def _s3_errors(action: str, url: str, location: Location) -> Iterator[None]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except StorageError:
        raise
    except (ClientError, BotoCoreError) as exc:
        raise _wrap_error(exc, action, url, location) from exc
    except (OSError, ValueError) as exc:  # connection and stream errors below botocore
        raise StorageError(f"cannot {action} {url}: {type(exc).__name__}: {exc}", url=url) from exc


def _is_client_error(exc: Exception, codes: set[str]) -> bool:
    from botocore.exceptions import ClientError

    if not isinstance(exc, ClientError):
        return False
    code, status, _ = _error_code(exc)
    return code in codes or str(status) in codes


def _epoch_ms(value: datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return (value - _EPOCH) // timedelta(milliseconds=1)


class S3Storage(Storage):
    """Objects in S3 buckets. The bucket is the URL's authority: ``s3://bucket/key``.

    ``copy_if_absent`` reads the source and does a conditional ``PutObject`` of the bytes
    (suitable for small objects such as Delta commits); it relies only on the conditional
    ``PutObject`` that ``put_if_absent`` needs, not on conditional ``CopyObject``.
    """

    scheme = "s3"

    def __init__(self, config: S3Config | None = None):
        self._config = config

    @property
    def config(self) -> S3Config:
        return self._config if self._config is not None else S3Config.from_settings()

    def _client(self) -> Any:
        return s3_client(self.config)

    def _object(self, url: str) -> Location:
        location = self._location(url)
        if not location.key:
            raise InvalidStorageUrl(f"S3 URL names a bucket, not an object: {url!r}", url=url)
        return location

    @staticmethod
    def _prefix(location: Location) -> str:
        return location.key + "/" if location.key else ""

    # -- Storage ---------------------------------------------------------------------------

    def read(self, url: str) -> bytes:
        location = self._object(url)
        with _s3_errors("read", url, location):
            response = self._client().get_object(Bucket=location.bucket, Key=location.key)
            with response["Body"] as body:
                return body.read()

    def exists(self, url: str) -> bool:
        location = self._object(url)
        with _s3_errors("check", url, location):
            try:
                self._client().head_object(Bucket=location.bucket, Key=location.key)
            except Exception as exc:
                code, status, _ = _error_code(exc)
                if status == 404 or code in _NOT_FOUND_CODES or code == "NoSuchBucket":
                    return False
                raise
        return True

    def _iter_objects(self, location: Location) -> Iterator[dict]:
        paginator = self._client().get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=location.bucket, Prefix=self._prefix(location)):
            yield from page.get("Contents") or ()

    def list(self, prefix_url: str) -> list[ObjectInfo]:
        location = self._location(prefix_url)
        found: list[ObjectInfo] = []
        with _s3_errors("list", prefix_url, location):
            for item in self._iter_objects(location):
                key = item["Key"]
                if key.endswith("/"):
                    continue  # "directory" placeholders are not objects
                found.append(
                    ObjectInfo(
                        url=Location("s3", location.bucket, "/" + key).url,
                        size=int(item.get("Size") or 0),
                        modification_time=_epoch_ms(item["LastModified"]),
                    )
                )
        found.sort(key=lambda info: info.url)
        return found

    def put(self, url: str, data: bytes) -> None:
        location = self._object(url)
        with _s3_errors("write", url, location):
            self._client().put_object(Bucket=location.bucket, Key=location.key, Body=bytes(data))

    def put_if_absent(self, url: str, data: bytes) -> bool:
        location = self._object(url)
        data = bytes(data)
        if not self.config.conditional_writes:
            # Documented non-atomic fallback for servers without conditional writes.
            if self.exists(url):
                return False
            self.put(url, data)
            return True
        client = self._client()
        with _s3_errors("write", url, location):
            for delay in (*_CONFLICT_BACKOFF, None):
                try:
                    client.put_object(
                        Bucket=location.bucket, Key=location.key, Body=data, IfNoneMatch="*"
                    )
                    return True
                except Exception as exc:
                    if _is_client_error(exc, _PRECONDITION_FAILED):
                        return self._lost_or_own_retry(exc, client, location, data)
                    if _is_client_error(exc, _CONDITIONAL_CONFLICT):
                        if delay is None:
                            return False
                        time.sleep(delay)
                        continue
                    if _is_client_error(exc, {"NotImplemented", "501"}):
                        raise ConditionalWriteNotSupported(
                            f"cannot write {url}: the S3 server does not support conditional "
                            f"writes (If-None-Match); see UCWEB_S3_CONDITIONAL_WRITES",
                            url=url,
                        ) from exc
                    raise
        return False  # pragma: no cover - the loop always returns or raises

    @staticmethod
    def _lost_or_own_retry(exc: Exception, client: Any, location: Location, data: bytes) -> bool:
        """Decide a 412 answer. If botocore retried the request (after a timeout or a 5xx),
        the object may exist because our own first attempt landed; then the stored bytes
        equal ours and the write counts as ours."""
        metadata = (getattr(exc, "response", None) or {}).get("ResponseMetadata") or {}
        if not metadata.get("RetryAttempts"):
            return False
        response = client.get_object(Bucket=location.bucket, Key=location.key)
        with response["Body"] as body:
            return body.read() == data

    def delete(self, url: str) -> None:
        location = self._object(url)
        with _s3_errors("delete", url, location):
            self._client().delete_object(Bucket=location.bucket, Key=location.key)

    def delete_prefix(self, prefix_url: str) -> int:
        location = self._location(prefix_url)
        client = self._client()
        deleted = 0
        with _s3_errors("delete", prefix_url, location):
            keys = [item["Key"] for item in self._iter_objects(location)]
            for start in range(0, len(keys), 1000):
                batch = keys[start : start + 1000]
                response = client.delete_objects(
                    Bucket=location.bucket,
                    Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
                )
                errors = response.get("Errors") or []
                if errors:
                    first = errors[0]
                    raise StorageError(
                        f"cannot delete {len(errors)} object(s) below {prefix_url}; first: "
                        f"{first.get('Key')!r}: {first.get('Code')} {first.get('Message')}",
                        url=prefix_url,
                    )
                deleted += sum(1 for key in batch if not key.endswith("/"))
        return deleted
