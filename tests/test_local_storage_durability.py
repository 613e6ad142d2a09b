"""What a Delta commit on file:// relies on: a write that fails leaves nothing that would block the
next writer (or take the place of another's file), and with fsync a file that has won its name
keeps it after a crash (the directory holding the name is synced too).

The failures are injected by replacing os functions: a full disk or an I/O error at close cannot be
provoked otherwise in a test."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from catalog.storage import LocalStorage, StorageError
from catalog.storage import local as local_module

REAL = {name: getattr(os, name) for name in ("open", "write", "fsync", "close")}


@pytest.fixture
def opened(monkeypatch) -> dict[int, str]:
    """The path of each descriptor os.open gives while the test runs."""
    paths: dict[int, str] = {}

    def recording_open(path, flags, *args, **kwargs):
        fd = REAL["open"](path, flags, *args, **kwargs)
        paths[fd] = os.fspath(path)
        return fd

    monkeypatch.setattr(local_module.os, "open", recording_open)
    return paths


def without_hard_links(monkeypatch) -> None:
    def no_link(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(local_module.os, "link", no_link)


def fail(monkeypatch, name: str, when) -> None:
    """os.<name> fails with EIO for the descriptors `when(path)` picks; a close still closes."""

    def failing(fd, *args):
        if not when(fd):
            return REAL[name](fd, *args)
        if name == "close":
            REAL["close"](fd)
        raise OSError(errno.EIO, f"Input/output error ({name})")

    monkeypatch.setattr(local_module.os, name, failing)


WAYS = ["put", "put_if_absent", "put_if_absent, no hard links"]


def write(way: str, storage: LocalStorage, url: str, monkeypatch) -> None:
    if way.endswith("no hard links"):
        without_hard_links(monkeypatch)
    if way == "put":
        storage.put(url, b"commit")
    else:
        assert storage.put_if_absent(url, b"commit") is True


@pytest.mark.parametrize("failing", ["write", "fsync", "close"])
@pytest.mark.parametrize("way", WAYS)
def test_a_failed_write_leaves_nothing_behind(tmp_path, monkeypatch, opened, way, failing):
    storage = LocalStorage()
    target = tmp_path / "0.json"
    url = target.as_uri()
    if way.endswith("no hard links"):  # the file itself, written in place: its temporary one went well
        fail(monkeypatch, failing, lambda fd: opened.get(fd) == str(target))
    else:
        fail(monkeypatch, failing, lambda fd: os.path.basename(opened.get(fd, "")).startswith(local_module.TEMP_PREFIX))
    with pytest.raises(StorageError, match="Input/output error"):
        write(way, storage, url, monkeypatch)
    assert os.listdir(tmp_path) == []

    monkeypatch.undo()
    assert storage.put_if_absent(url, b"commit") is True  # nothing blocks the next writer
    assert storage.read(url) == b"commit"


def test_a_failed_write_without_hard_links_keeps_the_file_a_put_replaced(tmp_path, monkeypatch, opened):
    without_hard_links(monkeypatch)
    storage = LocalStorage()
    target = tmp_path / "0.json"

    def put_meanwhile_then_fail(fd, data):
        if opened.get(fd) != str(target):
            return REAL["write"](fd, data)
        monkeypatch.setattr(local_module.os, "write", REAL["write"])
        storage.put(target.as_uri(), b"put")  # a concurrent put() replaces the file being written
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(local_module.os, "write", put_meanwhile_then_fail)
    with pytest.raises(StorageError, match="No space left"):
        storage.put_if_absent(target.as_uri(), b"commit")
    assert target.read_bytes() == b"put"
    assert os.listdir(tmp_path) == ["0.json"]


class SyncedDirectories:
    """Each directory os.fsync syncs, as (device, inode), and whether `target` was in place then."""

    def __init__(self, target):
        self.target = target
        self.seen: list[tuple[tuple[int, int], bool]] = []

    def fsync(self, fd):
        found = os.fstat(fd)
        if stat.S_ISDIR(found.st_mode):
            self.seen.append(((found.st_dev, found.st_ino), self.target.exists()))
        return REAL["fsync"](fd)

    def __contains__(self, directory) -> bool:
        return identity(directory) in {synced for synced, _ in self.seen}

    def after_target(self, directory) -> bool:
        return (identity(directory), True) in self.seen


def identity(path) -> tuple[int, int]:
    found = os.stat(path)
    return found.st_dev, found.st_ino


@pytest.mark.parametrize("way", WAYS)
def test_with_fsync_the_names_are_synced_in_their_directories(tmp_path, monkeypatch, way):
    log = tmp_path / "table" / "_delta_log"  # a new table's first commit: two new directories
    synced = SyncedDirectories(log / "0.json")
    monkeypatch.setattr(local_module.os, "fsync", synced.fsync)
    write(way, LocalStorage(fsync=True), (log / "0.json").as_uri(), monkeypatch)

    assert synced.after_target(log)  # the file's name, once it is there
    assert tmp_path / "table" in synced and tmp_path in synced  # the new directories' names
    assert os.listdir(log) == ["0.json"]


def test_without_fsync_nothing_is_synced(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(local_module.os, "fsync", calls.append)
    storage = LocalStorage(fsync=False)
    storage.put((tmp_path / "a" / "0.json").as_uri(), b"x")
    assert storage.put_if_absent((tmp_path / "b" / "0.json").as_uri(), b"x")
    assert calls == []
