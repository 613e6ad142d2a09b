"""Exceptions raised by the storage layer.

Everything the storage layer raises derives from :class:`StorageError`, so callers can
handle storage failures with one ``except`` clause without knowing about ``OSError`` or
botocore.
"""


class StorageError(Exception):
    """Base class of every error raised by :mod:`catalog.storage`."""

    def __init__(self, message: str, *, url: str | None = None):
        super().__init__(message)
        self.url = url


class StorageObjectNotFound(StorageError):
    """The object (file) addressed by a URL does not exist."""


class UnsupportedStorageScheme(StorageError):
    """The URL uses a scheme that no storage backend handles."""


class InvalidStorageUrl(StorageError):
    """The URL cannot be understood (no scheme, remote file:// host, missing bucket, ...)."""


class StoragePermissionDenied(StorageError):
    """The storage refused the operation (file permissions, S3 AccessDenied, bad credentials)."""


class StorageOutsideRoot(StorageError):
    """A storage confined to a root (``Storage.confined``) was asked to act outside it: a URL
    outside the root, or on file:// a path that a symbolic link leads out of it."""


class ConditionalWriteNotSupported(StorageError):
    """The object store rejected a conditional (create-only) write as unsupported."""
