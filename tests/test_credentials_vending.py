"""Credential vending: the session policy document (a pure function), and vended S3 credentials
used against a real S3-compatible server whose STS enforces session policies (SeaweedFS started
with its IAM engine, tests/seaweedfs_sts.py): inside the securable's prefix reads work, outside
they are denied, and a READ credential cannot write."""

from __future__ import annotations

import time

import pytest
from unitycatalog.client import TemporaryCredentialsApi
from unitycatalog.client.exceptions import ApiException, ForbiddenException, NotFoundException
from unitycatalog.client.models import (
    GenerateTemporaryPathCredential,
    GenerateTemporaryTableCredential,
    GenerateTemporaryVolumeCredential,
    PathOperation,
    Privilege,
    SecurableType,
    TableOperation,
    VolumeOperation,
)

from catalog.models import AuditEvent
from catalog.services import principals
from catalog.storage.vending import escape_iam, session_name, session_policy
from tests.helpers import UC, external_table_body, grant
from tests.seaweedfs_sts import allowed, fresh_prefix, register_trips
from tests.seaweedfs_sts import sts_s3_server  # noqa: F401 - the module-scoped server fixture

# One SeaweedFS with STS for the module (sts_s3_server), so one test process runs it.
pytestmark = pytest.mark.xdist_group("credentials_vending")


# == the session policy document ===================================================================
def test_read_policy_is_limited_to_the_prefix():
    assert session_policy("s3://lake/tables/t1", write=False) == {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "ObjectsUnderPrefix", "Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectVersion"],
             "Resource": ["arn:aws:s3:::lake/tables/t1", "arn:aws:s3:::lake/tables/t1/*"]},
            {"Sid": "ListPrefix", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": ["arn:aws:s3:::lake"],
             "Condition": {"StringLike": {"s3:prefix": ["tables/t1", "tables/t1/*"]}}},
            {"Sid": "BucketLocation", "Effect": "Allow", "Action": ["s3:GetBucketLocation"],
             "Resource": ["arn:aws:s3:::lake"]},
        ],
    }


def test_write_policy_adds_only_object_writes():
    policy = session_policy("s3a://lake/tables/t1/", write=True)
    objects, listing, location = policy["Statement"]
    assert objects["Action"] == [
        "s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload",
        "s3:ListMultipartUploadParts"]
    assert objects["Resource"] == ["arn:aws:s3:::lake/tables/t1", "arn:aws:s3:::lake/tables/t1/*"]
    assert listing["Action"] == ["s3:ListBucket"] and location["Action"] == ["s3:GetBucketLocation"]
    # Nothing grants bucket-wide writes or any non-S3 action.
    every_action = [action for statement in policy["Statement"] for action in statement["Action"]]
    assert all(action.startswith("s3:") and "*" not in action for action in every_action)
    assert all(statement["Effect"] == "Allow" for statement in policy["Statement"])


def test_policy_for_a_whole_bucket_and_for_odd_keys():
    whole = session_policy("s3://lake", write=False)
    assert whole["Statement"][0]["Resource"] == ["arn:aws:s3:::lake/*"]
    assert "Condition" not in whole["Statement"][1]
    # `*`, `?` and `$` in a key are IAM wildcards or variables: they are escaped, never widened.
    odd = session_policy("s3://lake/a*b/c?d/$e%20f", write=False)
    assert odd["Statement"][0]["Resource"] == ["arn:aws:s3:::lake/a${*}b/c${?}d/${$}e f",
                                               "arn:aws:s3:::lake/a${*}b/c${?}d/${$}e f/*"]
    assert odd["Statement"][1]["Condition"]["StringLike"]["s3:prefix"][0] == "a${*}b/c${?}d/${$}e f"
    assert escape_iam("plain/key") == "plain/key"
    with pytest.raises(ValueError):
        session_policy("file:///tmp/x", write=False)


def test_session_names_are_valid_sts_names():
    assert session_name("bob") == "ucweb-bob"
    odd = session_name("ana maría/ops:admin" * 3)
    assert 2 <= len(odd) <= 32 and all(c.isalnum() or c in "_+=,.@-" for c in odd)


