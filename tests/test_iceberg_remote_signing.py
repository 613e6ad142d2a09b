"""Remote signing for Iceberg engines with no storage keys of their own, on SeaweedFS with STS and
IAM (tests/seaweedfs_sts.py): pyiceberg's own S3 signer on a boto3 client, raw sign requests, and
the signing of a staged table for its creator only; ucweb refuses to sign what the caller may not
do. Then the checks of a sign request themselves (catalog.storage.signing, pure functions)."""

from __future__ import annotations

import boto3
import pytest
import requests
from botocore import UNSIGNED
from botocore.config import Config
from pyiceberg.io.fsspec import S3V4RestSigner

from catalog.choices import AuditAction, AuditOutcome
from catalog.models import AuditEvent, Catalog, Principal, Table
from catalog.services import grants
from catalog.storage import signing
from tests.iceberg_vending_support import SCHEMA, rows
from tests.iceberg_vending_support import lake  # noqa: F401 - the fixture
from tests.seaweedfs_sts import sts_s3_server  # noqa: F401 - the module-scoped server fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.s3, pytest.mark.xdist_group("iceberg_vending")]


# == remote signing ==================================================================================
def signing_client(lake, name, table):
    """A boto3 S3 client with no keys whose requests pyiceberg's own S3V4RestSigner sends to the
    catalog to be signed, configured from loadTable's config as pyiceberg would be."""
    config = lake.http("GET", f"/namespaces/default/tables/{table}", name=name, delegation="remote-signing").json()
    config = config["config"]
    assert config["s3.remote-signing-enabled"] == "true" and "s3.access-key-id" not in config
    signer = S3V4RestSigner({"uri": lake.uri, "token": lake.token[name], **config})
    client = boto3.session.Session().client(
        "s3", endpoint_url=config["s3.endpoint"], region_name=config["s3.region"],
        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
    client.meta.events.register("before-sign.s3", signer)
    return client


def test_remote_signing_reads_and_writes_the_table_only(lake):
    writer = lake.catalog("writer")
    table = writer.create_table(("default", "signed"), schema=SCHEMA)
    table.append(rows((1, "a")))
    other = writer.create_table(("default", "other"), schema=SCHEMA)
    bucket = lake.server.bucket
    prefix = lake.key(table.metadata.location)
    metadata_key = lake.key(writer.load_table(("default", "signed")).metadata_location)

    s3 = signing_client(lake, "writer", "signed")
    assert s3.get_object(Bucket=bucket, Key=metadata_key)["Body"].read().startswith(b"{")
    assert s3.head_object(Bucket=bucket, Key=metadata_key)["ContentLength"] > 0
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=prefix + "/metadata/")
    assert metadata_key in [item["Key"] for item in listed["Contents"]]
    s3.put_object(Bucket=bucket, Key=f"{prefix}/data/signed.txt", Body=b"hello")
    assert lake.server.client().get_object(Bucket=bucket, Key=f"{prefix}/data/signed.txt")["Body"].read() == b"hello"
    upload = s3.create_multipart_upload(Bucket=bucket, Key=f"{prefix}/data/big.bin")
    part = s3.upload_part(Bucket=bucket, Key=f"{prefix}/data/big.bin", UploadId=upload["UploadId"], PartNumber=1,
                          Body=b"z" * 1024)
    s3.complete_multipart_upload(Bucket=bucket, Key=f"{prefix}/data/big.bin", UploadId=upload["UploadId"],
                                 MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]})
    s3.delete_object(Bucket=bucket, Key=f"{prefix}/data/signed.txt")

    from pyiceberg.exceptions import SignError

    other_key = lake.key(other.metadata_location)
    with pytest.raises(SignError, match="403"):
        s3.get_object(Bucket=bucket, Key=other_key)
    with pytest.raises(SignError, match="403"):
        s3.list_objects_v2(Bucket=bucket, Prefix=prefix.rsplit("/", 1)[0] + "/")

    reader = signing_client(lake, "reader", "signed")
    assert reader.get_object(Bucket=bucket, Key=metadata_key)["Body"].read().startswith(b"{")
    with pytest.raises(SignError, match="403"):
        reader.put_object(Bucket=bucket, Key=f"{prefix}/data/nope.txt", Body=b"x")
    with pytest.raises(SignError, match="403"):
        reader.delete_object(Bucket=bucket, Key=metadata_key)
    assert lake.server.client().get_object(Bucket=bucket, Key=metadata_key)["Body"].read()


