"""A SeaweedFS S3 server with its STS and IAM policy engine turned on, for credential vending tests.

Unlike the plain `s3_server` of tests/s3_server.py, this one is started with an advanced IAM
configuration (`-s3.iam.config`): an STS signing key, and one role, `ucweb-vending`, that any
authenticated identity may assume and that may do anything in S3. The static admin identity calls
AssumeRole on it with a session policy, and SeaweedFS then enforces that policy on the temporary
credentials: that is what tests/test_credentials_vending.py checks.

Use it from a test module with `from tests.seaweedfs_sts import sts_s3_server  # noqa: F401`.
"""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from dataclasses import dataclass
from typing import Any

import pytest

from tests.helpers import UC, external_table_body
from tests.s3_server import BUCKET, S3Server, _Weed, running_weed

ROLE_NAME = "ucweb-vending"
ROLE_ARN = f"arn:aws:iam::000000000000:role/{ROLE_NAME}"


def iam_config() -> dict:
    return {
        "sts": {
            "tokenDuration": "1h",
            "maxSessionLength": "12h",
            "issuer": "ucweb-test-sts",
            "signingKey": base64.b64encode(secrets.token_bytes(32)).decode(),
        },
        "policy": {"defaultEffect": "Deny", "storeType": "memory"},
        "roles": [{
            "roleName": ROLE_NAME,
            "roleArn": ROLE_ARN,
            "trustPolicy": {"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Principal": "*", "Action": ["sts:AssumeRole"]}]},
            "attachedPolicies": ["S3Everything"],
        }],
        "policies": [{
            "name": "S3Everything",
            "document": {"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": ["s3:*"], "Resource": ["arn:aws:s3:::*", "arn:aws:s3:::*/*"]},
                {"Effect": "Allow", "Action": ["sts:ValidateSession"], "Resource": ["*"]},
            ]},
        }],
    }


@dataclass
class StsS3Server(S3Server):
    role_arn: str = ROLE_ARN

    def client(self, *, access_key=None, secret_key=None, session_token=None) -> Any:
        """A boto3 S3 client: the admin's, or one with the given (temporary) keys."""
        if access_key is None:
            return super().client()
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint_url, region_name=self.region, aws_access_key_id=access_key,
            aws_secret_access_key=secret_key, aws_session_token=session_token,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def env(self) -> dict[str, str]:
        """Settings that make this server ucweb's managed storage and token service."""
        return {**super().env(), "UCWEB_STS_ROLE_ARN": self.role_arn}


class _WeedWithSts(_Weed):
    def more_args(self) -> list[str]:
        iam_path = self.workdir / "iam.json"
        iam_path.write_text(json.dumps(iam_config()))
        return [f"-s3.iam.config={iam_path}"]


@pytest.fixture(scope="module")
def sts_s3_server(tmp_path_factory: pytest.TempPathFactory):
    """SeaweedFS with STS on 127.0.0.1 and an empty bucket, for one test module."""
    with running_weed(_WeedWithSts, lambda: tmp_path_factory.mktemp("seaweedfs-sts")) as weed:
        yield StsS3Server(endpoint_url=weed.endpoint_url, access_key=weed.access_key, secret_key=weed.secret_key,
                          bucket=BUCKET, log_path=weed.log_path, _client=weed.client)


def fresh_prefix(server: StsS3Server, settings) -> str:
    """Make `server` the catalog's storage and token service, with managed storage under a fresh
    prefix of the bucket; returns the prefix."""
    for name, value in server.env().items():
        setattr(settings, name, value)
    prefix = f"run-{uuid.uuid4().hex[:8]}"
    settings.UCWEB_STORAGE_ROOT = server.url(f"{prefix}/managed")
    return prefix


def register_trips(admin, server: StsS3Server, prefix: str, *, data_source_format: str, columns: list) -> None:
    """As `admin` (a client of the UC API): credential `seaweed` (the server's static admin keys,
    which assume the vending role), external location `ext` at <prefix>/ext on it, and the
    EXTERNAL table unity.default.trips at <prefix>/ext/trips."""
    location_url = server.url(f"{prefix}/ext")
    for path, body in [
        ("/credentials", {"name": "seaweed", "aws_iam_role": {"role_arn": server.role_arn},
                          "aws_static_keys": {"access_key_id": server.access_key,
                                              "secret_access_key": server.secret_key},
                          "endpoint_url": server.endpoint_url}),
        ("/external-locations", {"name": "ext", "url": location_url, "credential_name": "seaweed"}),
        ("/tables", external_table_body("trips", f"{location_url}/trips", catalog="unity", schema="default",
                                        data_source_format=data_source_format, columns=columns)),
    ]:
        response = admin.post(f"{UC}{path}", body, format="json")
        assert response.status_code == 200, response.content


def allowed(call) -> bool:
    """Whether the S3 call `call()` succeeds; a refusal must be an access denial."""
    from botocore.exceptions import ClientError

    try:
        call()
        return True
    except ClientError as exc:
        assert exc.response["Error"]["Code"] in {"AccessDenied", "403"}, exc.response
        return False
