"""The storage interface shared by every backend."""

from __future__ import annotations

import abc
import copy
from dataclasses import dataclass

from .errors import InvalidStorageUrl, StorageOutsideRoot
from .urls import Location, decode_path, join, parse


def within(url: str, root_url: str) -> bool:
    """Whether canonical `url` is `root_url` or lies below it (text only)."""
    return url == root_url or url.startswith(root_url.rstrip("/") + "/")


@dataclass(frozen=True, order=True)
class ObjectInfo:
    """One object found by :meth:`Storage.list`.

    ``url`` is canonical (see :func:`catalog.storage.normalize`), ``size`` is in bytes and
    ``modification_time`` is in milliseconds since the Unix epoch.
    """

    url: str
    size: int
    modification_time: int

    @property
    def name(self) -> str:
        """The decoded last path segment, e.g. ``00000000000000000000.json``."""
        return decode_path(self.url.rsplit("/", 1)[-1])


class Storage(abc.ABC):
    """Object-store style access to files: whole-object reads and writes addressed by URL.

    Every method takes full URLs of the backend's scheme. Paths behave like object keys:
    there are no directories to create, ``list`` and ``delete_prefix`` work on everything
    below a prefix (``prefix/...``), and writes create missing parents.
    """

    #: The canonical URL scheme the backend serves ("file" or "s3").
    scheme: str = ""
    #: The canonical URL of the root an object store is confined to (see :meth:`confined`).
    confined_to: str | None = None

    def _location(self, url: str) -> Location:
        location = parse(url)
        if location.scheme != self.scheme:
            raise InvalidStorageUrl(
                f"{type(self).__name__} serves {self.scheme}:// URLs, not {url!r}", url=url
            )
        if self.confined_to is not None and not within(location.url, self.confined_to):
            raise StorageOutsideRoot(f"{url} lies outside {self.confined_to}", url=url)
        return location

    @abc.abstractmethod
    def read(self, url: str) -> bytes:
        """Return the whole object; raise ``StorageObjectNotFound`` when it does not exist."""

    @abc.abstractmethod
    def exists(self, url: str) -> bool:
        """Whether an object exists at ``url`` (a directory or a bare prefix is not an object)."""

    @abc.abstractmethod
    def list(self, prefix_url: str) -> list[ObjectInfo]:
        """Every object below ``prefix_url`` (recursively), sorted by URL.

        ``prefix_url`` is treated as a directory: ``list("s3://b/t")`` lists ``t/...`` and
        not ``t2/...``. A prefix with nothing below it gives an empty list.
        """

    @abc.abstractmethod
    def put(self, url: str, data: bytes) -> None:
        """Create or replace the object; readers see either the old or the new bytes."""

    @abc.abstractmethod
    def put_if_absent(self, url: str, data: bytes) -> bool:
        """Atomically create the object unless it exists.

        Returns True when this call created it and False, writing nothing, when an object
        already existed. Of several concurrent callers on the same URL exactly one wins.
        """

    def copy_if_absent(self, src_url: str, dst_url: str) -> bool:
        """Copy ``src_url`` to ``dst_url`` unless ``dst_url`` exists (same rules as
        :meth:`put_if_absent`). Raises ``StorageObjectNotFound`` when the source is missing."""
        self._location(dst_url)
        return self.put_if_absent(dst_url, self.read(src_url))

    @abc.abstractmethod
    def delete(self, url: str) -> None:
        """Delete one object; deleting an object that does not exist is not an error."""

    @abc.abstractmethod
    def delete_prefix(self, prefix_url: str) -> int:
        """Delete every object below ``prefix_url`` (as :meth:`list` finds them) and return
        how many were deleted."""

    def confined(self, root_url: str) -> Storage:
        """This backend, acting only at or below `root_url`: any other URL raises
        ``StorageOutsideRoot``. The file:// backend holds the real path to the root as well, so a
        symbolic link cannot lead a read, write, listing or delete out of it."""
        # Object stores: every URL passes _location, and keys name objects with nothing to
        # resolve a key elsewhere, so the text of each URL is the whole check.
        confined = copy.copy(self)
        confined.confined_to = self._location(root_url).url
        return confined

    def make_folders(self, url: str, *names: str) -> None:
        """Creates the folders `names` (single path segments) inside `url` on a store that has
        folders: for writers that do not create a file's parent folders themselves (DuckDB writing
        the first manifest of a new Iceberg table). Object stores have none: nothing is created."""
        for name in names:
            self._location(join(url, name))

    def symbolic_links(self, prefix_url: str) -> list[str]:
        """The symbolic links at or below `prefix_url` (the prefix itself included), found
        without following any. Object stores have none."""
        self._location(prefix_url)
        return []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.confined_to or self.scheme + '://'}>"
