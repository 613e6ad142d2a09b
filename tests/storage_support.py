"""What the storage test modules share: keeping boto3 away from any AWS configuration of the
machine that runs them."""

from __future__ import annotations

import pytest


def isolate_aws(monkeypatch: pytest.MonkeyPatch, settings, tmp_path) -> None:
    # Never let boto3 look for credentials or settings outside the test (and never ask the EC2
    # metadata endpoint).
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    settings.AWS_SESSION_TOKEN = None
    settings.UCWEB_S3_CONDITIONAL_WRITES = True
