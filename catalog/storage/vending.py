"""Short-lived S3 credentials scoped to one prefix, from an STS endpoint (AWS or an S3-compatible
server with STS, such as SeaweedFS).

`session_policy` is a pure function: the IAM policy that an AssumeRole or GetFederationToken call
passes as its session policy, so that the temporary credentials can do no more than the policy
allows, whatever the role or user may do. For `s3://bucket/tables/t1` with write access:

    {"Version": "2012-10-17", "Statement": [
      {"Sid": "ObjectsUnderPrefix", "Effect": "Allow",
       "Action": ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject",
                  "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
       "Resource": ["arn:aws:s3:::bucket/tables/t1", "arn:aws:s3:::bucket/tables/t1/*"]},
      {"Sid": "ListPrefix", "Effect": "Allow", "Action": ["s3:ListBucket"],
       "Resource": ["arn:aws:s3:::bucket"],
       "Condition": {"StringLike": {"s3:prefix": ["tables/t1", "tables/t1/*"]}}},
      {"Sid": "BucketLocation", "Effect": "Allow", "Action": ["s3:GetBucketLocation"],
       "Resource": ["arn:aws:s3:::bucket"]}]}

Read access drops the four write actions. IAM reads `*`, `?` and `$` in a resource or condition
value as wildcards or variables, so those characters of a key are written `${*}`, `${?}`, `${$}`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime

from .urls import parse

READ_ACTIONS = ("s3:GetObject", "s3:GetObjectVersion")
WRITE_ACTIONS = ("s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts")
MIN_DURATION_SECONDS = 900
MAX_DURATION_SECONDS = 43200


def escape_iam(text: str) -> str:
    """A literal string inside an IAM resource ARN or StringLike value."""
    return re.sub(r"[*?$]", lambda match: "${" + match.group(0) + "}", text)


def session_policy(url: str, *, write: bool, partition: str = "aws") -> dict:
    """The session policy that limits S3 credentials to the objects at and under `url`
    (an s3:// URL; the bucket alone means the whole bucket)."""
    location = parse(url)
    if location.scheme != "s3":
        raise ValueError(f"session policies are for s3:// URLs, not {url!r}")
    bucket = escape_iam(location.bucket)
    prefix = escape_iam(location.key.rstrip("/"))
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    actions = list(READ_ACTIONS) + (list(WRITE_ACTIONS) if write else [])
    if prefix:
        objects = [f"{bucket_arn}/{prefix}", f"{bucket_arn}/{prefix}/*"]
        listing = {
            "Sid": "ListPrefix", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket_arn],
            "Condition": {"StringLike": {"s3:prefix": [prefix, f"{prefix}/*"]}},
        }
    else:
        objects = [f"{bucket_arn}/*"]
        listing = {"Sid": "ListPrefix", "Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": [bucket_arn]}
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Sid": "ObjectsUnderPrefix", "Effect": "Allow", "Action": actions, "Resource": objects},
            listing,
            {"Sid": "BucketLocation", "Effect": "Allow", "Action": ["s3:GetBucketLocation"],
             "Resource": [bucket_arn]},
        ],
    }


def session_name(principal: str) -> str:
    """An STS RoleSessionName / federated user name (2 to 32 characters of [\\w+=,.@-]) that says
    who the credentials were vended to, for the object store's own logs."""
    cleaned = re.sub(r"[^\w+=,.@-]", "-", principal, flags=re.ASCII)[:26] or "anon"
    return f"ucweb-{cleaned}"[:32]


@dataclass(frozen=True)
class StsSettings:
    """Where and as whom to ask for temporary credentials."""

    endpoint_url: str | None
    region: str
    access_key_id: str | None
    secret_access_key: str | None
    session_token: str | None = None
    role_arn: str | None = None
    external_id: str | None = None


@dataclass(frozen=True)
class TemporaryAwsCredentials:
    access_key_id: str
    secret_access_key: str
    session_token: str
    expiration: datetime


class VendingError(Exception):
    """The token service could not be reached or refused the request."""


def vend(sts: StsSettings, *, url: str, write: bool, principal: str, duration_seconds: int) -> TemporaryAwsCredentials:
    """AssumeRole (when a role is configured) or GetFederationToken, with the session policy of
    `url`. Raises VendingError when the token service fails."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    duration = max(MIN_DURATION_SECONDS, min(int(duration_seconds), MAX_DURATION_SECONDS))
    client = boto3.session.Session().client(
        "sts",
        endpoint_url=sts.endpoint_url or None,
        region_name=sts.region,
        aws_access_key_id=sts.access_key_id or None,
        aws_secret_access_key=sts.secret_access_key or None,
        aws_session_token=sts.session_token or None,
        config=Config(connect_timeout=5, read_timeout=15, retries={"mode": "standard", "max_attempts": 2}),
    )
    policy = json.dumps(session_policy(url, write=write), separators=(",", ":"))
    try:
        if sts.role_arn:
            arguments = {"RoleArn": sts.role_arn, "RoleSessionName": session_name(principal), "Policy": policy,
                         "DurationSeconds": duration}
            if sts.external_id:
                arguments["ExternalId"] = sts.external_id
            answer = client.assume_role(**arguments)
        else:
            answer = client.get_federation_token(Name=session_name(principal), Policy=policy,
                                                 DurationSeconds=duration)
    except (BotoCoreError, ClientError) as exc:
        raise VendingError(str(exc)) from exc
    credentials = answer["Credentials"]
    return TemporaryAwsCredentials(
        access_key_id=credentials["AccessKeyId"],
        secret_access_key=credentials["SecretAccessKey"],
        session_token=credentials["SessionToken"],
        expiration=credentials["Expiration"],
    )
