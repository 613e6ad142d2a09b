"""Encryption at rest for the secrets of credentials (Fernet: AES-128-CBC with an HMAC-SHA256).

The key comes from `UCWEB_ENCRYPTION_KEY` when it is set (any passphrase; a Fernet key works too),
otherwise from Django's SECRET_KEY. Either way it goes through HKDF-SHA256 with a fixed purpose
label, so the same passphrase used elsewhere does not yield this key. Changing the passphrase makes
the stored secrets unreadable: vending then fails with a message that says so, and each credential
must be given its secret again (PATCH /credentials/{name})."""

from __future__ import annotations

import base64
import os

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from ucweb.errors import TemporarilyUnavailable

_PURPOSE = b"ucweb credential secrets v1"


def _passphrase() -> bytes:
    value = getattr(settings, "UCWEB_ENCRYPTION_KEY", None) or os.environ.get("UCWEB_ENCRYPTION_KEY")
    return (value or settings.SECRET_KEY).encode()


def _fernet() -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_PURPOSE).derive(_passphrase())
    return Fernet(base64.urlsafe_b64encode(key))


def encrypt(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise TemporarilyUnavailable(
            "A stored credential secret cannot be decrypted: the encryption key (UCWEB_ENCRYPTION_KEY "
            "or SECRET_KEY) has changed since it was saved. Set the credential's keys again."
        ) from None