# == vended credentials against SeaweedFS with STS =================================================
@pytest.fixture
def lake(sts_s3_server, settings, live_server, bootstrap, make_client, uc_sdk):  # noqa: F811
    """A credential (the server's static admin keys, which assume the vending role), an external
    location s3://<bucket>/<random>/ext, an EXTERNAL table `unity.default.trips` under it, objects
    inside and outside the table, and managed storage on the same server."""
    prefix = fresh_prefix(sts_s3_server, settings)
    admin = make_client("admin", admin=True)
    location_url = sts_s3_server.url(f"{prefix}/ext")
    register_trips(admin, sts_s3_server, prefix, data_source_format="PARQUET",
                   columns=[{"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0}])
    s3 = sts_s3_server.client()
    keys = {
        "inside": f"{prefix}/ext/trips/part-0.parquet",
        "sibling": f"{prefix}/ext/tripsx/part-0.parquet",  # shares the text prefix, not the folder
        "other": f"{prefix}/ext/other/part-0.parquet",
        "outside": f"{prefix}/elsewhere.txt",
    }
    for key in keys.values():
        s3.put_object(Bucket=sts_s3_server.bucket, Key=key, Body=key.encode())
    principals.ensure_principal(name="bob")
    table_id = admin.get(f"{UC}/tables/unity.default.trips").json()["table_id"]
    return {"server": sts_s3_server, "prefix": prefix, "keys": keys, "table_id": table_id, "sdk": uc_sdk,
            "admin": admin, "location_url": location_url}


def s3_with(server, credentials):
    aws = credentials.aws_temp_credentials
    return server.client(access_key=aws.access_key_id, secret_key=aws.secret_access_key,
                         session_token=aws.session_token)


@pytest.mark.django_db(transaction=True)
@pytest.mark.s3
def test_table_read_credentials_are_scoped_to_the_table(lake):
    server, keys, sdk, bucket = lake["server"], lake["keys"], lake["sdk"], lake["server"].bucket
    request = GenerateTemporaryTableCredential(table_id=lake["table_id"], operation=TableOperation.READ)
    # A table bob may not see answers as a missing one (no existence oracle).
    with pytest.raises(NotFoundException):
        sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_table_credentials(request))
    grant("bob", SecurableType.CATALOG, "unity", Privilege.USE_CATALOG)
    grant("bob", SecurableType.SCHEMA, "unity.default", Privilege.USE_SCHEMA)
    grant("bob", SecurableType.TABLE, "unity.default.trips", Privilege.SELECT)
    before = time.time() * 1000
    vended = sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_table_credentials(request))
    assert vended.url == f"{lake['location_url']}/trips"
    assert before + 10 * 60 * 1000 < vended.expiration_time <= before + 3700 * 1000
    assert vended.aws_temp_credentials.session_token
    assert vended.aws_temp_credentials.access_key_id != server.access_key

    s3 = s3_with(server, vended)
    assert s3.get_object(Bucket=bucket, Key=keys["inside"])["Body"].read() == keys["inside"].encode()
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"{lake['prefix']}/ext/trips/")
    assert [o["Key"] for o in listed["Contents"]] == [keys["inside"]]
    for key in ("sibling", "other", "outside"):
        assert not allowed(lambda k=key: s3.get_object(Bucket=bucket, Key=keys[k])), key
    assert not allowed(lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{lake['prefix']}/ext/other/"))
    assert not allowed(lambda: s3.put_object(Bucket=bucket, Key=keys["inside"], Body=b"overwritten"))
    assert not allowed(lambda: s3.delete_object(Bucket=bucket, Key=keys["inside"]))
    assert server.client().get_object(Bucket=bucket, Key=keys["inside"])["Body"].read() == keys["inside"].encode()

    # Asked for READ_WRITE without MODIFY (delta-rs always asks so), bob still gets read-only keys.
    write_request = GenerateTemporaryTableCredential(table_id=lake["table_id"], operation=TableOperation.READ_WRITE)
    downgraded = sdk.run(TemporaryCredentialsApi, "bob",
                         lambda api: api.generate_temporary_table_credentials(write_request))
    s3 = s3_with(server, downgraded)
    assert s3.get_object(Bucket=bucket, Key=keys["inside"])["Body"].read() == keys["inside"].encode()
    assert not allowed(lambda: s3.put_object(Bucket=bucket, Key=keys["inside"], Body=b"overwritten"))
    events = AuditEvent.objects.filter(action="generateTemporaryTableCredentials", principal="bob",
                                    outcome="SUCCESS")
    assert sorted((e.details["operation"], e.details["vended"]) for e in events) == [
        ("READ", "READ"), ("READ_WRITE", "READ")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.s3
def test_table_write_credentials_write_inside_only(lake):
    server, keys, sdk, bucket = lake["server"], lake["keys"], lake["sdk"], lake["server"].bucket
    grant("bob", SecurableType.CATALOG, "unity", Privilege.USE_CATALOG)
    grant("bob", SecurableType.SCHEMA, "unity.default", Privilege.USE_SCHEMA)
    grant("bob", SecurableType.TABLE, "unity.default.trips", Privilege.SELECT, Privilege.MODIFY)
    vended = sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_table_credentials(
        GenerateTemporaryTableCredential(table_id=lake["table_id"], operation=TableOperation.READ_WRITE)))
    s3 = s3_with(server, vended)
    new_key = f"{lake['prefix']}/ext/trips/part-1.parquet"
    s3.put_object(Bucket=bucket, Key=new_key, Body=b"new")
    assert server.client().get_object(Bucket=bucket, Key=new_key)["Body"].read() == b"new"
    s3.delete_object(Bucket=bucket, Key=new_key)
    for key in ("sibling", "other", "outside"):
        assert not allowed(lambda k=key: s3.put_object(Bucket=bucket, Key=keys[k], Body=b"x")), key
        assert not allowed(lambda k=key: s3.delete_object(Bucket=bucket, Key=keys[k])), key
    assert server.client().get_object(Bucket=bucket, Key=keys["other"])["Body"].read() == keys["other"].encode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.s3
def test_a_directory_registered_with_its_slash_is_vended_the_same_scope(lake):
    """The location is answered with the slash it was registered with; the credentials cover the
    directory, as for a location registered without it: not a sibling that shares its text."""
    server, sdk, admin, prefix = lake["server"], lake["sdk"], lake["admin"], lake["prefix"]
    bucket = server.bucket
    location = f"{lake['location_url']}/dir/"
    response = admin.post(f"{UC}/tables", external_table_body("dir", location, catalog="unity", schema="default"),
                          format="json")
    assert response.status_code == 200 and response.json()["storage_location"] == location, response.content
    inside, sibling = f"{prefix}/ext/dir/part-0.parquet", f"{prefix}/ext/dirx/part-0.parquet"
    for key in (inside, sibling):
        server.client().put_object(Bucket=bucket, Key=key, Body=key.encode())
    vended = sdk.run(TemporaryCredentialsApi, "admin", lambda api: api.generate_temporary_table_credentials(
        GenerateTemporaryTableCredential(table_id=response.json()["table_id"], operation=TableOperation.READ)))
    assert vended.url == location.rstrip("/")  # the scope: the canonical directory
    assert session_policy(vended.url, write=False) == session_policy(f"{lake['location_url']}/dir", write=False)
    s3 = s3_with(server, vended)
    assert s3.get_object(Bucket=bucket, Key=inside)["Body"].read() == inside.encode()
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/ext/dir/")["Contents"]] == [inside]
    for key in (sibling, lake["keys"]["inside"]):
        assert not allowed(lambda k=key: s3.get_object(Bucket=bucket, Key=k)), key
    assert not allowed(lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/ext/dirx/"))


@pytest.mark.django_db(transaction=True)
@pytest.mark.s3
def test_path_credentials_follow_the_external_location_grants(lake):
    server, keys, sdk, bucket = lake["server"], lake["keys"], lake["sdk"], lake["server"].bucket
    url = f"{lake['location_url']}/other"
    read = GenerateTemporaryPathCredential(url=url, operation=PathOperation.PATH_READ)
    with pytest.raises(ForbiddenException):
        sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_path_credentials(read))
    grant("bob", SecurableType.EXTERNAL_LOCATION, "ext", Privilege.READ_FILES)
    vended = sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_path_credentials(read))
    s3 = s3_with(server, vended)
    assert s3.get_object(Bucket=bucket, Key=keys["other"])["Body"].read() == keys["other"].encode()
    assert not allowed(lambda: s3.get_object(Bucket=bucket, Key=keys["inside"]))
    assert not allowed(lambda: s3.put_object(Bucket=bucket, Key=keys["other"], Body=b"x"))
    with pytest.raises(ForbiddenException):
        sdk.run(TemporaryCredentialsApi, "bob", lambda api: api.generate_temporary_path_credentials(
            GenerateTemporaryPathCredential(url=url, operation=PathOperation.PATH_READ_WRITE)))
    # Outside every external location nothing is vended, even to an admin.
    outside = GenerateTemporaryPathCredential(url=server.url(f"{lake['prefix']}/elsewhere"),
                                              operation=PathOperation.PATH_READ)
    with pytest.raises(ForbiddenException):
        sdk.run(TemporaryCredentialsApi, "admin", lambda api: api.generate_temporary_path_credentials(outside))


