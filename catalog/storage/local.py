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
    with the write may see a partial file. With ``fsync`` (the default) a write returns once the
    file's bytes and then its name (its directory, and any directory it created) are on disk.
    """

    scheme = "file"

    def __init__(self, *, fsync: bool = True):
        self.fsync = fsync

    # -- helpers ---------------------------------------------------------------------------

    def _path(self, url: str) -> tuple[Location, str]:
        location = self._location(url)
        return location, location.path

    def _write_new(self, path: str, data: bytes) -> None:
        """Creates the file `path` holding `data` (FileExistsError if anything is there)."""
        self._fill_new(path, _open_new(path), data)

    def _fill_new(self, path: str, fd: int, data: bytes) -> None:
        """Writes `data` into `fd`, the file this call has just created at `path`, and closes it.
        A write, fsync or close that fails leaves nothing behind: the file is unlinked, unless
        `path` names another file by then (a concurrent put() replaced it)."""
        created = None
        try:
            try:
                created = os.fstat(fd)
                _write_all(fd, data)
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)  # once: a failing close has released the descriptor too
        except BaseException:
            if created is None:
                _unlink_quietly(path)
            else:
                _unlink_if_same_file(path, created)
            raise

    def _write_temp(self, directory: str, data: bytes) -> str:
        self._make_directories(directory)
        temp_path = os.path.join(directory, f"{TEMP_PREFIX}{uuid.uuid4().hex}")
        self._write_new(temp_path, data)
        return temp_path

    def _make_directories(self, directory: str) -> None:
        """Creates `directory` and its missing parents (a new table's first commit). With fsync,
        each new directory's name is made durable in its parent, as the file's is in `directory`
        once it is there."""
        missing = []
        current = directory
        while not os.path.isdir(current) and current not in missing:
            missing.append(current)
            current = os.path.dirname(current)
        if not missing:
            return
        os.makedirs(directory, exist_ok=True)
        for created in reversed(missing):  # the outermost first: its parent existed already
            self._sync_directory(os.path.dirname(created))

    def _sync_directory(self, directory: str) -> None:
        """With fsync, makes the names in `directory` durable: a file that was renamed, linked or
        created there (a Delta commit that has won its version) is still there after a crash."""
        if not self.fsync:
            return
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        except OSError as exc:
            if exc.errno != errno.EINVAL:  # a file system that cannot sync a directory says EINVAL
                raise
        finally:
            os.close(fd)

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
            directory = os.path.dirname(path)
            temp_path = self._write_temp(directory, data)
            try:
                os.replace(temp_path, path)
            except BaseException:
                _unlink_quietly(temp_path)
                raise
            self._sync_directory(directory)

    def put_if_absent(self, url: str, data: bytes) -> bool:
        _, path = self._path(url)
        data = bytes(data)
        with _os_errors("write", url):
            if os.path.lexists(path):
                return self._exists_as_object(path, url)
            directory = os.path.dirname(path)
            temp_path = self._write_temp(directory, data)
            try:
                os.link(temp_path, path)
                linked = True
            except FileExistsError:
                return self._exists_as_object(path, url)
            except OSError as exc:
                if exc.errno not in _NO_LINK_ERRNOS:
                    raise
                linked = False
            finally:
                _unlink_quietly(temp_path)
            if not linked:
                return self._create_exclusive(path, url, data)
            self._sync_directory(directory)  # after the temporary name went: neither comes back
            return True

    def _exists_as_object(self, path: str, url: str) -> bool:
        if os.path.isdir(path):
            raise StorageError(f"cannot write {url}: a directory exists at that path", url=url)
        return False

    def _create_exclusive(self, path: str, url: str, data: bytes) -> bool:
        try:
            fd = _open_new(path)
        except FileExistsError:  # only the create: this call lost, or never began, the race
            return self._exists_as_object(path, url)
        self._fill_new(path, fd, data)
        self._sync_directory(os.path.dirname(path))
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


def _open_new(path: str) -> int:
    """A descriptor of the file `path`, created by this call (FileExistsError if anything is there)."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)


def _unlink_if_same_file(path: str, created: os.stat_result) -> None:
    """Unlinks `path` while it still names the file `created` describes (a put() replacing it in
    the instant between the check and the unlink is not told apart)."""
    try:
        current = os.lstat(path)
    except OSError:
        return
    if (current.st_dev, current.st_ino) == (created.st_dev, created.st_ino):
        _unlink_quietly(path)


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