def test_sign_requests_outside_the_rules_are_refused(lake):
    writer = lake.catalog("writer")
    table = writer.create_table(("default", "t1"), schema=SCHEMA)
    writer.create_table(("default", "t2"), schema=SCHEMA)
    config = lake.http("GET", "/namespaces/default/tables/t1", name="writer", delegation="remote-signing").json()
    config = config["config"]
    endpoint, bucket = config["s3.endpoint"], lake.server.bucket
    prefix = lake.key(table.metadata.location)
    sign_path = "/namespaces/default/tables/t1/sign"
    table_id = Table.objects.get(name="t1").id

    def sign(method, uri, name="writer", **extra):
        body = {"region": "us-east-1", "method": method, "uri": uri, "headers": {}, **extra}
        return lake.http("POST", sign_path, name=name, delegation=None, json=body)

    ok = sign("GET", f"{endpoint}/{bucket}/{prefix}/metadata/x.json")
    assert ok.status_code == 200, ok.text
    signed = AuditEvent.objects.filter(action=AuditAction.SIGN_ICEBERG_REQUEST).latest("id")
    assert (signed.principal, signed.securable_id, signed.outcome, signed.details["method"]) == (
        "writer", Table.objects.get(name="t1").id, AuditOutcome.SUCCESS, "GET")
    assert signed.details["uri"] == f"{endpoint}/{bucket}/{prefix}/metadata/x.json"
    assert ok.json()["headers"]["Authorization"][0].startswith("AWS4-HMAC-SHA256")
    assert ok.headers["Cache-Control"] == "no-cache"
    refused = [
        ("GET", f"{endpoint}/{bucket}/{prefix.rsplit('/', 1)[0]}/other/metadata/x.json", {}),  # another table
        ("GET", f"{endpoint}/{bucket}/{prefix}x/a", {}),  # a sibling sharing the text prefix
        ("GET", f"{endpoint}/{bucket}/{prefix}/../other/a", {}),  # dot segments
        ("GET", f"{endpoint}/{bucket}/{prefix}/%2E%2E/other/a", {}),  # encoded dot segments
        ("GET", f"{endpoint}/other-bucket/{prefix}/a", {}),  # another bucket
        ("GET", f"http://evil.example/{bucket}/{prefix}/a", {}),  # another host
        ("PUT", f"{endpoint}/{bucket}/{prefix}/a?acl", {}),  # not a data call
        ("GET", f"{endpoint}/{bucket}?list-type=2&prefix={prefix.rsplit('/', 1)[0]}/", {}),  # lists beyond
        ("GET", f"{endpoint}/{bucket}?list-type=2", {}),  # lists the bucket
        ("PUT", f"{endpoint}/{bucket}/{prefix}/a", {"headers": {"x-amz-acl": ["public-read"]}}),
        ("PUT", f"{endpoint}/{bucket}/{prefix}/a", {"headers": {"x-amz-copy-source": [f"{bucket}/elsewhere/a"]}}),
        ("POST", f"{endpoint}/{bucket}?delete",
         {"body": f"<Delete><Object><Key>{prefix}/a</Key></Object><Object><Key>elsewhere/b</Key></Object></Delete>"}),
        ("DELETE", f"{endpoint}/{bucket}", {}),  # the bucket itself
    ]
    for method, uri, extra in refused:
        before = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first()
        response = sign(method, uri, **extra)
        assert response.status_code == 403, (method, uri, response.text)
        assert response.json()["error"]["type"] == "ForbiddenException"
        (refusal,) = AuditEvent.objects.filter(id__gt=before)
        assert (refusal.action, refusal.securable_id, refusal.outcome) == (
            AuditAction.SIGN_ICEBERG_REQUEST, table_id, AuditOutcome.DENIED), (method, uri)
    assert sign("PUT", f"{endpoint}/{bucket}/{prefix}/data/a", name="reader").status_code == 403
    assert sign("GET", f"{endpoint}/{bucket}/{prefix}/data/a", name="reader").status_code == 200
    for bad in ({"method": "GET"}, {"method": "GET", "uri": 5, "headers": {}},
                {"method": "GET", "uri": f"{endpoint}/{bucket}/{prefix}/a", "headers": {"a": [1]}},
                {"method": "GET", "uri": f"{endpoint}/{bucket}/{prefix}/a", "headers": {"a\nb": ["x"]}},
                {"method": "GET", "uri": f"{endpoint}/{bucket}/{prefix}/a", "headers": {"a": ["\u00e9"]}},
                {"method": ["GET"], "uri": f"{endpoint}/{bucket}/{prefix}/a", "headers": {}},
                {"method": "GET", "uri": f"{endpoint}/{bucket}/{prefix}/a", "headers": [], "body": 3}):
        assert lake.http("POST", sign_path, name="writer", delegation=None, json=bad).status_code == 400
    # No grant on the table at all: nothing is signed.
    grants.update_assignments(securable_type="catalog", securable=Catalog.objects.get(name="unity"),
                              caller=Principal.objects.get(name="admin"), access=None,
                              changes=[{"principal": "reader", "add": [], "remove": ["SELECT"]}])
    # Without any privilege on the table it is not visible to the reader: it answers as a missing one.
    response = sign("GET", f"{endpoint}/{bucket}/{prefix}/data/a", name="reader")
    assert response.status_code == 404 and response.json()["error"]["type"] == "NoSuchTableException"


