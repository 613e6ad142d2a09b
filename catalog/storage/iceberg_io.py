"""pyiceberg's FileIO over the catalog's storage, read-only: what lets pyiceberg's own manifest
reader run inside the server (scan planning) on file:// and s3:// tables alike, through the same
backends, keys and confinement as every other read of the catalog.

    io = ReadOnlyFileIO(storage_within(table_location))
    snapshot.manifests(io)   # the manifest list and the manifests are read through `storage`

Objects are read whole (manifest lists and manifests are small); anything but a read is refused.
`live_entries` reads a snapshot's live files that way: what the console's preview and the health
refresh check or count, never reading a manifest outside the table."""

from __future__ import annotations

import io

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile

from .base import Storage


class _StorageInputFile(InputFile):
    def __init__(self, storage: Storage, location: str):
        super().__init__(location)
        self._storage = storage
        self._data: bytes | None = None

    def _read(self) -> bytes:
        if self._data is None:
            self._data = self._storage.read(self.location)
        return self._data

    def __len__(self) -> int:
        return len(self._read())

    def exists(self) -> bool:
        return self._storage.exists(self.location)

    def open(self, seekable: bool = True) -> InputStream:
        return io.BytesIO(self._read())


class ReadOnlyFileIO(FileIO):
    def __init__(self, storage: Storage):
        super().__init__(properties={})
        self._storage = storage

    def new_input(self, location: str) -> InputFile:
        return _StorageInputFile(self._storage, location)

    def new_output(self, location: str) -> OutputFile:
        raise PermissionError(f"Read-only FileIO: {location} is not written.")

    def delete(self, location: str | InputFile | OutputFile) -> None:
        raise PermissionError("Read-only FileIO: nothing is deleted.")


def live_entries(snapshot, storage: Storage) -> list:
    """The live manifest entries (data and delete files) of `snapshot`, its manifest list and
    manifests read through `storage` (confined to the table: a manifest outside it raises
    StorageOutsideRoot before it is read)."""
    io = ReadOnlyFileIO(storage)
    return [entry for manifest in snapshot.manifests(io)
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=True)]
