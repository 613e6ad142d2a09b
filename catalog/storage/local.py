"""Local file system backend (``file://`` URLs)."""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from .base import ObjectInfo, Storage
from .errors import (
    InvalidStorageUrl,
    StorageError,
    StorageObjectNotFound,
    StoragePermissionDenied,
)
from .urls import Location

# Writes go to a temporary file next to the target first. Its name starts with this prefix;
# list() and delete_prefix() counts skip such files.
TEMP_PREFIX = ".ucweb-tmp-"

# errno values meaning "this file system cannot make hard links".
_NO_LINK_ERRNOS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK}


def _wrap_os_error(exc: OSError, action: str, url: str) -> StorageError:
    message = f"cannot {action} {url}: {exc.strerror or exc}"
    if isinstance(exc, PermissionError):
        return StoragePermissionDenied(message, url=url)
    return StorageError(message, url=url)


@contextmanager
def _os_errors(action: str, url: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise _wrap_os_error(exc, action, url) from exc
    except ValueError as exc:  # e.g. a path too odd for the OS
        raise InvalidStorageUrl(f"cannot {action} {url}: {exc}", url=url) from exc


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class LocalStorage(Storage):
    """Files on the local file system.

    ``put`` writes a temporary file in the target directory and renames it over the target;
    ``put_if_absent`` writes the temporary file and hard-links it to the target, which fails
    atomically when the target exists, so readers never see a partial object. On a file
    system without hard links ``put_if_absent`` falls back to creating the target with
    ``O_CREAT | O_EXCL`` and writing into it: still only one writer wins, but a reader racing
    with the write may see a partial file.
    """

    scheme = "file"

    def __init__(self, *, fsync: bool = True):
        self.fsync = fsync

    # -- helpers ---------------------------------------------------------------------------

    def _path(self, url: str) -> tuple[Location, str]:
        location = self._location(url)
        return location, location.path

    def _write_new(self, path: str, data: bytes) -> None:
        """Creates the file `path` holding `data` (FileExistsError if anything is there); a write
        that fails leaves nothing behind."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        try:
            _write_all(fd, data)
            if self.fsync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            _unlink_quietly(path)
            raise
        os.close(fd)

    def _write_temp(self, directory: str, data: bytes) -> str:
        os.makedirs(directory, exist_ok=True)
        temp_path = os.path.join(directory, f"{TEMP_PREFIX}{uuid.uuid4().hex}")
        self._write_new(temp_path, data)
        return temp_path

    # -- Storage ---------------------------------------------------------------------------

    def read(self, url: str) -> bytes:
        _, path = self._path(url)
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise StorageObjectNotFound(f"object not found: {url}", url=url) from exc
        except OSError as exc:
            raise _wrap_os_error(exc, "read", url) from exc

    def exists(self, url: str) -> bool:
        _, path = self._path(url)
        with _os_errors("check", url):
            return os.path.isfile(path)

    def list(self, prefix_url: str) -> list[ObjectInfo]:
        location, root = self._path(prefix_url)
        found: list[ObjectInfo] = []

        def on_error(exc: OSError) -> None:
            # A missing prefix is an empty listing; anything else is a real failure.
            if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                return
            raise _wrap_os_error(exc, "list", prefix_url) from exc

        with _os_errors("list", prefix_url):
            for directory, _dirs, files in os.walk(root, onerror=on_error):
                for name in files:
                    if name.startswith(TEMP_PREFIX):
                        continue
                    path = os.path.join(directory, name)
                    try:
                        stat = os.stat(path)
                    except FileNotFoundError:
                        continue  # deleted while listing
                    found.append(
                        ObjectInfo(
                            url=Location("file", "", path).url,
                            size=stat.st_size,
                            modification_time=stat.st_mtime_ns // 1_000_000,
                        )
                    )
        found.sort(key=lambda info: info.url)
        return found

    def put(self, url: str, data: bytes) -> None:
        _, path = self._path(url)
        data = bytes(data)
        with _os_errors("write", url):
            temp_path = self._write_temp(os.path.dirname(path), data)
            try:
                os.replace(temp_path, path)
            except BaseException:
                _unlink_quietly(temp_path)
                raise

    def put_if_absent(self, url: str, data: bytes) -> bool:
        _, path = self._path(url)
        data = bytes(data)
        with _os_errors("write", url):
            if os.path.lexists(path):
                return self._exists_as_object(path, url)
            temp_path = self._write_temp(os.path.dirname(path), data)
            try:
                os.link(temp_path, path)
                return True
            except FileExistsError:
                return self._exists_as_object(path, url)
            except OSError as exc:
                if exc.errno not in _NO_LINK_ERRNOS:
                    raise
            finally:
                _unlink_quietly(temp_path)
            return self._create_exclusive(path, url, data)

    def _exists_as_object(self, path: str, url: str) -> bool:
        if os.path.isdir(path):
            raise StorageError(f"cannot write {url}: a directory exists at that path", url=url)
        return False

    def _create_exclusive(self, path: str, url: str, data: bytes) -> bool:
        try:
            self._write_new(path, data)
        except FileExistsError:
            return self._exists_as_object(path, url)
        return True

    def delete(self, url: str) -> None:
        _, path = self._path(url)
        try:
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        except IsADirectoryError as exc:
            raise StorageError(f"cannot delete {url}: it is a directory", url=url) from exc
        except OSError as exc:
            if exc.errno == errno.EISDIR or (exc.errno == errno.EPERM and os.path.isdir(path)):
                raise StorageError(f"cannot delete {url}: it is a directory", url=url) from exc
            raise _wrap_os_error(exc, "delete", url) from exc

    def delete_prefix(self, prefix_url: str) -> int:
        _, root = self._path(prefix_url)
        if root == "/":
            raise StorageError("refusing to delete everything below file:///", url=prefix_url)
        deleted = 0

        def on_error(exc: OSError) -> None:
            if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
                return
            raise _wrap_os_error(exc, "delete", prefix_url) from exc

        with _os_errors("delete", prefix_url):
            if not os.path.isdir(root) or os.path.islink(root):
                return 0
            for directory, dirs, files in os.walk(root, topdown=False, onerror=on_error):
                for name in files:
                    try:
                        os.unlink(os.path.join(directory, name))
                    except FileNotFoundError:
                        continue
                    if not name.startswith(TEMP_PREFIX):
                        deleted += 1
                for name in dirs:
                    sub = os.path.join(directory, name)
                    if os.path.islink(sub):
                        # A symlink to a directory: remove the link, never what it points to.
                        _unlink_quietly(sub)
                    else:
                        _rmdir_quietly(sub)
            _rmdir_quietly(root)
        return deleted


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _rmdir_quietly(path: str) -> None:
    # Only empty directories go away; one that a concurrent writer has just filled stays.
    try:
        os.rmdir(path)
    except OSError:
        pass
