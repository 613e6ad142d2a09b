"""Remote signing of S3 requests for one table location (the Iceberg REST `sign` endpoint).

An engine that holds no keys sends each S3 request it is about to make (method, URI, headers,
and the body of a DeleteObjects call) to the catalog; the catalog checks that the request touches
only objects of that table and is of a kind the caller may make, then signs it with SigV4 and
answers the headers to send. The signing key never leaves the server.

`check` is pure: it says whether a request is a read, a write, or refused. For a table stored at
`s3://lake/tables/t1` (path-style endpoint `http://s3.local:8333`):

    GET    http://s3.local:8333/lake/tables/t1/metadata/v1.json             -> read
    GET    http://s3.local:8333/lake?list-type=2&prefix=tables/t1/data/     -> read
    PUT    http://s3.local:8333/lake/tables/t1/data/f.parquet               -> write
    POST   http://s3.local:8333/lake/tables/t1/data/f.parquet?uploads       -> write (multipart)
    POST   http://s3.local:8333/lake?delete  (every <Key> under tables/t1/) -> write
    GET    http://s3.local:8333/lake/tables/t2/metadata/v1.json             -> refused: another prefix
    GET    http://s3.local:8333/lake/tables/t1x/a                           -> refused: a sibling
    GET    http://s3.local:8333/lake/tables/t1/../t2/a                      -> refused: dot segments
    PUT    http://s3.local:8333/lake/tables/t1/a?acl                        -> refused: not a data call
    GET    http://s3.local:8333/lake?list-type=2&prefix=tables/             -> refused: lists beyond t1

Everything not in the table above (bucket calls, ACLs, tagging, policies, lifecycle, versions
listing, another host, a copy from outside the table, ACL or object-lock headers) is refused.
"""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

READ = "read"
WRITE = "write"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
MAX_BODY_BYTES = 1 << 20

# Query parameters that do not change what an object call does.
_OBJECT_READ_PARAMS = {"versionId", "partNumber", "x-id"}
_LIST_PARAMS = {"list-type", "prefix", "delimiter", "continuation-token", "start-after", "max-keys",
                "encoding-type", "fetch-owner", "marker", "x-id"}
# Headers a signed request may not carry: they would change who may read the object or how
# long it must be kept, which is the catalog's business, not a writer's.
_FORBIDDEN_HEADER = re.compile(r"^(x-amz-acl|x-amz-grant-.*|x-amz-object-lock-.*|x-amz-bypass-governance-retention"
                               r"|x-amz-website-redirect-location)$")
# Headers that the signature itself sets (a client's own values are dropped).
_SIGNATURE_HEADERS = {"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256", "host"}
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
# Payloads the signature does not cover (the object store checks a trailing checksum, if any).
_UNSIGNED_PAYLOADS = {UNSIGNED_PAYLOAD, "STREAMING-UNSIGNED-PAYLOAD-TRAILER"}


class Refused(Exception):
    """The request is not one the catalog signs for this table (the message says why)."""


@dataclass(frozen=True)
class Target:
    """Where a table's objects live: its bucket, its key prefix (no trailing slash) and the S3
    endpoint that serves them (None: AWS S3 itself)."""

    bucket: str
    prefix: str
    endpoint: str | None
    region: str


@dataclass(frozen=True)
class Checked:
    """A request that may be signed: what kind of access it needs, the payload hash to sign it
    with, and the headers to sign (the client's, minus those the signature sets)."""

    access: str
    payload_hash: str
    headers: dict[str, str]


def _within(key: str, prefix: str) -> bool:
    return key.startswith(prefix + "/") if prefix else True


def _hosts(target: Target) -> tuple[str, list[str]]:
    """The scheme and the path-style hosts that may serve the target bucket."""
    if target.endpoint:
        parts = urlsplit(target.endpoint)
        return parts.scheme.lower(), [parts.netloc.lower()]
    return "https", ["s3.amazonaws.com", f"s3.{target.region}.amazonaws.com"]


def _bucket_and_key(url: str, target: Target) -> tuple[str, str, str]:
    """(bucket, decoded key, raw query) of a path-style or virtual-hosted S3 URL of the target."""
    if not url.isascii():
        raise Refused("The uri must be ASCII (percent-encode the key).")
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.lower()
    except ValueError:
        raise Refused("The uri is not a URL.") from None
    if parts.fragment or parts.username or parts.password:
        raise Refused("The uri must not carry a fragment or user information.")
    scheme, hosts = _hosts(target)
    if parts.scheme.lower() != scheme:
        raise Refused(f"The uri must use {scheme}:// for this table's storage.")
    path = parts.path or "/"
    if netloc in hosts:
        bucket, _, raw_key = path[1:].partition("/")
    elif netloc in {f"{target.bucket.lower()}.{host}" for host in hosts}:
        bucket, raw_key = target.bucket, path[1:]
    else:
        raise Refused("The uri does not address this table's storage endpoint.")
    if unquote(bucket) != target.bucket:
        raise Refused("The uri addresses another bucket.")
    key = unquote(raw_key)
    if key:
        _require_plain_key(key)
    return bucket, key, parts.query


def _require_plain_key(key: str) -> None:
    segments = key.split("/")
    if any(segment in ("", ".", "..") for segment in segments[:-1]) or segments[-1] in (".", ".."):
        raise Refused("Object keys with empty, '.' or '..' segments are not signed.")
    if any(ord(char) < 0x20 or char == "\x7f" for char in key):
        raise Refused("Object keys with control characters are not signed.")