@pytest.mark.django_db(transaction=True)
@pytest.mark.s3
def test_managed_volume_credentials_use_the_server_role(lake):
    server, sdk, bucket, admin = lake["server"], lake["sdk"], lake["server"].bucket, lake["admin"]
    response = admin.post(f"{UC}/volumes", {"name": "raw", "catalog_name": "unity", "schema_name": "default",
                                            "volume_type": "MANAGED"}, format="json")
    assert response.status_code == 200, response.content
    volume = response.json()
    assert volume["storage_location"].startswith(server.url(f"{lake['prefix']}/managed/volumes/"))
    vended = sdk.run(TemporaryCredentialsApi, "admin", lambda api: api.generate_temporary_volume_credentials(
        GenerateTemporaryVolumeCredential(volume_id=volume["volume_id"], operation=VolumeOperation.WRITE_VOLUME)))
    assert vended.url == volume["storage_location"]
    s3 = s3_with(server, vended)
    key = volume["storage_location"].split(f"s3://{bucket}/", 1)[1] + "/file.csv"
    s3.put_object(Bucket=bucket, Key=key, Body=b"a,b\n")
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"a,b\n"
    assert not allowed(lambda: s3.put_object(Bucket=bucket, Key=f"{lake['prefix']}/managed/volumes/x", Body=b"x"))
    assert not allowed(lambda: s3.get_object(Bucket=bucket, Key=lake["keys"]["inside"]))


