"""Parsing and canonical forms of storage URLs.

Rules (shared by every backend):

* The scheme is case-insensitive and lower-cased; ``s3a`` and ``s3n`` are aliases of ``s3``.
* ``file:/x``, ``file:///x``, ``file://localhost/x`` and a bare absolute path ``/x`` all mean
  the local file ``/x`` and are written ``file:///x``. A ``file://`` URL naming another host
  is rejected.
* The path part of a URL is percent-decoded to find the file path or object key, so
  ``s3://b/a%20b`` and ``s3://b/a b`` address the same key ``a b``. Canonical URLs re-encode
  the path with one fixed set of safe characters, which keeps ``normalize`` idempotent and
  lets any key (even one holding ``%`` or ``#``) round-trip through a URL.
* Trailing slashes are dropped (the local root stays ``file:///``; an S3 bucket root is
  ``s3://bucket``). Local paths are also normalised lexically (``//``, ``.`` and ``..``);
  object keys are kept as they are apart from the trailing slash, because ``a//b`` is a
  different key than ``a/b`` in an object store.
* ``?`` and ``#`` are not special: they are part of the path.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote

from .errors import InvalidStorageUrl

SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}

# Characters left as they are in canonical URL paths: RFC 3986 unreserved characters, the
# sub-delimiters, ':' and '@' (all legal in a path) and '/'. Keeping '=' readable matters for
# Hive-style partition directories such as ``date=2024-01-01``.
_PATH_SAFE = "/:@!$&'()*+,;=-._~"

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):(.*)$", re.DOTALL)


def encode_path(path: str) -> str:
    """Percent-encode a decoded path for use in a canonical URL."""
    return quote(path, safe=_PATH_SAFE, encoding="utf-8", errors="surrogateescape")


def decode_path(path: str) -> str:
    """Decode the percent-encoding of a URL path (undecodable bytes survive as surrogates)."""
    return unquote(path, encoding="utf-8", errors="surrogateescape")


@dataclass(frozen=True)
class Location:
    """A parsed storage URL.

    ``path`` is decoded and always starts with ``/``. For ``file`` it is the absolute local
    path and ``authority`` is empty; for ``s3`` the authority is the bucket and the object
    key is ``path`` without its leading slash (see :attr:`key`).
    """

    scheme: str
    authority: str
    path: str

    @property
    def bucket(self) -> str:
        return self.authority

    @property
    def key(self) -> str:
        return self.path[1:]

    @property
    def url(self) -> str:
        if self.scheme == "file":
            return "file://" + encode_path(self.path)
        path = "" if self.path == "/" else self.path
        return f"{self.scheme}://{self.authority}{encode_path(path)}"

    def child(self, *segments: str) -> Location:
        base = self.path.rstrip("/")
        path = base + "/" + "/".join(segments) if segments else self.path
        return _canonical(self.scheme, self.authority, path)


def _canonical(scheme: str, authority: str, path: str) -> Location:
    if not path.startswith("/"):
        path = "/" + path
    if scheme == "file":
        path = posixpath.normpath(path)
        if path.startswith("//"):
            # POSIX lets normpath keep exactly two leading slashes; they mean nothing here.
            path = "/" + path.lstrip("/")
    else:
        stripped = path.rstrip("/")
        path = stripped if stripped else "/"
    return Location(scheme, authority, path)


def parse(url: str) -> Location:
    """Parse a storage URL (or an absolute local path) into its canonical :class:`Location`.

    Raises :class:`InvalidStorageUrl` for text that is not an absolute URL or path. Schemes
    other than ``file`` and ``s3`` are parsed generically (``scheme://authority/path``);
    whether a backend exists for them is decided by ``storage_for``.
    """
    if not isinstance(url, str):
        raise InvalidStorageUrl(f"storage URL must be a string, not {type(url).__name__}")
    text = url.strip()
    if not text:
        raise InvalidStorageUrl("storage URL is empty", url=url)
    if "\x00" in text:
        raise InvalidStorageUrl(f"storage URL contains a NUL character: {url!r}", url=url)

    if text.startswith("/"):
        return _canonical("file", "", decode_path(text))

    match = _SCHEME_RE.match(text)
    if not match:
        raise InvalidStorageUrl(
            f"not an absolute storage URL (expected e.g. file:///path or s3://bucket/key): {url!r}",
            url=url,
        )
    scheme = match.group(1).lower()
    scheme = SCHEME_ALIASES.get(scheme, scheme)
    rest = match.group(2)

    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        path = slash + path
    elif scheme == "file" and rest.startswith("/"):
        authority, path = "", rest
    else:
        raise InvalidStorageUrl(f"storage URL has no '//' after '{scheme}:': {url!r}", url=url)

    if scheme == "file":
        if authority not in ("", "localhost"):
            raise InvalidStorageUrl(
                f"file URL names the remote host {authority!r}; use file:///absolute/path: {url!r}",
                url=url,
            )
        authority = ""
    elif not authority:
        what = "bucket" if scheme == "s3" else "authority"
        raise InvalidStorageUrl(f"storage URL has no {what}: {url!r}", url=url)

    return _canonical(scheme, authority, decode_path(path))


def normalize(url: str) -> str:
    """Canonical form of a storage URL, for comparing and storing table locations.

    >>> normalize("file:/tmp/t/")
    'file:///tmp/t'
    >>> normalize("s3a://bucket/a%20b//")
    's3://bucket/a%20b'
    """
    return parse(url).url


def join(base_url: str, *parts: str) -> str:
    """Append path parts to a URL and return the canonical result.

    Parts are plain (not percent-encoded) text; a part may hold several segments separated
    by ``/`` and empty segments are skipped, so ``join(u, "a/", "/b")`` equals
    ``join(u, "a", "b")``. ``.`` and ``..`` segments are rejected. To resolve a
    percent-encoded relative path (like a Delta ``add.path``), decode it first with
    :func:`urllib.parse.unquote`.
    """
    location = parse(base_url)
    segments: list[str] = []
    for part in parts:
        if not isinstance(part, str):
            raise InvalidStorageUrl(f"path part must be a string, not {type(part).__name__}")
        if "\x00" in part:
            raise InvalidStorageUrl(f"path part contains a NUL character: {part!r}")
        for segment in part.split("/"):
            if not segment:
                continue
            if segment in (".", ".."):
                raise InvalidStorageUrl(f"path part may not contain '.' or '..' segments: {part!r}")
            segments.append(segment)
    return location.child(*segments).url