def test_a_staged_table_is_signed_for_its_creator_only(lake):
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
    staged = lake.http("POST", "/namespaces/default/tables", name="writer", delegation="remote-signing",
                       json={"name": "ctas", "schema": schema, "stage-create": True}).json()
    config, location = staged["config"], staged["metadata"]["location"]
    endpoint = config["s3.signer.endpoint"]
    assert endpoint.startswith("v1/unity/namespaces/default/tables/ctas/sign/")
    uri = f"{config['s3.endpoint']}/{lake.server.bucket}/{lake.key(location)}/data/part-0.parquet"

    def sign(path, name="writer", target=uri):
        return requests.post(f"{config['s3.signer.uri']}/{path}", timeout=60,
                             headers={"Authorization": f"Bearer {lake.token[name]}"},
                             json={"region": "us-east-1", "method": "PUT", "uri": target, "headers": {}})

    signed = sign(endpoint)
    assert signed.status_code == 200, signed.text
    headers = {name: ", ".join(values) for name, values in signed.json()["headers"].items()}
    put = requests.put(uri, data=b"parquet bytes", headers=headers, timeout=60)
    assert put.status_code == 200, put.text
    assert lake.server.client().get_object(Bucket=lake.server.bucket,
                                           Key=f"{lake.key(location)}/data/part-0.parquet")["Body"].read()
    # Another principal cannot use the creator's endpoint; a changed token is refused; the
    # token's location is the only one signed; without the token the table does not exist.
    assert sign(endpoint, name="reader").status_code == 403
    assert sign(endpoint[:-3] + ("AAA" if not endpoint.endswith("AAA") else "BBB")).status_code == 403
    other = f"{config['s3.endpoint']}/{lake.server.bucket}/{lake.key(location)}x/data/a"
    assert sign(endpoint, target=other).status_code == 403
    assert sign("v1/unity/namespaces/default/tables/ctas/sign").status_code == 404


# == the request checks (pure) ==========================================================================
TARGET = signing.Target(bucket="lake", prefix="tables/t1", endpoint="http://s3.local:8333", region="us-east-1")