@pytest.mark.django_db(transaction=True)
@pytest.mark.s3
def test_token_service_failures_are_503(lake):
    admin, sdk = lake["admin"], lake["sdk"]
    response = admin.patch(f"{UC}/credentials/seaweed", {
        "aws_iam_role": {"role_arn": "arn:aws:iam::000000000000:role/no-such-role"}}, format="json")
    assert response.status_code == 200, response.content
    with pytest.raises(ApiException) as failed:
        sdk.run(TemporaryCredentialsApi, "admin", lambda api: api.generate_temporary_table_credentials(
            GenerateTemporaryTableCredential(table_id=lake["table_id"], operation=TableOperation.READ)))
    assert failed.value.status == 503 and "TEMPORARILY_UNAVAILABLE" in failed.value.body


@pytest.mark.django_db(transaction=True)
@pytest.mark.s3
def test_static_keys_without_a_role_use_federation_tokens(lake):
    """With keys and no role, vending calls GetFederationToken with the same session policy."""
    admin, sdk, server = lake["admin"], lake["sdk"], lake["server"]
    response = admin.patch(f"{UC}/credentials/seaweed", {"aws_iam_role": None}, format="json")
    assert response.status_code == 200 and response.json()["aws_iam_role"] is None, response.content
    vended = sdk.run(TemporaryCredentialsApi, "admin", lambda api: api.generate_temporary_table_credentials(
        GenerateTemporaryTableCredential(table_id=lake["table_id"], operation=TableOperation.READ)))
    assert vended.aws_temp_credentials.session_token
    assert vended.aws_temp_credentials.access_key_id not in (None, server.access_key)
    # The federated credentials are real: outside the prefix they are refused as denied, not as
    # unknown keys.
    s3 = s3_with(server, vended)
    assert not allowed(lambda: s3.get_object(Bucket=server.bucket, Key=lake["keys"]["outside"]))
