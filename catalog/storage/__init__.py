"""The catalog's one storage interface: Delta logs, Iceberg metadata and table data all go
through :func:`storage_for`.

    from catalog.storage import storage_for, join

    log = join(table_url, "_delta_log")
    storage = storage_for(log)
    if storage.put_if_absent(join(log, "00000000000000000001.json"), payload):
        ...

URLs are ``file:///absolute/path`` or ``s3://bucket/key`` (``s3a://`` is read as ``s3://``);
see :mod:`catalog.storage.urls` for the canonical form and :mod:`catalog.storage.s3` for the
S3 settings. Short-lived access for clients comes from one vendor,
:func:`catalog.services.vendor.vend`, whatever the protocol.
"""

from __future__ import annotations

from .base import ObjectInfo, Storage
from .errors import (
    ConditionalWriteNotSupported,
    InvalidStorageUrl,
    StorageError,
    StorageObjectNotFound,
    StorageOutsideRoot,
    StoragePermissionDenied,
    UnsupportedStorageScheme,
)
from .local import LocalStorage
from .s3 import S3Config, S3Storage
from .urls import join, normalize, parse

__all__ = [
    "ConditionalWriteNotSupported",
    "InvalidStorageUrl",
    "LocalStorage",
    "ObjectInfo",
    "S3Config",
    "S3Storage",
    "Storage",
    "StorageError",
    "StorageObjectNotFound",
    "StorageOutsideRoot",
    "StoragePermissionDenied",
    "UnsupportedStorageScheme",
    "join",
    "normalize",
    "parse",
    "storage_for",
    "storage_within",
]

_local = LocalStorage()
_s3 = S3Storage()  # reads its configuration at each call, so settings changes apply

_BACKENDS: dict[str, Storage] = {"file": _local, "s3": _s3}


def storage_for(url: str) -> Storage:
    """The storage backend for ``url``'s scheme (``file`` or ``s3``/``s3a``).

    Raises :class:`UnsupportedStorageScheme` for other schemes and :class:`InvalidStorageUrl`
    for text that is not an absolute URL or path.
    """
    scheme = parse(url).scheme
    try:
        return _BACKENDS[scheme]
    except KeyError:
        raise UnsupportedStorageScheme(
            f"unsupported storage scheme {scheme!r} in {url!r} (supported: file://, s3://)",
            url=url,
        ) from None


def storage_within(root_url: str) -> Storage:
    """The backend for `root_url`, confined to it (:meth:`Storage.confined`): what acts on one
    securable's files, such as maintenance, uses this, so that neither a URL nor, on file://, a
    symbolic link planted in the folder takes it elsewhere."""
    return storage_for(root_url).confined(root_url)