def _query(raw: str) -> dict[str, str]:
    """The decoded parameters of a query string (`uploads` and `delete` have no value)."""
    pairs = []
    for piece in raw.split("&") if raw else []:
        name, _, value = piece.partition("=")
        if not name:
            raise Refused("The query string has an empty parameter.")
        pairs.append((unquote(name), unquote(value)))
    names = [name for name, _ in pairs]
    if len(names) != len(set(names)):
        raise Refused("A query parameter appears twice.")
    return dict(pairs)


def _copy_source(value: str, target: Target) -> None:
    source = unquote(value.split("?", 1)[0]).lstrip("/")
    bucket, _, key = source.partition("/")
    if bucket != target.bucket or not _within(key, target.prefix):
        raise Refused("A copy must come from this table's own objects.")
    _require_plain_key(key)


def _deleted_keys(body: str | None, target: Target) -> None:
    if not body:
        raise Refused("A DeleteObjects request is signed only with its body.")
    if len(body.encode()) > MAX_BODY_BYTES:
        raise Refused("The DeleteObjects body is too large.")
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        raise Refused("The DeleteObjects body is not XML.") from None
    keys = [element.text or "" for element in root.iter() if element.tag.rsplit("}", 1)[-1] == "Key"]
    if not keys:
        raise Refused("The DeleteObjects body names no key.")
    for key in keys:
        if not _within(key, target.prefix):
            raise Refused("The DeleteObjects body names a key outside this table.")
        _require_plain_key(key)


def check(*, method: str, url: str, headers: dict[str, str], body: str | None, target: Target) -> Checked:
    """Whether the S3 request may be signed for `target`, and as a read or a write. Raises
    Refused otherwise. `headers` maps each name to its (comma-joined) value."""
    method = method.upper() if isinstance(method, str) else ""
    _, key, raw_query = _bucket_and_key(url, target)
    query = _query(raw_query)
    names = set(query)
    lowered = {name.lower(): value for name, value in headers.items()}
    for name in lowered:
        if _FORBIDDEN_HEADER.match(name):
            raise Refused(f"Requests with a {name} header are not signed.")
    payload = lowered.get("x-amz-content-sha256", UNSIGNED_PAYLOAD)
    if payload not in _UNSIGNED_PAYLOADS and not _HEX64.match(payload):
        raise Refused("x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER or "
                      "a SHA-256 hex digest (chunk signatures need the key, which stays on the server).")

    if key:
        if not _within(key, target.prefix):
            raise Refused("The object is not under this table's location.")
        response_params = {name for name in names if name.startswith("response-")}
        if method in ("GET", "HEAD") and names - response_params <= _OBJECT_READ_PARAMS:
            access = READ
        elif method == "GET" and names <= {"uploadId", "max-parts", "part-number-marker", "x-id"} \
                and "uploadId" in names:
            access = WRITE  # ListParts of one's own upload
        elif method == "PUT" and (names <= {"x-id"} or names <= {"partNumber", "uploadId", "x-id"}
                                  and {"partNumber", "uploadId"} <= names):
            access = WRITE
        elif method == "POST" and (names <= {"uploads", "x-id"} and "uploads" in names
                                   or names <= {"uploadId", "x-id"} and "uploadId" in names):
            access = WRITE
        elif method == "DELETE" and names <= {"versionId", "uploadId", "x-id"}:
            access = WRITE
        else:
            raise Refused(f"{method} with query parameters {sorted(names)} is not a table data call.")
        if "x-amz-copy-source" in lowered:
            if method != "PUT":
                raise Refused("x-amz-copy-source is only signed on PUT.")
            _copy_source(lowered["x-amz-copy-source"], target)
    elif method == "GET" and names <= _LIST_PARAMS and "prefix" in names:
        if not _within(query["prefix"], target.prefix):
            raise Refused("A listing must stay under this table's location.")
        access = READ
    elif method == "POST" and names <= {"delete", "x-id"} and "delete" in names:
        _deleted_keys(body, target)
        access = WRITE
        # The body is bound to the signature: another list of keys would not verify.
        payload = hashlib.sha256(body.encode()).hexdigest()
    else:
        raise Refused(f"{method} on the bucket with query parameters {sorted(names)} is not signed.")
    kept = {name: value for name, value in headers.items() if name.lower() not in _SIGNATURE_HEADERS}
    return Checked(access=access, payload_hash=payload, headers=kept)


def sign(*, method: str, url: str, checked: Checked, region: str, access_key_id: str, secret_access_key: str,
         session_token: str | None = None) -> dict[str, list[str]]:
    """SigV4 headers for the checked request: the client's headers plus Authorization,
    X-Amz-Date, X-Amz-Content-SHA256 and (with temporary keys) X-Amz-Security-Token."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    payload_hash = checked.payload_hash

    class _Signer(S3SigV4Auth):
        def payload(self, request):
            return payload_hash

    request = AWSRequest(method=method.upper(), url=url, headers=dict(checked.headers))
    _Signer(Credentials(access_key_id, secret_access_key, session_token), "s3", region).add_auth(request)
    return {name: [value] for name, value in request.headers.items()}
