"""What the local file system storage does beyond the behaviour every backend shares (see
test_storage_backends.py): temporary files, hard links, emptied directories, the root, write
errors and permissions. Needs no database."""

from __future__ import annotations

import errno
import os

import pytest

from catalog.storage import LocalStorage, StorageError, StorageObjectNotFound, StoragePermissionDenied, join
from catalog.storage import local as local_module


def test_local_put_if_absent_leaves_no_temp_files(tmp_path):
    storage = LocalStorage()
    url = join(tmp_path.as_uri(), "log", "0.json")
    assert storage.put_if_absent(url, b"a")
    assert not storage.put_if_absent(url, b"b")
    storage.put(url, b"c")
    assert os.listdir(tmp_path / "log") == ["0.json"]


def test_local_list_skips_in_flight_temp_files(tmp_path):
    storage = LocalStorage()
    storage.put(join(tmp_path.as_uri(), "d", "real"), b"r")
    (tmp_path / "d" / f"{local_module.TEMP_PREFIX}abc").write_bytes(b"partial")
    assert [i.name for i in storage.list(join(tmp_path.as_uri(), "d"))] == ["real"]


def test_local_put_if_absent_without_hard_links(tmp_path, monkeypatch):
    def no_link(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(local_module.os, "link", no_link)
    storage = LocalStorage()
    url = join(tmp_path.as_uri(), "0.json")
    assert storage.put_if_absent(url, b"first") is True
    assert storage.put_if_absent(url, b"second") is False
    assert storage.read(url) == b"first"
    assert os.listdir(tmp_path) == ["0.json"]


def test_local_delete_prefix_removes_emptied_directories(tmp_path):
    storage = LocalStorage()
    base = tmp_path.as_uri()
    storage.put(join(base, "t", "a", "b", "c", "f1"), b"1")
    storage.put(join(base, "t", "a", "f2"), b"2")
    storage.put(join(base, "t2", "f3"), b"3")
    assert storage.delete_prefix(join(base, "t")) == 2
    assert sorted(os.listdir(tmp_path)) == ["t2"]


def test_local_refuses_to_delete_the_root():
    with pytest.raises(StorageError):
        LocalStorage().delete_prefix("file:///")


def test_local_write_errors_are_storage_errors(tmp_path):
    storage = LocalStorage()
    storage.put(join(tmp_path.as_uri(), "file"), b"x")
    with pytest.raises(StorageError):
        storage.put(join(tmp_path.as_uri(), "file", "child"), b"y")
    with pytest.raises(StorageError):
        storage.put_if_absent(join(tmp_path.as_uri(), "file", "child"), b"y")
    (tmp_path / "dir").mkdir()
    with pytest.raises(StorageError):
        storage.put_if_absent(join(tmp_path.as_uri(), "dir"), b"y")
    with pytest.raises(StorageObjectNotFound):
        storage.read(join(tmp_path.as_uri(), "dir"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_local_permission_denied(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "f").write_bytes(b"x")
    locked.chmod(0)
    try:
        with pytest.raises(StoragePermissionDenied):
            LocalStorage().read(join(locked.as_uri(), "f"))
    finally:
        locked.chmod(0o755)
