"""What the S3 storage does beyond the behaviour every backend shares (see
test_storage_backends.py), against a local S3-compatible server (SeaweedFS, see
tests/s3_server.py): conditional writes, s3a URLs, directory placeholders, missing buckets, bad
credentials, unreachable endpoints, retried and unsupported conditional writes; and its
configuration and clients. Needs no database."""

from __future__ import annotations

import uuid

import pytest

from catalog.storage import (
    ConditionalWriteNotSupported,
    S3Config,
    S3Storage,
    StorageError,
    StorageObjectNotFound,
    StoragePermissionDenied,
    storage_for,
)
from catalog.storage.s3 import s3_client
from tests.storage_support import isolate_aws


@pytest.fixture
def s3(s3_server, monkeypatch, settings, tmp_path):  # noqa: F811
    isolate_aws(monkeypatch, settings, tmp_path)
    for name, value in s3_server.env().items():
        setattr(settings, name, value)
    return s3_server


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
