"""What the local file system storage does beyond the behaviour every backend shares (see
test_storage_backends.py): temporary files, hard links, emptied directories, the root, write
errors and permissions, symbolic links (never followed by listings and deletes, never out of
the root of a confined storage). Needs no database."""

from __future__ import annotations

import errno
import os

import pytest

from catalog.storage import (
    LocalStorage,
    StorageError,
    StorageObjectNotFound,
    StorageOutsideRoot,
    StoragePermissionDenied,
    join,
    storage_within,
)
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


# -- symbolic links ------------------------------------------------------------------------------------
@pytest.fixture
def linked(tmp_path):
    """A table folder `t` holding a link to a directory and a link to a file elsewhere, and a link
    that stays inside; returns (table URL, the place elsewhere)."""
    table, elsewhere = tmp_path / "t", tmp_path / "elsewhere"
    (table / "data").mkdir(parents=True)
    (table / "data" / "own").write_bytes(b"own")
    (elsewhere / "deep").mkdir(parents=True)
    (elsewhere / "x").write_bytes(b"secret")
    (elsewhere / "deep" / "y").write_bytes(b"secret too")
    os.symlink(elsewhere, table / "linkdir")
    os.symlink(elsewhere / "x", table / "linkfile")
    os.symlink(table / "data", table / "alias")
    return table.as_uri(), elsewhere


def test_a_confined_storage_reads_nothing_a_link_leads_out_to(linked):
    table, _ = linked
    storage = storage_within(table)
    for path in ("linkdir/x", "linkdir/deep/y", "linkfile"):
        with pytest.raises(StorageOutsideRoot, match="symbolic link"):
            storage.read(join(table, path))
        with pytest.raises(StorageOutsideRoot):
            storage.exists(join(table, path))
    with pytest.raises(StorageOutsideRoot):
        storage.list(join(table, "linkdir"))
    assert storage.read(join(table, "alias", "own")) == b"own"  # a link that stays inside
    with pytest.raises(StorageOutsideRoot, match="lies outside"):
        storage.read(f"{table}/../elsewhere/x")
    assert LocalStorage().read(join(table, "linkfile")) == b"secret"  # unconfined: as before


def test_a_confined_storage_writes_and_deletes_nothing_through_a_link(linked):
    table, elsewhere = linked
    storage = storage_within(table)
    for call in (lambda url: storage.put(url, b"w"), lambda url: storage.put_if_absent(url, b"w"), storage.delete):
        with pytest.raises(StorageOutsideRoot):
            call(join(table, "linkdir", "x"))
        with pytest.raises(StorageOutsideRoot):
            call(join(table, "linkdir", "new", "z"))
    assert (elsewhere / "x").read_bytes() == b"secret" and not (elsewhere / "new").exists()
    storage.delete(join(table, "linkfile"))  # the link itself is the table's: it goes, as a link
    storage.delete(join(table, "linkdir"))
    assert not os.path.lexists(linked[1].parent / "t" / "linkfile")
    assert sorted(os.listdir(elsewhere)) == ["deep", "x"] and (elsewhere / "x").read_bytes() == b"secret"


def test_a_root_that_is_a_link_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "f").write_bytes(b"secret")
    os.symlink(tmp_path / "elsewhere", tmp_path / "t")
    storage = storage_within((tmp_path / "t").as_uri())
    for call in (lambda: storage.read(join((tmp_path / "t").as_uri(), "f")),
                 lambda: storage.list((tmp_path / "t").as_uri()),
                 lambda: storage.delete(join((tmp_path / "t").as_uri(), "f")),
                 lambda: storage.put(join((tmp_path / "t").as_uri(), "g"), b"w")):
        with pytest.raises(StorageOutsideRoot, match="is a symbolic link"):
            call()
    assert os.listdir(tmp_path / "elsewhere") == ["f"]


def test_listings_describe_links_as_links_and_never_enter_them(linked):
    table, _ = linked
    listed = {item.name: item.size for item in LocalStorage().list(table)}
    assert listed == {"own": 3, "linkfile": len(str(linked[1] / "x"))}
    assert LocalStorage().symbolic_links(table) == [join(table, name) for name in ("alias", "linkdir", "linkfile")]


def test_delete_prefix_removes_links_not_what_they_lead_to(linked, tmp_path):
    table, elsewhere = linked
    assert LocalStorage().delete_prefix(table) == 2  # data/own and the link to a file
    assert not os.path.lexists(tmp_path / "t")
    assert (elsewhere / "x").read_bytes() == b"secret" and (elsewhere / "deep" / "y").exists()
    os.symlink(elsewhere, tmp_path / "t2")
    assert LocalStorage().delete_prefix((tmp_path / "t2").as_uri()) == 0
    assert not os.path.lexists(tmp_path / "t2") and (elsewhere / "deep" / "y").exists()


def test_a_planted_fifo_does_not_hang_a_read(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(StorageError, match="not a regular file"):
        LocalStorage().read(join(tmp_path.as_uri(), "pipe"))
    assert [item.name for item in LocalStorage().list(tmp_path.as_uri())] == []


# -- folders -----------------------------------------------------------------------------------------
def test_make_folders_creates_each_folder_once_inside_the_url(tmp_path):
    table = join(tmp_path.as_uri(), "t")
    LocalStorage().make_folders(table, "metadata", "data")
    LocalStorage().make_folders(table, "metadata", "data")  # again: nothing changes
    assert sorted(os.listdir(tmp_path / "t")) == ["data", "metadata"]
    assert all((tmp_path / "t" / name).is_dir() and not os.listdir(tmp_path / "t" / name) for name in ("data", "metadata"))


def test_make_folders_refuses_a_name_that_is_not_one_segment_and_creates_nothing(tmp_path):
    table = join(tmp_path.as_uri(), "t")
    for name in ("..", ".", "../elsewhere"):
        with pytest.raises(StorageError):
            LocalStorage().make_folders(table, name)
    assert os.listdir(tmp_path) == []


def test_a_confined_storage_makes_no_folder_through_a_link(linked):
    table, elsewhere = linked
    before = sorted(os.listdir(elsewhere))
    with pytest.raises(StorageOutsideRoot):
        storage_within(table).make_folders(table, "linkdir")
    with pytest.raises(StorageOutsideRoot):
        storage_within(join(table, "linkdir")).make_folders(join(table, "linkdir"), "metadata")
    assert sorted(os.listdir(elsewhere)) == before


def test_make_folders_over_a_file_is_a_storage_error(tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "metadata").write_bytes(b"a file, not a folder")
    with pytest.raises(StorageError, match="create the folder"):
        LocalStorage().make_folders((tmp_path / "t").as_uri(), "metadata")
    assert (tmp_path / "t" / "metadata").read_bytes() == b"a file, not a folder"


def test_an_object_store_has_no_folders_to_make():
    from catalog.storage import storage_for

    storage_for("s3://bucket/t").make_folders("s3://bucket/t", "metadata", "data")  # no request is sent
    with pytest.raises(StorageError):
        storage_for("s3://bucket/t").make_folders("s3://bucket/t", "..")
