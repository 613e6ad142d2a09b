"""Encryption at rest for the secrets of credentials (Fernet: AES-128-CBC with an HMAC-SHA256).

The key comes from `UCWEB_ENCRYPTION_KEY` when it is set (any passphrase; a Fernet key works too),
otherwise from Django's SECRET_KEY (UCWEB_SECRET_KEY, or the random key generated into the var
directory on first start). Either way it goes through HKDF-SHA256 with a fixed purpose label, so
the same passphrase used elsewhere does not yield this key. Changing the passphrase makes the
stored secrets unreadable: vending then fails with a message that says so, and each credential
must be given its secret again (PATCH /credentials/{name}).

Earlier versions fell back to a published SECRET_KEY; secrets stored under it are re-encrypted
with the current key by `reencrypt_published` (run by `manage.py bootstrap` at every start)."""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from ucweb.errors import TemporarilyUnavailable

_PURPOSE = b"ucweb credential secrets v1"


def _passphrase() -> bytes:
    return (settings.UCWEB_ENCRYPTION_KEY or settings.SECRET_KEY).encode()


def _fernet(passphrase: bytes | None = None) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_PURPOSE).derive(passphrase or _passphrase())
    return Fernet(base64.urlsafe_b64encode(key))


def reencrypt_published(token: str) -> str | None:
    """`token` encrypted with the current key when it was encrypted under one of the published
    keys of earlier versions (anyone could decrypt it); None when it was not."""
    if any(_passphrase() == key.encode() for key in settings.PUBLISHED_SECRET_KEYS):
        return None  # settings refuse these keys; nothing better to re-encrypt with
    for key in settings.PUBLISHED_SECRET_KEYS:
        try:
            plaintext = _fernet(key.encode()).decrypt(token.encode()).decode()
        except InvalidToken:
            continue
        return encrypt(plaintext)
    return None


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
