"""The storage interface against real storage: the local file system and a local
S3-compatible server (SeaweedFS, see tests/s3_server.py). Needs no database."""

from __future__ import annotations

import errno
import os
import threading
import time
import uuid
from dataclasses import dataclass
from urllib.parse import quote

import pytest

from catalog.storage import (
    ConditionalWriteNotSupported,
    InvalidStorageUrl,
    LocalStorage,
    ObjectInfo,
    S3Config,
    S3Storage,
    Storage,
    StorageError,
    StorageObjectNotFound,
    StoragePermissionDenied,
    UnsupportedStorageScheme,
    join,
    normalize,
    storage_for,
)
from catalog.storage import local as local_module
from catalog.storage.s3 import s3_client


@dataclass
class Backend:
    kind: str
    storage: Storage
    base: str  # a fresh, empty prefix for this test

    def url(self, *parts: str) -> str:
        return join(self.base, *parts)


def _isolate_aws(monkeypatch: pytest.MonkeyPatch, settings, tmp_path) -> None:
    # Never let boto3 look for credentials or settings outside the test (and never ask the EC2
    # metadata endpoint).
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    settings.AWS_SESSION_TOKEN = None
    settings.UCWEB_S3_CONDITIONAL_WRITES = True


@pytest.fixture(params=["file", pytest.param("s3", marks=pytest.mark.s3)])
def backend(request, tmp_path, monkeypatch) -> Backend:
    if request.param == "file":
        base = join(tmp_path.as_uri(), "store")
    else:
        server = request.getfixturevalue("s3_server")
        settings = request.getfixturevalue("settings")
        _isolate_aws(monkeypatch, settings, tmp_path)
        for name, value in server.env().items():
            setattr(settings, name, value)
        base = server.url(f"t-{uuid.uuid4().hex[:12]}")
    storage = storage_for(base)
    assert storage.scheme == request.param
    return Backend(request.param, storage, base)


@pytest.fixture
def s3(s3_server, monkeypatch, settings, tmp_path):  # noqa: F811
    _isolate_aws(monkeypatch, settings, tmp_path)
    for name, value in s3_server.env().items():
        setattr(settings, name, value)
    return s3_server


# -- behaviour shared by every backend ------------------------------------------------------


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


def test_rejects_urls_of_another_scheme(backend):
    other = "s3://bucket/key" if backend.kind == "file" else "file:///tmp/key"
    with pytest.raises(InvalidStorageUrl):
        backend.storage.read(other)


# -- local file system specifics ------------------------------------------------------------


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


# -- S3 specifics ---------------------------------------------------------------------------


@pytest.mark.s3
def test_s3_server_honours_if_none_match(s3):
    """The fixture's server must reject a conditional write to an existing key with 412,
    otherwise the put_if_absent tests above would prove nothing."""
    from botocore.exceptions import ClientError

    client = s3.client()
    key = f"conditional-{uuid.uuid4().hex}"
    client.put_object(Bucket=s3.bucket, Key=key, Body=b"1", IfNoneMatch="*")
    with pytest.raises(ClientError) as info:
        client.put_object(Bucket=s3.bucket, Key=key, Body=b"2", IfNoneMatch="*")
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert info.value.response["Error"]["Code"] == "PreconditionFailed"
    assert client.get_object(Bucket=s3.bucket, Key=key)["Body"].read() == b"1"


@pytest.mark.s3
def test_s3a_urls_address_the_same_objects(s3):
    url = s3.url(f"alias-{uuid.uuid4().hex}/f.json")
    storage_for(url).put(url, b"via s3")
    s3a = url.replace("s3://", "s3a://", 1)
    assert isinstance(storage_for(s3a), S3Storage)
    assert storage_for(s3a).read(s3a) == b"via s3"
    assert storage_for(s3a).list(s3a.rsplit("/", 1)[0])[0].url == url


@pytest.mark.s3
def test_s3_directory_placeholders_are_not_objects(s3):
    prefix = f"markers-{uuid.uuid4().hex}"
    s3.client().put_object(Bucket=s3.bucket, Key=f"{prefix}/dir/", Body=b"")
    s3.client().put_object(Bucket=s3.bucket, Key=f"{prefix}/dir/f", Body=b"f")
    storage = storage_for(s3.url(prefix))
    assert [i.url for i in storage.list(s3.url(prefix))] == [s3.url(f"{prefix}/dir/f")]
    assert storage.delete_prefix(s3.url(prefix)) == 1
    assert s3.client().list_objects_v2(Bucket=s3.bucket, Prefix=prefix + "/").get("KeyCount") == 0


@pytest.mark.s3
def test_s3_missing_bucket(s3):
    url = "s3://no-such-bucket-ucweb/x/y.json"
    storage = storage_for(url)
    with pytest.raises(StorageObjectNotFound):
        storage.read(url)
    assert storage.exists(url) is False
    with pytest.raises(StorageError, match="does not exist"):
        storage.list("s3://no-such-bucket-ucweb/x")


@pytest.mark.s3
def test_s3_bad_credentials_raise_permission_denied(s3, settings):
    settings.AWS_SECRET_ACCESS_KEY = "wrong-secret"
    url = s3.url("anything")
    storage = storage_for(url)
    for call in (
        lambda: storage.read(url),
        lambda: storage.put(url, b"x"),
        lambda: storage.put_if_absent(url, b"x"),
        lambda: storage.list(url),
        lambda: storage.exists(url),
    ):
        with pytest.raises(StoragePermissionDenied):
            call()


