"""The normalisation of catalog.locations: every spelling of a place comes out as one canonical
URL, and what cannot be one is a 400 (pure function; the rule itself is exercised end to end in
tests/test_isolation_*.py)."""

import pytest

from catalog.locations import RECORDED_SCHEMES, canonical, foreign_holder, is_within, overlaps
from ucweb.errors import InvalidParameter


@pytest.mark.parametrize("value, expected", [
    ("/data/t", "file:///data/t"),
    ("/data/t/", "file:///data/t"),
    ("FILE://localhost/data/./x/../t//", "file:///data/t"),
    ("file:/data//t", "file:///data/t"),
    ("file:///data/%2e%2e/etc", "file:///etc"),
    ("file:///data%2F..%2Fetc", "file:///etc"),
    ("file:///data/a%20b", "file:///data/a%20b"),
    ("S3A://bucket/x//y/", "s3://bucket/x/y"),
    ("s3://bucket", "s3://bucket"),
])
def test_spellings_of_one_place(value, expected):
    assert canonical(value) == expected
    assert canonical(expected) == expected  # idempotent


@pytest.mark.parametrize("value", [
    None, 5, "", "   ", "relative/path", "./t", "../t", "s3://", "s3:///no-bucket", "s3://[bad",
    "file://elsewhere/x", "ftp://host/x", "http://example.com/x", "s3://b/x/../y", "s3://b/%2e%2e/y",
    "s3://b/./y", "file:///data/%252e%252e/etc", "s3://b/x%2F..%2Fy",
])
def test_what_is_not_a_location(value):
    with pytest.raises(InvalidParameter):
        canonical(value)


def test_schemes():
    assert canonical("gs://bucket/t", schemes=RECORDED_SCHEMES) == "gs://bucket/t"
    with pytest.raises(InvalidParameter):
        canonical("gs://bucket/t")  # the server itself serves file:// and s3:// only


def test_symbolic_links_are_followed(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    assert canonical(str(tmp_path / "link" / "t")) == (target / "t").as_uri()


def test_within_and_overlap_are_by_segment():
    assert is_within("s3://b/x/y", "s3://b/x") and is_within("s3://b/x", "s3://b/x")
    assert not is_within("s3://b/xy", "s3://b/x") and not overlaps("s3://b/x-2", "s3://b/x")
    assert is_within("file:///a", "file:///")


@pytest.mark.django_db
def test_an_unparsable_location_is_never_purged():
    assert foreign_holder("not a url") is not None