@pytest.mark.parametrize("method,uri,expected", [
    ("GET", "http://s3.local:8333/lake/tables/t1/metadata/v1.json", signing.READ),
    ("HEAD", "http://s3.local:8333/lake/tables/t1/data/a%20b.parquet", signing.READ),
    ("GET", "http://lake.s3.local:8333/tables/t1/metadata/v1.json", signing.READ),
    ("GET", "http://s3.local:8333/lake?list-type=2&prefix=tables/t1/data/", signing.READ),
    ("PUT", "http://s3.local:8333/lake/tables/t1/data/f.parquet", signing.WRITE),
    ("PUT", "http://s3.local:8333/lake/tables/t1/data/f.parquet?partNumber=2&uploadId=u", signing.WRITE),
    ("POST", "http://s3.local:8333/lake/tables/t1/data/f.parquet?uploads", signing.WRITE),
    ("POST", "http://s3.local:8333/lake/tables/t1/data/f.parquet?uploadId=u", signing.WRITE),
    ("DELETE", "http://s3.local:8333/lake/tables/t1/data/f.parquet?uploadId=u", signing.WRITE),
    ("DELETE", "http://s3.local:8333/lake/tables/t1/data/f.parquet", signing.WRITE),
])
def test_allowed_requests(method, uri, expected):
    assert signing.check(method=method, url=uri, headers={}, body=None, target=TARGET).access == expected


@pytest.mark.parametrize("method,uri", [
    ("GET", "https://s3.local:8333/lake/tables/t1/a"),
    ("GET", "http://s3.local:8333/lake/tables/t1"),
    ("GET", "http://s3.local:8333/lake/tables/t1//a"),
    ("GET", "http://s3.local:8333/lake/tables/t1/./a"),
    ("GET", "http://s3.local:8333/lake/tables/t1/a?acl"),
    ("GET", "http://s3.local:8333/lake/tables/t1/a?tagging"),
    ("GET", "http://s3.local:8333/lake/tables/t1/a?versionId=1&versionId=2"),
    ("PUT", "http://s3.local:8333/lake/tables/t1/a?tagging"),
    ("PUT", "http://s3.local:8333/lake/tables/t1/a?partNumber=1"),
    ("PATCH", "http://s3.local:8333/lake/tables/t1/a"),
    ("OPTIONS", "http://s3.local:8333/lake/tables/t1/a"),
    ("GET", "http://s3.local:8333/lake?prefix=tables/t1"),
    ("GET", "http://s3.local:8333/lake?list-type=2&prefix=tables/t1/&x=1"),
    ("GET", "http://s3.local:8333/lake?policy"),
    ("PUT", "http://s3.local:8333/lake?policy"),
    ("GET", "http://u:p@s3.local:8333/lake/tables/t1/a"),
    ("GET", "http://s3.local:8333/lake/tables/t1/a#x"),
])
def test_refused_requests(method, uri):
    with pytest.raises(signing.Refused):
        signing.check(method=method, url=uri, headers={}, body=None, target=TARGET)


def test_delete_objects_binds_its_body():
    body = "<Delete><Object><Key>tables/t1/data/a</Key></Object></Delete>"
    checked = signing.check(method="POST", url="http://s3.local:8333/lake?delete", headers={}, body=body,
                            target=TARGET)
    assert checked.access == signing.WRITE and checked.payload_hash != signing.UNSIGNED_PAYLOAD
    headers = signing.sign(method="POST", url="http://s3.local:8333/lake?delete", checked=checked,
                           region="us-east-1", access_key_id="AKID", secret_access_key="secret")
    assert headers["X-Amz-Content-SHA256"] == [checked.payload_hash]
    assert "secret" not in str(headers)
    with pytest.raises(signing.Refused):
        signing.check(method="POST", url="http://s3.local:8333/lake?delete", headers={}, body=None, target=TARGET)


def test_payload_hashes():
    url = "http://s3.local:8333/lake/tables/t1/data/a"
    for value in ("UNSIGNED-PAYLOAD", "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "a" * 64):
        checked = signing.check(method="PUT", url=url, headers={"X-Amz-Content-SHA256": value}, body=None,
                                target=TARGET)
        assert checked.payload_hash == value and "X-Amz-Content-SHA256" not in checked.headers
    for value in ("STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "nothex", "A" * 64):
        with pytest.raises(signing.Refused):
            signing.check(method="PUT", url=url, headers={"x-amz-content-sha256": value}, body=None, target=TARGET)


def test_non_ascii_uris_are_refused():
    with pytest.raises(signing.Refused):
        signing.check(method="GET", url="http://s3.local:8333/lake/tables/t1/\u00e9", headers={}, body=None,
                      target=TARGET)
    percent = signing.check(method="GET", url="http://s3.local:8333/lake/tables/t1/%C3%A9", headers={}, body=None,
                            target=TARGET)
    assert percent.access == signing.READ
