"""Credentials: what ucweb uses to reach an object store for someone.

A STORAGE credential backs external locations; a SERVICE credential is kept for services. The
spec's form is an AWS IAM role (`aws_iam_role.role_arn`) that ucweb assumes through STS. For
S3-compatible servers a credential may also hold static keys (`aws_static_keys`) and an
`endpoint_url`: with a role, the keys sign the AssumeRole call; without one, vending calls
GetFederationToken with them. The secret key is encrypted at rest and never returned.

Creating a credential needs CREATE STORAGE CREDENTIAL on the metastore. Reading one needs to be a
metastore admin, its owner, or a grantee of some privilege on it; changing or deleting it needs
ownership.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse

from django.db import transaction

from catalog import authz, resolve
from catalog.choices import CredentialPurpose, Privilege, SecurableType
from catalog.models import Credential, ExternalLocation, Principal
from catalog.services import recipes, secrets
from catalog.services.common import validate_comment
from catalog.names import validate_name
from ucweb.errors import AlreadyExists, InvalidParameter, PermissionDenied

ROLE_ARN = re.compile(r"^arn:[a-z0-9-]+:iam::([0-9]{12}:)?role/[\w+=,.@/-]{1,512}$")
ACCESS_KEY_ID = re.compile(r"^[\w.+/=-]{1,128}$")
REGION = re.compile(r"^[a-z0-9-]{1,64}$")


def _role_arn(value) -> str:
    if not isinstance(value, dict):
        raise InvalidParameter("aws_iam_role must be an object with role_arn.")
    arn = value.get("role_arn")
    if not isinstance(arn, str) or not ROLE_ARN.match(arn):
        raise InvalidParameter("aws_iam_role.role_arn must be an IAM role ARN: arn:aws:iam::<account>:role/<name>.")
    return arn


def _static_keys(value) -> tuple[str, str]:
    if not isinstance(value, dict):
        raise InvalidParameter("aws_static_keys must be an object with access_key_id and secret_access_key.")
    key_id, secret = value.get("access_key_id"), value.get("secret_access_key")
    if not isinstance(key_id, str) or not ACCESS_KEY_ID.match(key_id):
        raise InvalidParameter("aws_static_keys.access_key_id must be an access key id (letters and digits).")
    if not isinstance(secret, str) or not 1 <= len(secret) <= 256 or not secret.isprintable():
        raise InvalidParameter("aws_static_keys.secret_access_key must be a printable string of 1 to 256 characters.")
    return key_id, secret


def _endpoint_url(value):
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 2048:
        raise InvalidParameter("endpoint_url must be an http:// or https:// URL.")
    try:
        parsed = urlparse(value)
        parsed.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        raise InvalidParameter(f"endpoint_url {value!r} is not a valid URL.") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname or not value.isprintable():
        raise InvalidParameter("endpoint_url must be an http:// or https:// URL.")
    return value.rstrip("/")


def _region(value):
    if value is None:
        return None
    if not isinstance(value, str) or not REGION.match(value):
        raise InvalidParameter("region must be a region name such as us-east-1.")
    return value


def _purpose(value) -> str:
    if value is None:
        return CredentialPurpose.STORAGE
    if value not in CredentialPurpose.values:
        raise InvalidParameter(f"purpose must be one of {', '.join(CredentialPurpose.values)}.")
    return value


# -- reading --------------------------------------------------------------------------------------
def visible_credentials(*, caller: Principal, purpose=None):
    queryset = Credential.objects.all()
    if purpose not in (None, ""):
        queryset = queryset.filter(purpose=_purpose(purpose))
    return authz.visible(queryset, caller)


def get_credential(*, caller: Principal, name: str) -> Credential:
    credential, _ = resolve.credential(caller, name)  # seeing a credential is reading it (recipes.readable)
    return credential


# -- changing -------------------------------------------------------------------------------------
def _apply_keys(credential: Credential, *, role, keys, endpoint_url, region, fields: dict) -> None:
    if "aws_iam_role" in fields:
        credential.aws_role_arn = _role_arn(role) if role is not None else None
    if "aws_static_keys" in fields:
        if keys is None:
            credential.aws_access_key_id = credential.aws_secret_access_key_encrypted = None
        else:
            key_id, secret = _static_keys(keys)
            credential.aws_access_key_id = key_id
            credential.aws_secret_access_key_encrypted = secrets.encrypt(secret)
    if "endpoint_url" in fields:
        credential.endpoint_url = _endpoint_url(endpoint_url)
    if "region" in fields:
        credential.region = _region(region)
    if not credential.aws_role_arn and not credential.aws_access_key_id:
        raise InvalidParameter("A credential needs aws_iam_role or aws_static_keys (or both).")


@transaction.atomic
def create_credential(
    *, caller: Principal, name, purpose=None, comment=None, aws_iam_role=None, aws_static_keys=None,
    endpoint_url=None, region=None,
) -> Credential:
    validate_name(name)
    purpose = _purpose(purpose)
    comment = validate_comment(comment)
    credential = Credential(
        name=name, purpose=purpose, comment=comment, owner=caller.name, created_by=caller.name,
    )
    credential.aws_external_id = str(credential.id)
    given = {key for key, value in (("aws_iam_role", aws_iam_role), ("aws_static_keys", aws_static_keys),
                                    ("endpoint_url", endpoint_url), ("region", region)) if value is not None}
    _apply_keys(credential, role=aws_iam_role, keys=aws_static_keys, endpoint_url=endpoint_url, region=region,
                fields=given)
    if not authz.has_metastore_privilege(caller, Privilege.CREATE_STORAGE_CREDENTIAL):
        raise PermissionDenied("Missing CREATE STORAGE CREDENTIAL on the metastore.")
    if Credential.objects.filter(name=name).exists():
        raise AlreadyExists(f"Credential '{name}' already exists.")
    credential.save()
    return recipes.audited(
        credential, caller=caller, action="createCredential", securable_type=SecurableType.CREDENTIAL,
        details={"purpose": purpose, "aws_iam_role": credential.aws_role_arn,
                 "aws_access_key_id": credential.aws_access_key_id, "endpoint_url": credential.endpoint_url},
    )


UPDATABLE = recipes.Updatable(
    securable_type=SecurableType.CREDENTIAL,
    siblings=recipes.in_the_metastore, fields=recipes.COMMENT_AND_OWNER,
)


@transaction.atomic
def update_credential(*, caller: Principal, name: str, fields: dict) -> Credential:
    credential, access = resolve.credential(caller, name, for_update=True)
    details = {k: v for k, v in fields.items() if k != "aws_static_keys"}
    if "aws_static_keys" in fields:
        details["aws_access_key_id"] = None  # filled in below: the key id, never the secret

    def apply_keys():
        _apply_keys(credential, role=fields.get("aws_iam_role"), keys=fields.get("aws_static_keys"),
                    endpoint_url=fields.get("endpoint_url"), region=fields.get("region"), fields=fields)
        if "aws_static_keys" in fields:
            details["aws_access_key_id"] = credential.aws_access_key_id

    return recipes.update(credential, fields, UPDATABLE, caller=caller, access=access, details=details,
                          apply=apply_keys)


@transaction.atomic
def delete_credential(*, caller: Principal, name: str, force: bool) -> None:
    """Without force, a credential that external locations use stays; with force those external
    locations are deleted with it."""
    credential, access = resolve.credential(caller, name, for_update=True)
    with recipes.dropping(credential, caller=caller, access=access,
                          securable_type=SecurableType.CREDENTIAL, details={"force": force}) as details:
        dependents = list(ExternalLocation.objects.filter(credential=credential).order_by("name"))
        if dependents and not force:
            raise InvalidParameter(
                f"Credential {name} is used by external locations {', '.join(d.name for d in dependents[:5])}; "
                "delete them first or pass force=true."
            )
        for location in dependents:
            location.delete()
        details["deleted_external_locations"] = [d.name for d in dependents]
        credential.delete()


def secret_access_key(credential: Credential) -> str | None:
    """The decrypted secret key, for vending only."""
    if not credential.aws_secret_access_key_encrypted:
        return None
    return secrets.decrypt(credential.aws_secret_access_key_encrypted)


def reencrypt_published_secrets() -> int:
    """Secrets stored under a published key of an earlier version, encrypted again with the
    current key; returns how many."""
    count = 0
    with transaction.atomic():
        for credential in Credential.objects.select_for_update().exclude(aws_secret_access_key_encrypted=None):
            token = secrets.reencrypt_published(credential.aws_secret_access_key_encrypted or "")
            if token is not None:
                credential.aws_secret_access_key_encrypted = token
                credential.save(update_fields=["aws_secret_access_key_encrypted"])
                count += 1
    return count
