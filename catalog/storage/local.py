"""Local file system backend (``file://`` URLs).

A path is text until the kernel resolves it, and a symbolic link anywhere in it may lead the
kernel elsewhere: whoever can write inside a table's folder can plant one. So ``list`` and
``delete_prefix`` never follow a link below their prefix (they walk by directory descriptor, and
delete a link as a link), and a storage confined to a root (``confined``) checks the real path of
what it opens, creates or deletes in against the real path of the root, and refuses a root that is
itself a link."""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .base import ObjectInfo, Storage
from .errors import (
    InvalidStorageUrl,
    StorageError,
    StorageObjectNotFound,
    StorageOutsideRoot,
    StoragePermissionDenied,
)
from .urls import Location, join

# Writes go to a temporary file next to the target first. Its name starts with this prefix;
# list() and delete_prefix() counts skip such files.
TEMP_PREFIX = ".ucweb-tmp-"

# errno values meaning "this file system cannot make hard links".
_NO_LINK_ERRNOS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK}

# A directory opened to act on the names in it (O_PATH where there is one: no read permission needed).
_DIRECTORY_HANDLE = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC
# A directory opened to walk it.
_DIRECTORY_READ = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


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


def _walk_errors(action: str, prefix_url: str) -> Callable[[OSError], None]:
    """os.fwalk's `onerror` below a prefix: what vanished meanwhile (or a prefix that is missing)
    is nothing to walk; anything else is a real failure of `action`."""

    def on_error(exc: OSError) -> None:
        if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
            return
        raise _wrap_os_error(exc, action, prefix_url) from exc

    return on_error


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _real_path_of(fd: int, path: str) -> str:
    """Where the descriptor `fd`, opened at `path`, really is: as the kernel saw it where it says
    (Linux's /proc), else `path` resolved now (a link swapped in since the open is then missed)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)


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

    def __init__(self, *, fsync: bool = True, root: str | None = None):
        self.fsync = fsync
        self.root = None if root is None else self._location(root).path

    def confined(self, root_url: str) -> LocalStorage:
        """Every path must lie at or below `root_url`, and so must its real path: what a read
        opens, the directory a write creates its file in or a delete removes a name from, the
        directory a listing walks. A symbolic link inside the root may be deleted (as a link) and
        followed to a place inside the root, never out of it; a root that is itself a link is
        refused. Refusals raise StorageOutsideRoot and leave everything as it was."""
        _, path = self._path(root_url)
        return LocalStorage(fsync=self.fsync, root=path)

    # -- helpers ---------------------------------------------------------------------------

    def _path(self, url: str) -> tuple[Location, str]:
        location = self._location(url)
        if self.root is not None and not _is_within(location.path, self.root):
            raise StorageOutsideRoot(f"{url} lies outside {self._root_url}", url=url)
        return location, location.path

    @property
    def _root_url(self) -> str:
        return Location("file", "", self.root).url

    def _require_inside(self, real: str, url: str) -> None:
        if os.path.islink(self.root):
            raise StorageOutsideRoot(f"refused {url}: {self._root_url} is a symbolic link", url=url)
        if not _is_within(real, os.path.realpath(self.root)):
            raise StorageOutsideRoot(f"refused {url}: a symbolic link leads it out of {self._root_url}", url=url)

    def _check_path(self, path: str, url: str) -> None:
        """In a confined storage: `path`, resolved now, lies in the root."""
        if self.root is not None:
            self._require_inside(os.path.realpath(path), url)

    def _check_opened(self, fd: int, path: str, url: str) -> None:
        """In a confined storage: what `fd` (opened at `path`) is lies in the root."""
        if self.root is not None:
            self._require_inside(_real_path_of(fd, path), url)

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

    def make_folders(self, url: str, *names: str) -> None:
        for name in names:
            folder_url = join(url, name)
            _, folder = self._path(folder_url)
            with _os_errors("create the folder", folder_url):
                self._check_path(folder, folder_url)  # a link on the way may not lead out of the root
                self._make_directories(folder)

    def read(self, url: str) -> bytes:
        _, path = self._path(url)
        try:
            self._check_path(path, url)  # before the open: opening a device may do something
            # Non-blocking: a FIFO planted in a table's folder must not hang the reader.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            raise StorageObjectNotFound(f"object not found: {url}", url=url) from exc
        except OSError as exc:
            raise _wrap_os_error(exc, "read", url) from exc
        try:
            self._check_opened(fd, path, url)  # a link swapped in between the check and the open
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                raise StorageObjectNotFound(f"object not found: {url}", url=url)
            if not stat.S_ISREG(mode):
                raise StorageError(f"cannot read {url}: not a regular file", url=url)
            os.set_blocking(fd, True)
            with open(fd, "rb", closefd=False) as handle:
                return handle.read()
        except OSError as exc:
            raise _wrap_os_error(exc, "read", url) from exc
        finally:
            os.close(fd)

    def exists(self, url: str) -> bool:
        _, path = self._path(url)
        with _os_errors("check", url):
            self._check_path(path, url)
            return os.path.isfile(path)

    def list(self, prefix_url: str) -> list[ObjectInfo]:
        """Regular files and symbolic links below the prefix, the links described as themselves
        (the size and time of the link): a link is never followed, to a file or a directory."""
        _, root = self._path(prefix_url)
        found: list[ObjectInfo] = []
        on_error = _walk_errors("list", prefix_url)

        with _os_errors("list", prefix_url):
            try:
                top = os.open(root, _DIRECTORY_READ)
            except (FileNotFoundError, NotADirectoryError):
                return []
            try:
                self._check_opened(top, root, prefix_url)
                for directory, _dirs, files, dir_fd in os.fwalk(".", onerror=on_error, dir_fd=top):
                    for name in files:
                        if name.startswith(TEMP_PREFIX):
                            continue
                        try:
                            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                        except FileNotFoundError:
                            continue  # deleted while listing
                        if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                            continue
                        found.append(
                            ObjectInfo(
                                url=Location("file", "", os.path.normpath(os.path.join(root, directory, name))).url,
                                size=info.st_size,
                                modification_time=info.st_mtime_ns // 1_000_000,
                            )
                        )
            finally:
                os.close(top)
        found.sort(key=lambda info: info.url)
        return found

    @contextmanager
    def _writing(self, url: str) -> Iterator[tuple[str, str]]:
        """The path of `url` and its directory, once the directory is checked, with the OS's
        errors of the write the `with` makes as storage errors."""
        _, path = self._path(url)
        with _os_errors("write", url):
            directory = os.path.dirname(path)
            self._check_path(directory, url)
            yield path, directory

    def put(self, url: str, data: bytes) -> None:
        with self._writing(url) as (path, directory):
            data = bytes(data)
            temp_path = self._write_temp(directory, data)
            try:
                os.replace(temp_path, path)
            except BaseException:
                _unlink_quietly(temp_path)
                raise
            self._sync_directory(directory)

    def put_if_absent(self, url: str, data: bytes) -> bool:
        with self._writing(url) as (path, directory):
            data = bytes(data)
            if os.path.lexists(path):
                return self._exists_as_object(path, url)
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
        """Removes the name `url`: a symbolic link goes as a link, never what it points to."""
        _, path = self._path(url)
        directory, name = os.path.split(path)
        if not name:
            raise StorageError(f"cannot delete {url}: it is a directory", url=url)
        self._check_path(directory, url)
        try:
            dir_fd = os.open(directory, _DIRECTORY_HANDLE)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise _wrap_os_error(exc, "delete", url) from exc
        try:
            self._check_opened(dir_fd, directory, url)
            os.unlink(name, dir_fd=dir_fd)
        except (FileNotFoundError, NotADirectoryError):
            return
        except IsADirectoryError as exc:
            raise StorageError(f"cannot delete {url}: it is a directory", url=url) from exc
        except OSError as exc:
            if exc.errno == errno.EISDIR or (exc.errno == errno.EPERM and _is_directory(name, dir_fd)):
                raise StorageError(f"cannot delete {url}: it is a directory", url=url) from exc
            raise _wrap_os_error(exc, "delete", url) from exc
        finally:
            os.close(dir_fd)

    def delete_prefix(self, prefix_url: str) -> int:
        """Deletes below the prefix without following any symbolic link: links (to files or
        directories) are removed as links. A prefix that is itself a link loses the link only."""
        _, root = self._path(prefix_url)
        if root == "/":
            raise StorageError("refusing to delete everything below file:///", url=prefix_url)
        deleted = 0
        on_error = _walk_errors("delete", prefix_url)

        with _os_errors("delete", prefix_url):
            if os.path.islink(root):
                self.delete(prefix_url)
                return 0
            try:
                top = os.open(root, _DIRECTORY_READ | os.O_NOFOLLOW)
            except (FileNotFoundError, NotADirectoryError):
                return 0
            try:
                self._check_opened(top, root, prefix_url)
                for _directory, dirs, files, dir_fd in os.fwalk(".", topdown=False, onerror=on_error, dir_fd=top):
                    for name in files:
                        try:
                            os.unlink(name, dir_fd=dir_fd)
                        except FileNotFoundError:
                            continue
                        if not name.startswith(TEMP_PREFIX):
                            deleted += 1
                    for name in dirs:
                        # fwalk lists a link to a directory among the directories, and does not enter it.
                        if _is_link(name, dir_fd):
                            _unlink_quietly(name, dir_fd=dir_fd)
                        else:
                            _rmdir_quietly(name, dir_fd=dir_fd)
            finally:
                os.close(top)
            _rmdir_quietly(root)
        return deleted

    def symbolic_links(self, prefix_url: str) -> list[str]:
        location, root = self._path(prefix_url)
        found: list[str] = []
        on_error = _walk_errors("list", prefix_url)

        with _os_errors("list", prefix_url):
            if os.path.islink(root):
                return [location.url]
            try:
                top = os.open(root, _DIRECTORY_READ | os.O_NOFOLLOW)
            except (FileNotFoundError, NotADirectoryError):
                return []
            try:
                for directory, dirs, files, dir_fd in os.fwalk(".", onerror=on_error, dir_fd=top):
                    for name in dirs + files:
                        if _is_link(name, dir_fd):
                            found.append(Location("file", "", os.path.normpath(os.path.join(root, directory, name))).url)
            finally:
                os.close(top)
        return sorted(found)


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


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _is_directory(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _unlink_quietly(path: str, *, dir_fd: int | None = None) -> None:
    try:
        os.unlink(path, dir_fd=dir_fd)
    except OSError:
        pass


def _rmdir_quietly(path: str, *, dir_fd: int | None = None) -> None:
    # Only empty directories go away; one that a concurrent writer has just filled stays.
    try:
        os.rmdir(path, dir_fd=dir_fd)
    except OSError:
        pass