@pytest.mark.s3
def test_s3_unreachable_endpoint_is_a_storage_error(s3):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    storage = S3Storage(
        S3Config(
            endpoint_url=f"http://127.0.0.1:{port}",
            access_key_id="k",
            secret_access_key="s",
        )
    )
    with pytest.raises(StorageError) as info:
        storage.read("s3://bucket/key")
    assert "cannot read s3://bucket/key" in str(info.value)


@pytest.mark.s3
def test_s3_non_atomic_fallback_when_conditional_writes_are_off(s3, settings):
    settings.UCWEB_S3_CONDITIONAL_WRITES = False
    url = s3.url(f"fallback-{uuid.uuid4().hex}")
    storage = storage_for(url)
    assert storage.config.conditional_writes is False
    assert storage.put_if_absent(url, b"a") is True
    assert storage.put_if_absent(url, b"b") is False
    assert storage.read(url) == b"a"


class _FlakyPuts:
    """Wraps a boto3 client; the first ``PutObject`` calls fail with the given errors."""

    def __init__(self, client, errors):
        self._client = client
        self._errors = list(errors)
        self.put_calls = 0

    def put_object(self, **kwargs):
        self.put_calls += 1
        if self._errors:
            raise self._errors.pop(0)
        return self._client.put_object(**kwargs)

    def __getattr__(self, name):
        return getattr(self._client, name)


def _client_error(code: str, status: int, retries: int = 0):
    from botocore.exceptions import ClientError

    response = {
        "Error": {"Code": code, "Message": code},
        "ResponseMetadata": {"HTTPStatusCode": status, "RetryAttempts": retries},
    }
    return ClientError(response, "PutObject")


@pytest.mark.s3
def test_s3_conditional_conflict_is_retried(s3, monkeypatch):
    url = s3.url(f"conflict-{uuid.uuid4().hex}")
    storage = S3Storage()
    conflict = _client_error("ConditionalRequestConflict", 409)
    flaky = _FlakyPuts(s3_client(storage.config), [conflict])
    monkeypatch.setattr(storage, "_client", lambda: flaky)
    assert storage.put_if_absent(url, b"mine") is True
    assert flaky.put_calls == 2
    assert storage.read(url) == b"mine"

    # Still conflicting after every retry: someone else is writing it; report "exists".
    monkeypatch.setattr("catalog.storage.s3._CONFLICT_BACKOFF", (0.01, 0.01))
    flaky = _FlakyPuts(
        s3_client(storage.config), [_client_error("ConditionalRequestConflict", 409)] * 3
    )
    monkeypatch.setattr(storage, "_client", lambda: flaky)
    assert storage.put_if_absent(s3.url(f"conflict-{uuid.uuid4().hex}"), b"x") is False


@pytest.mark.s3
def test_s3_precondition_failed_after_own_retried_write(s3, monkeypatch):
    """A 412 that botocore got on a retry may be the answer to our own first attempt: the
    stored bytes decide."""
    url = s3.url(f"retried-{uuid.uuid4().hex}")
    storage = S3Storage()
    storage.put(url, b"ours")
    flaky = _FlakyPuts(s3_client(storage.config), [_client_error("PreconditionFailed", 412, 1)])
    monkeypatch.setattr(storage, "_client", lambda: flaky)
    assert storage.put_if_absent(url, b"ours") is True
    flaky = _FlakyPuts(s3_client(storage.config), [_client_error("PreconditionFailed", 412, 1)])
    monkeypatch.setattr(storage, "_client", lambda: flaky)
    assert storage.put_if_absent(url, b"theirs") is False


@pytest.mark.s3
def test_s3_conditional_write_not_implemented(s3, monkeypatch):
    storage = S3Storage()
    flaky = _FlakyPuts(s3_client(storage.config), [_client_error("NotImplemented", 501)])
    monkeypatch.setattr(storage, "_client", lambda: flaky)
    with pytest.raises(ConditionalWriteNotSupported, match="UCWEB_S3_CONDITIONAL_WRITES"):
        storage.put_if_absent(s3.url("not-implemented"), b"x")


def test_s3_clients_are_cached_per_endpoint_and_key():
    a = S3Config(endpoint_url="http://127.0.0.1:1", access_key_id="a", secret_access_key="s")
    b = S3Config(endpoint_url="http://127.0.0.1:1", access_key_id="b", secret_access_key="s")
    assert s3_client(a) is s3_client(S3Config(**a.__dict__))
    assert s3_client(a) is not s3_client(b)
    assert s3_client(a).meta.config.s3["addressing_style"] == "path"


def test_s3_config_from_settings(settings):
    settings.UCWEB_S3_ENDPOINT_URL = None
    settings.UCWEB_S3_REGION = "us-east-1"
    settings.UCWEB_S3_CONDITIONAL_WRITES = True
    settings.AWS_ACCESS_KEY_ID = "AKIDEXAMPLE"
    settings.AWS_SECRET_ACCESS_KEY = "very-secret"
    config = S3Config.from_settings()
    assert config.endpoint_url is None
    assert config.region == "us-east-1"
    assert config.access_key_id == "AKIDEXAMPLE"
    assert config.conditional_writes is True
    assert "very-secret" not in repr(config)

    settings.UCWEB_S3_ENDPOINT_URL = "http://127.0.0.1:9000"
    settings.UCWEB_S3_REGION = "eu-west-1"
    config = S3Config.from_settings()
    assert (config.endpoint_url, config.region) == ("http://127.0.0.1:9000", "eu-west-1")


# -- URLs -----------------------------------------------------------------------------------


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
