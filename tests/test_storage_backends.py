"""The behaviour every storage backend shares, run against real storage: the local file system
and a local S3-compatible server (SeaweedFS, see tests/s3_server.py). Needs no database."""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from urllib.parse import quote

import pytest

from catalog.storage import (
    InvalidStorageUrl,
    ObjectInfo,
    Storage,
    StorageError,
    StorageObjectNotFound,
    StorageOutsideRoot,
    join,
    normalize,
    storage_for,
)
from tests.storage_support import isolate_aws


@dataclass
class Backend:
    kind: str
    storage: Storage
    base: str  # a fresh, empty prefix for this test

    def url(self, *parts: str) -> str:
        return join(self.base, *parts)


@pytest.fixture(params=["file", pytest.param("s3", marks=pytest.mark.s3)])
def backend(request, tmp_path, monkeypatch) -> Backend:
    if request.param == "file":
        base = join(tmp_path.as_uri(), "store")
    else:
        server = request.getfixturevalue("s3_server")
        settings = request.getfixturevalue("settings")
        isolate_aws(monkeypatch, settings, tmp_path)
        for name, value in server.env().items():
            setattr(settings, name, value)
        base = server.url(f"t-{uuid.uuid4().hex[:12]}")
    storage = storage_for(base)
    assert storage.scheme == request.param
    return Backend(request.param, storage, base)


def test_put_read_overwrite(backend):
    url = backend.url("_delta_log", "00000000000000000000.json")
    assert not backend.storage.exists(url)
    backend.storage.put(url, b'{"protocol": {}}\n')
    assert backend.storage.exists(url)
    assert backend.storage.read(url) == b'{"protocol": {}}\n'
    backend.storage.put(url, b"second")
    assert backend.storage.read(url) == b"second"


def test_read_missing_raises_not_found(backend):
    url = backend.url("nothing", "here.json")
    with pytest.raises(StorageObjectNotFound) as info:
        backend.storage.read(url)
    assert isinstance(info.value, StorageError)
    assert url in str(info.value)
    assert info.value.url == url


def test_exists_is_false_for_prefixes(backend):
    backend.storage.put(backend.url("dir", "file"), b"x")
    assert backend.storage.exists(backend.url("dir", "file"))
    assert not backend.storage.exists(backend.url("dir"))
    assert not backend.storage.exists(backend.url("dir", "fil"))


def test_empty_and_bytes_like_payloads(backend):
    backend.storage.put(backend.url("empty"), b"")
    assert backend.storage.read(backend.url("empty")) == b""
    backend.storage.put(backend.url("ba"), bytearray(b"abc"))
    assert backend.storage.read(backend.url("ba")) == b"abc"
    assert backend.storage.put_if_absent(backend.url("mv"), memoryview(b"xyz"))
    assert backend.storage.read(backend.url("mv")) == b"xyz"


def test_list_is_recursive_sorted_and_prefix_scoped(backend):
    before = int(time.time() * 1000)
    files = {
        ("tables", "a", "_delta_log", "00000000000000000001.json"): b"11",
        ("tables", "a", "_delta_log", "00000000000000000000.json"): b"0",
        ("tables", "a", "part=1", "data.parquet"): b"parquet!",
        ("tables", "a", "z"): b"",
        ("tables", "ab", "other"): b"not below tables/a",
    }
    for parts, data in files.items():
        backend.storage.put(backend.url(*parts), data)

    listed = backend.storage.list(backend.url("tables", "a"))
    expected = sorted(
        backend.url(*parts) for parts in files if parts[:2] == ("tables", "a")
    )
    assert [info.url for info in listed] == expected
    assert all(isinstance(info, ObjectInfo) for info in listed)
    sizes = {info.url: info.size for info in listed}
    assert sizes[backend.url("tables", "a", "part=1", "data.parquet")] == 8
    assert sizes[backend.url("tables", "a", "z")] == 0
    now = int(time.time() * 1000)
    for info in listed:
        assert before - 120_000 <= info.modification_time <= now + 120_000
    assert listed[0].name == "00000000000000000000.json"

    # A trailing slash or an s3a-style spelling does not change the listing.
    assert backend.storage.list(backend.url("tables", "a") + "/") == listed
    assert [i.url for i in backend.storage.list(backend.url("tables"))] == sorted(
        backend.url(*parts) for parts in files
    )
    assert backend.storage.list(backend.url("missing")) == []
    assert backend.storage.list(backend.url("tables", "a", "z")) == []  # an object, not a prefix


def test_put_if_absent_creates_once(backend):
    url = backend.url("_delta_log", "00000000000000000003.json")
    assert backend.storage.put_if_absent(url, b"first") is True
    assert backend.storage.put_if_absent(url, b"second") is False
    assert backend.storage.read(url) == b"first"
    assert [info.url for info in backend.storage.list(backend.base)] == [url]


