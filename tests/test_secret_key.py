"""No secret under a known key: without UCWEB_SECRET_KEY the server generates a random key into
its var directory on first start (mode 0600) and every later process uses it; UCWEB_ENV=production
refuses to start without a key; secrets stored under the published keys of earlier versions are
re-encrypted by `bootstrap`. Each server process is a real `python` process with its own
environment, as `make run` starts them."""

import os
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from catalog.models import Credential
from catalog.services import credentials, secrets
from ucweb.errors import TemporarilyUnavailable

ROOT = Path(__file__).resolve().parent.parent
PRINT_KEY = "from django.conf import settings; print(settings.SECRET_KEY)"
ENCRYPT = "from catalog.services import secrets; print(secrets.encrypt(sys.argv[1]))"
DECRYPT = "from catalog.services import secrets; print(secrets.decrypt(sys.argv[1]))"


def server_python(var_dir, code, *args, **env):
    """Runs `code` in a fresh process configured like the server (settings loaded, apps ready)."""
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("UCWEB_SECRET_KEY", "UCWEB_ENCRYPTION_KEY", "UCWEB_ENV", "DATABASE_URL")}
    environment.update({"UCWEB_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "ucweb.settings", **env})
    program = f"import sys, django; django.setup(); {code}"
    return subprocess.run([sys.executable, "-c", program, *args], cwd=ROOT, env=environment,
                          capture_output=True, text=True, timeout=120)


def test_a_random_key_is_generated_once_and_kept(tmp_path):
    first = server_python(tmp_path, PRINT_KEY)
    assert first.returncode == 0, first.stderr
    key_file = tmp_path / "secret_key"
    key = first.stdout.strip()
    assert key_file.read_text().strip() == key
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(key) >= 64 and key not in settings.PUBLISHED_SECRET_KEYS
    again = server_python(tmp_path, PRINT_KEY)
    assert again.stdout.strip() == key, "a restart uses the key of the first start"
    other = server_python(tmp_path / "another", PRINT_KEY)
    assert other.stdout.strip() != key, "every installation gets its own key"


def test_processes_that_start_together_share_one_key(tmp_path):
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: server_python(tmp_path, PRINT_KEY), range(8)))
    assert all(result.returncode == 0 for result in results), [r.stderr for r in results]
    keys = {result.stdout.strip() for result in results}
    assert keys == {(tmp_path / "secret_key").read_text().strip()}
    assert [p.name for p in tmp_path.iterdir() if "secret_key" in p.name] == ["secret_key"], "no leftovers"


def test_secrets_keep_decrypting_while_the_key_file_exists(tmp_path):
    encrypted = server_python(tmp_path, ENCRYPT, "s3cr3t-value")
    assert encrypted.returncode == 0, encrypted.stderr
    token = encrypted.stdout.strip()
    decrypted = server_python(tmp_path, DECRYPT, token)
    assert decrypted.returncode == 0 and decrypted.stdout.strip() == "s3cr3t-value"
    # Not under any published key.
    for key in settings.PUBLISHED_SECRET_KEYS:
        refused = server_python(tmp_path / "published", DECRYPT, token, UCWEB_ENCRYPTION_KEY=key)
        assert refused.returncode != 0 and "cannot be decrypted" in refused.stderr
    # A lost key file means a new key: the old secrets are unreadable (and the message says so).
    (tmp_path / "secret_key").unlink()
    lost = server_python(tmp_path, DECRYPT, token)
    assert lost.returncode != 0 and "cannot be decrypted" in lost.stderr


def test_production_refuses_to_start_without_a_key(tmp_path):
    refused = server_python(tmp_path, PRINT_KEY, UCWEB_ENV="production")
    assert refused.returncode != 0
    assert "ImproperlyConfigured" in refused.stderr and "UCWEB_SECRET_KEY" in refused.stderr
    assert not (tmp_path / "secret_key").exists(), "production never generates a key"
    check = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120, env={**os.environ, "UCWEB_VAR_DIR": str(tmp_path), "UCWEB_ENV": "production",
                                             "UCWEB_SECRET_KEY": ""})
    assert check.returncode != 0 and "UCWEB_SECRET_KEY" in check.stderr
    for published in settings.PUBLISHED_SECRET_KEYS:
        refused = server_python(tmp_path, PRINT_KEY, UCWEB_ENV="production", UCWEB_SECRET_KEY=published)
        assert refused.returncode != 0 and "published" in refused.stderr
    accepted = server_python(tmp_path, PRINT_KEY, UCWEB_ENV="production", UCWEB_SECRET_KEY="k" * 50)
    assert accepted.returncode == 0 and accepted.stdout.strip() == "k" * 50


def test_an_unusable_key_file_stops_the_server(tmp_path):
    (tmp_path / "secret_key").write_text("\n")
    refused = server_python(tmp_path, PRINT_KEY)
    assert refused.returncode != 0 and "holds no usable key" in refused.stderr


@pytest.mark.django_db
def test_bootstrap_reencrypts_secrets_stored_under_a_published_key():
    legacy = {}
    for index, key in enumerate(settings.PUBLISHED_SECRET_KEYS):
        token = secrets._fernet(key.encode()).encrypt(f"secret-{index}".encode()).decode()
        legacy[key] = Credential.objects.create(name=f"legacy{index}", owner="admin", created_by="admin",
                                                aws_access_key_id="AKIA", aws_secret_access_key_encrypted=token)
    current = Credential.objects.create(name="current", owner="admin", created_by="admin",
                                        aws_access_key_id="AKIA", aws_secret_access_key_encrypted=secrets.encrypt("fresh"))
    with pytest.raises(TemporarilyUnavailable):
        credentials.secret_access_key(legacy[settings.PUBLISHED_SECRET_KEYS[0]])
    call_command("bootstrap", verbosity=0)
    for index, (key, credential) in enumerate(legacy.items()):
        credential.refresh_from_db()
        assert credentials.secret_access_key(credential) == f"secret-{index}"
        with pytest.raises(Exception):
            secrets._fernet(key.encode()).decrypt(credential.aws_secret_access_key_encrypted.encode())
    unchanged = current.aws_secret_access_key_encrypted
    current.refresh_from_db()
    assert current.aws_secret_access_key_encrypted == unchanged
    assert credentials.reencrypt_published_secrets() == 0, "a second start has nothing left to do"
