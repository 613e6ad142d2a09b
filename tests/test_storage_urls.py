"""Storage URLs: how they are normalized and joined, which are refused, and which storage each
scheme chooses. Needs no database."""

from __future__ import annotations

import pytest

from catalog.storage import (
    InvalidStorageUrl,
    LocalStorage,
    S3Storage,
    StorageError,
    UnsupportedStorageScheme,
    join,
    normalize,
    storage_for,
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("file:/var/x", "file:///var/x"),
        ("file:///var/x", "file:///var/x"),
        ("file:///var/x/", "file:///var/x"),
        ("file://localhost/var/x", "file:///var/x"),
        ("FILE:///var//x/./y/../z", "file:///var/x/z"),
        ("/var/x", "file:///var/x"),
        ("file:///", "file:///"),
        ("file:/", "file:///"),
        ("file:///var/a%20b", "file:///var/a%20b"),
        ("file:///var/a b", "file:///var/a%20b"),
        ("file:///var/p%3Dq/k=v", "file:///var/p=q/k=v"),
        ("file:///var/%C3%A9", "file:///var/%C3%A9"),
        ("file:///var/é", "file:///var/%C3%A9"),
        ("s3://bucket/prefix/", "s3://bucket/prefix"),
        ("s3://bucket/", "s3://bucket"),
        ("s3://bucket", "s3://bucket"),
        ("s3a://bucket/a/b//", "s3://bucket/a/b"),
        ("S3A://bucket/a", "s3://bucket/a"),
        ("s3n://bucket/a", "s3://bucket/a"),
        ("s3://bucket/a//b", "s3://bucket/a//b"),
        ("s3://bucket/100%25", "s3://bucket/100%25"),
        ("s3://bucket/a#b?c", "s3://bucket/a%23b%3Fc"),
        ("  s3://bucket/k  ", "s3://bucket/k"),
        ("gs://bucket/a/", "gs://bucket/a"),
    ],
)
def test_normalize(url, expected):
    assert normalize(url) == expected
    assert normalize(expected) == expected


def test_normalize_makes_spellings_comparable():
    spellings = [
        "file:/tmp/t/my table",
        "file:///tmp/t/my%20table/",
        "file://localhost/tmp/t/my%20table",
        "/tmp/t/my table/",
    ]
    assert len({normalize(u) for u in spellings}) == 1
    assert normalize("s3a://b/k%2Fx") == normalize("s3://b/k/x")


@pytest.mark.parametrize(
    "url", ["", "   ", "relative/path", "file://otherhost/x", "s3:///key", "s3:bucket/key", "s3://"]
)
def test_invalid_urls(url):
    with pytest.raises(InvalidStorageUrl):
        normalize(url)
    with pytest.raises(StorageError):
        storage_for(url)


def test_storage_for_chooses_by_scheme():
    assert isinstance(storage_for("file:///tmp/x"), LocalStorage)
    assert isinstance(storage_for("/tmp/x"), LocalStorage)
    assert isinstance(storage_for("s3://bucket/x"), S3Storage)
    assert isinstance(storage_for("s3a://bucket/x"), S3Storage)
    for url in ("gs://bucket/x", "abfss://c@acct.dfs.core.windows.net/x", "http://h/x"):
        with pytest.raises(UnsupportedStorageScheme) as info:
            storage_for(url)
        assert isinstance(info.value, StorageError)


def test_join():
    assert join("file:///var/t/", "_delta_log", "0.json") == "file:///var/t/_delta_log/0.json"
    assert join("file:/var/t", "a/", "/b") == "file:///var/t/a/b"
    assert join("s3a://b/t", "part=x y", "f#1.parquet") == "s3://b/t/part=x%20y/f%231.parquet"
    assert join("s3://b", "k") == "s3://b/k"
    assert join("file:///", "tmp") == "file:///tmp"
    assert join("s3://b/t") == "s3://b/t"
    assert join("s3://b/t", "100%") == "s3://b/t/100%25"
    for bad in ("..", "a/../b", "."):
        with pytest.raises(InvalidStorageUrl):
            join("s3://b/t", bad)