@pytest.mark.parametrize("round_", range(3))
def test_put_if_absent_concurrent_writers_have_one_winner(backend, round_):
    url = backend.url("_delta_log", f"{round_:020d}.json")
    writers = 8
    barrier = threading.Barrier(writers)
    results: dict[int, bool | BaseException] = {}

    def write(i: int) -> None:
        payload = f"writer-{i}-".encode() * (1 + i * 100)
        barrier.wait()
        try:
            results[i] = backend.storage.put_if_absent(url, payload)
        except BaseException as exc:  # reported below
            results[i] = exc

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert all(isinstance(r, bool) for r in results.values()), results
    winners = [i for i, won in results.items() if won is True]
    assert len(winners) == 1, results
    winner = winners[0]
    assert backend.storage.read(url) == f"writer-{winner}-".encode() * (1 + winner * 100)
    assert [info.url for info in backend.storage.list(backend.base)] == [url]


def test_copy_if_absent(backend):
    staged = backend.url("_staged_commits", "00000000000000000001.uuid-a.json")
    other = backend.url("_staged_commits", "00000000000000000001.uuid-b.json")
    target = backend.url("_delta_log", "00000000000000000001.json")
    backend.storage.put(staged, b"commit a")
    backend.storage.put(other, b"commit b")

    assert backend.storage.copy_if_absent(staged, target) is True
    assert backend.storage.copy_if_absent(other, target) is False
    assert backend.storage.read(target) == b"commit a"
    assert backend.storage.read(staged) == b"commit a"  # the source stays

    with pytest.raises(StorageObjectNotFound):
        backend.storage.copy_if_absent(backend.url("_staged_commits", "missing"), target)


def test_delete_is_idempotent(backend):
    url = backend.url("f")
    backend.storage.put(url, b"x")
    backend.storage.delete(url)
    assert not backend.storage.exists(url)
    backend.storage.delete(url)
    with pytest.raises(StorageObjectNotFound):
        backend.storage.read(url)


def test_delete_prefix(backend):
    keep = backend.url("tables", "ab", "keep")
    backend.storage.put(keep, b"k")
    for parts in [("x",), ("_delta_log", "0.json"), ("part=1", "deep", "er", "f.parquet")]:
        backend.storage.put(backend.url("tables", "a", *parts), b"d")

    assert backend.storage.delete_prefix(backend.url("tables", "a")) == 3
    assert backend.storage.list(backend.url("tables", "a")) == []
    assert backend.storage.read(keep) == b"k"
    assert backend.storage.delete_prefix(backend.url("tables", "a")) == 0
    assert backend.storage.delete_prefix(backend.url("never", "there")) == 0


def test_odd_characters_round_trip(backend):
    names = [
        "with space.json",
        "percent%41%.bin",
        "unicodé-ü-日本.txt",
        "hash#and?query.txt",
        "part=2024-01-01 00%3A00",
        "plus+comma,semi;colon:at@.txt",
    ]
    for i, name in enumerate(names):
        backend.storage.put(backend.url("odd", name), f"{i}".encode())

    listed = backend.storage.list(backend.url("odd"))
    assert sorted(info.name for info in listed) == sorted(names)
    for info in listed:
        assert normalize(info.url) == info.url
        assert info.url == backend.url("odd", info.name)
        assert backend.storage.read(info.url) == f"{names.index(info.name)}".encode()

    # A percent-encoded URL addresses the same object as the plain spelling.
    encoded = backend.base + "/odd/" + quote("with space.json")
    assert backend.storage.read(encoded) == b"0"


def test_a_confined_backend_acts_only_at_or_below_its_root(backend):
    inside, beside = backend.url("t", "a"), backend.url("t2", "a")
    backend.storage.put(beside, b"beside")
    confined = backend.storage.confined(backend.url("t"))
    confined.put(inside, b"inside")
    assert confined.read(inside) == b"inside"
    assert [info.url for info in confined.list(backend.url("t"))] == [inside]
    assert confined.copy_if_absent(inside, backend.url("t", "b")) is True
    assert confined.confined(backend.url("t", "a")).exists(inside)

    for act in (lambda: confined.read(beside), lambda: confined.exists(beside), lambda: confined.put(beside, b"x"),
                lambda: confined.put_if_absent(beside, b"x"), lambda: confined.list(backend.url("t2")),
                lambda: confined.delete(beside), lambda: confined.delete_prefix(backend.url("t2")),
                lambda: confined.copy_if_absent(beside, backend.url("t", "c")),
                lambda: confined.copy_if_absent(inside, beside), lambda: confined.symbolic_links(backend.url("t2")),
                lambda: confined.confined(backend.url("t2"))):
        with pytest.raises(StorageOutsideRoot, match="lies outside"):
            act()
    assert backend.storage.read(beside) == b"beside"
    assert not backend.storage.exists(backend.url("t", "c"))


def test_rejects_urls_of_another_scheme(backend):
    other = "s3://bucket/key" if backend.kind == "file" else "file:///tmp/key"
    with pytest.raises(InvalidStorageUrl):
        backend.storage.read(other)
