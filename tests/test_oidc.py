"""OpenID Connect against a real provider (oidc-provider on loopback, tests/oidc_support.py): its
access tokens on every API, with the groups claim synced into ucweb's groups; token exchange at
the OAuth endpoint for pyiceberg; the Unity Catalog SDK with a provider's token; key rotation;
revocation through SCIM; the console's sign-in (PKCE, state) over HTTP and in Chromium; and the
attacks, each refused with 401 and nothing changed."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from django.contrib.auth import get_user_model
from pyiceberg.catalog.rest import RestCatalog

from catalog.models import AuditEvent, Grant, Group, GroupClosure, GroupMember, Principal, Table, Token
from catalog.services import principals
from tests.helpers import UC, grant, rows
from tests.oidc_support import AUDIENCE, IdentityProvider, new_signing_key
from tests.pyiceberg_support import ICEBERG, WAREHOUSE, new_table
from tests.test_console_browser import Console, driver  # noqa: F401 - the Chromium fixture

pytestmark = pytest.mark.django_db(transaction=True)

USERS = {
    "alice": {"email": "alice@example.com", "groups": ["analysts", "console-users"]},
    "bob": {"email": "bob@example.com", "groups": ["engineers"]},
}
TOKENS = "/api/catalog/v1/oauth/tokens"
EXCHANGE = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token_type": "urn:ietf:params:oauth:token-type:access_token"}
CONSOLE_CLIENT_ID, CONSOLE_SECRET = "console", "console-secret"


def console_client(live_server, name: str) -> dict:
    return {"client_id": CONSOLE_CLIENT_ID, "client_secret": CONSOLE_SECRET,
            "redirect_uris": [f"{live_server.url}/admin/sign-in/{name}/callback"]}


@pytest.fixture(scope="module")
def idp(tmp_path_factory, live_server):
    provider = IdentityProvider(tmp_path_factory.mktemp("idp"), users=USERS,
                                clients=[console_client(live_server, "corp")]).start()
    yield provider
    provider.stop()


@pytest.fixture(scope="module")
def other_idp(tmp_path_factory):
    provider = IdentityProvider(tmp_path_factory.mktemp("other-idp"), users=USERS).start()
    yield provider
    provider.stop()


@pytest.fixture
def oidc(settings, idp, other_idp, bootstrap):
    """Two providers configured: `corp` (with the console's client) and `other`."""
    idp.set_users(USERS)
    settings.UCWEB_OIDC_PROVIDERS = [
        idp.provider_config(name="corp", client_id=CONSOLE_CLIENT_ID, client_secret=CONSOLE_SECRET,
                            scopes="openid email profile groups", staff_group="console-users"),
        other_idp.provider_config(name="other")]
    principals.forget_cached_tokens()
    yield idp
    principals.forget_cached_tokens()


def state() -> dict:
    """Everything a token check or an exchange may change, to compare before and after a refusal."""
    return rows(Principal, Group, GroupMember, GroupClosure, Token, AuditEvent, get_user_model())


def call(live_server, token: str, path: str = f"{UC}/catalogs") -> requests.Response:
    return requests.get(f"{live_server.url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=30)


# -- every API ---------------------------------------------------------------------------------------
API_READS = [f"{UC}/catalogs", "/api/catalog/v1/config", "/api/2.1/unity-catalog/iceberg-rest/v1/config",
             "/api/2.1/unity-catalog/iceberg/v1/config", "/api/catalog/v1/unity/namespaces",
             "/api/management/v1/catalogs", f"{UC}/delta/v1/config"]


def test_a_provider_token_is_accepted_on_every_api_and_names_its_principal(live_server, oidc):
    token = oidc.access_token("alice")
    for path in API_READS:
        # Authenticated: what it may see is up to its grants (a hidden catalog answers 404).
        # (the Delta API's config answers 400 without its query parameters).
        assert call(live_server, token, path).status_code in (200, 400, 403, 404), path
        assert call(live_server, "not.a.token", path).status_code == 401, path
    alice = Principal.objects.get(name="alice")
    assert (alice.kind, alice.is_metastore_admin, alice.active) == ("USER", False, True)
    created = AuditEvent.objects.get(action="createPrincipal", securable_name="alice")
    assert created.principal == "oidc:corp"


def test_groups_are_synced_from_the_claim_and_audited(live_server, oidc):
    admin = Principal.objects.get(name="admin")
    assert call(live_server, oidc.access_token("alice")).status_code == 200
    assert set(GroupClosure.objects.filter(principal="alice").values_list("group_name", flat=True)) == {
        "analysts", "console-users"}
    sync = AuditEvent.objects.get(action="syncIdpGroups", securable_name="alice")
    assert sync.principal == "oidc:corp" and sync.details["added"] == ["analysts", "console-users"]
    # A membership an admin made stays; the provider's follow the claim.
    from catalog.services import groups

    groups.create_group(caller=admin, name="auditors")
    groups.update_members(caller=admin, name="auditors", add_principals=["alice"])
    oidc.set_users({**USERS, "alice": {"groups": ["analysts", "finance"]}})
    principals.forget_cached_tokens()
    assert call(live_server, oidc.access_token("alice")).status_code == 200
    assert set(GroupClosure.objects.filter(principal="alice").values_list("group_name", flat=True)) == {
        "analysts", "finance", "auditors"}
    last = AuditEvent.objects.filter(action="syncIdpGroups").latest("id")
    assert (last.details["added"], last.details["removed"]) == (["finance"], ["console-users"])
    # The same groups again change nothing and record nothing.
    principals.forget_cached_tokens()
    assert call(live_server, oidc.access_token("alice")).status_code == 200
    assert AuditEvent.objects.filter(action="syncIdpGroups").count() == 2


def test_pyiceberg_with_a_provider_token_reads_through_its_group(live_server, oidc, storage_root):
    admin_catalog = RestCatalog("admin", uri=f"{live_server.url}{ICEBERG}", warehouse=WAREHOUSE,
                                token=principals.issue_token(principal=Principal.objects.get(name="admin")))
    new_table(admin_catalog, "visits")
    token = oidc.access_token("alice")
    alice = RestCatalog("alice", uri=f"{live_server.url}{ICEBERG}", warehouse=WAREHOUSE, token=token)
    assert Group.objects.filter(name="analysts").exists()  # created by alice's first request
    grant("analysts", "catalog", "unity", "USE_CATALOG")
    grant("analysts", "schema", "unity.default", "USE_SCHEMA", "SELECT")
    assert alice.load_table(("default", "visits")).schema().find_field("id")
    bob = RestCatalog("bob", uri=f"{live_server.url}{ICEBERG}", warehouse=WAREHOUSE, token=oidc.access_token("bob"))
    with pytest.raises(Exception, match="(?i)forbidden|not found|does not exist|NoSuch"):
        bob.load_table(("default", "visits"))


def test_token_exchange_gives_pyiceberg_a_ucweb_token(live_server, oidc):
    subject = oidc.access_token("alice")
    # The server reads its clock after this one: a lifetime counted from it is never longer.
    sent_at = time.time()
    response = requests.post(f"{live_server.url}{TOKENS}", data={**EXCHANGE, "subject_token": subject}, timeout=30)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["access_token"].startswith("ucw_") and body["token_type"] == "bearer"
    # It lives no longer than the provider's token (and the documented leeway).
    assert 0 < body["expires_in"] <= jwt.decode(subject, options={"verify_signature": False})["exp"] - sent_at + 60
    assert principals.principal_for_token(body["access_token"]).name == "alice"
    grant("analysts", "catalog", "unity", "USE_CATALOG")
    grant("analysts", "schema", "unity.default", "USE_SCHEMA")
    exchanged = AuditEvent.objects.get(action="exchangeToken")
    assert (exchanged.principal, exchanged.details["provider"]) == ("alice", "corp")
    catalog = RestCatalog("alice", uri=f"{live_server.url}{ICEBERG}", warehouse=WAREHOUSE, token=body["access_token"])
    assert ("default",) in catalog.list_namespaces()
    # The same endpoint on another Iceberg root, as Spark and pyiceberg configurations name it.
    other_root = requests.post(f"{live_server.url}/api/2.1/unity-catalog/iceberg-rest/v1/oauth/tokens",
                               data={**EXCHANGE, "subject_token": subject}, timeout=30)
    assert other_root.status_code == 200, other_root.text


def test_token_exchange_refuses_a_bad_subject_token_and_changes_nothing(live_server, oidc):
    before = state()
    forged = oidc.access_token("alice")[:-4] + "AAAA"
    for data in ({**EXCHANGE, "subject_token": forged}, {**EXCHANGE, "subject_token": "ucw_x"},
                 {**EXCHANGE, "subject_token": forged, "subject_token_type": "urn:x"}, {**EXCHANGE}):
        response = requests.post(f"{live_server.url}{TOKENS}", data=data, timeout=30)
        assert response.status_code == 400, response.text
        assert response.json()["error"] in ("invalid_grant", "invalid_request")
    assert state() == before


def test_without_a_provider_token_exchange_is_not_offered(live_server, bootstrap, settings):
    settings.UCWEB_OIDC_PROVIDERS = []
    response = requests.post(f"{live_server.url}{TOKENS}", data={**EXCHANGE, "subject_token": "a.b.c"}, timeout=30)
    assert (response.status_code, response.json()["error"]) == (400, "unsupported_grant_type")
    assert "token-exchange" not in response.json()["error_description"]


def test_the_uc_sdk_with_a_provider_token(live_server, oidc):
    from unitycatalog.client import CatalogsApi

    from tests.sdk_loop import KeptSDK

    kept = KeptSDK(f"{live_server.url}{UC}", name="uc-sdk-oidc")
    try:
        async def list_catalogs(token):
            kept.client.set_default_header("Authorization", f"Bearer {token}")
            return await CatalogsApi(kept.client).list_catalogs()

        listed = kept.run(list_catalogs(oidc.access_token("bob")))
        assert isinstance(listed.catalogs, list)
        grant("engineers", "catalog", "unity", "USE_CATALOG")
        assert "unity" in [catalog.name for catalog in kept.run(list_catalogs(oidc.access_token("bob"))).catalogs]
        with pytest.raises(Exception, match="401"):
            kept.run(list_catalogs(oidc.access_token("bob") + "x"))
    finally:
        kept.close()


# -- keys, revocation --------------------------------------------------------------------------------
def test_a_rotated_key_is_fetched_on_its_unknown_kid(live_server, oidc):
    old_token = oidc.access_token("alice")
    assert call(live_server, old_token).status_code == 200  # the keys are now cached
    old_kid = oidc.kid
    oidc.rotate_key()
    new_token = oidc.access_token("alice")
    assert jwt.get_unverified_header(new_token)["kid"] != old_kid
    assert call(live_server, new_token).status_code == 200
    principals.forget_cached_tokens()
    assert call(live_server, old_token).status_code == 401  # its key is gone from the provider


def test_a_principal_deactivated_through_scim_loses_access_at_the_next_check(live_server, oidc):
    token = oidc.access_token("alice")
    assert call(live_server, token).status_code == 200
    exchanged = requests.post(f"{live_server.url}{TOKENS}", data={**EXCHANGE, "subject_token": token},
                              timeout=30).json()["access_token"]
    alice = Principal.objects.get(name="alice")
    admin_token = principals.issue_token(principal=Principal.objects.get(name="admin"))
    patched = requests.patch(
        f"{live_server.url}/api/1.0/unity-control/scim2/Users/{alice.id}",
        json={"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
              "Operations": [{"op": "replace", "path": "active", "value": False}]},
        headers={"Authorization": f"Bearer {admin_token}"}, timeout=30)
    assert patched.status_code == 200, patched.text
    assert call(live_server, token).status_code == 401
    assert call(live_server, exchanged).status_code == 401
    # A fresh sign-in does not bring it back.
    assert call(live_server, oidc.access_token("alice")).status_code == 401
    assert not Principal.objects.get(name="alice").active


def test_a_user_removed_from_the_provider_gets_no_new_token(live_server, oidc):
    assert call(live_server, oidc.access_token("bob")).status_code == 200
    oidc.set_users({"alice": USERS["alice"]})
    with pytest.raises(AssertionError):
        oidc.access_token("bob")


# -- attacks -----------------------------------------------------------------------------------------
def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict, claims: dict, signature: bytes = b"") -> str:
    return ".".join([_b64(json.dumps(header).encode()), _b64(json.dumps(claims).encode()), _b64(signature)])


def rs256(header: dict, claims: dict, key) -> str:
    """A token signed with `key` whatever its header says (PyJWT refuses to write some headers)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    return f"{signing_input}.{_b64(key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256()))}"


def forged_tokens(idp: IdentityProvider, other: IdentityProvider) -> dict:
    """Tokens a caller might forge, or replay, each of which must be refused. Those that need the
    provider's signature are signed with its own key, as the provider would sign them."""
    now = int(time.time())
    claims = {"iss": idp.issuer, "aud": AUDIENCE, "sub": "mallory", "iat": now, "exp": now + 300,
              "groups": ["admins"]}
    header = {"kid": idp.kid}

    def signed(key=idp.key, headers=header, **changes):
        return jwt.encode({**claims, **changes}, key, algorithm="RS256", headers=headers)

    public_pem = idp.key.public_key().public_bytes(serialization.Encoding.PEM,
                                                    serialization.PublicFormat.SubjectPublicKeyInfo)
    hs_header = {"alg": "HS256", "typ": "JWT", "kid": idp.kid}
    hs_signing_input = f"{_b64(json.dumps(hs_header).encode())}.{_b64(json.dumps(claims).encode())}"
    real = idp.access_token("bob")
    head, payload, signature = real.split(".")
    forged_payload = json.loads(base64.urlsafe_b64decode(payload + "=="))
    forged_payload.update(groups=["admins"], sub="mallory")
    other_key, _ = new_signing_key()
    return {
        "expired": signed(iat=now - 4000, exp=now - 3600),
        "not yet valid": signed(nbf=now + 3600),
        "wrong issuer": signed(iss="http://127.0.0.1:1"),
        "wrong audience": signed(aud="someone-else"),
        "alg none": _unsigned({"alg": "none", "typ": "JWT"}, claims),
        "HS256 with the public key": hs_signing_input + "." + _b64(
            hmac.new(public_pem, hs_signing_input.encode(), hashlib.sha256).digest()),
        "unknown kid": signed(key=other_key, headers={"kid": "not-a-key-of-the-provider"}),
        "a kid that is not a string": rs256({"alg": "RS256", "kid": [idp.kid]}, claims, idp.key),
        "no kid": signed(headers={}),
        "another key under the provider's kid": signed(key=other_key),
        "provider A's token as provider B's": signed(iss=other.issuer),
        "a forged groups claim": f"{head}.{_b64(json.dumps(forged_payload).encode())}.{signature}",
        "groups in the header": "{}.{}.{}".format(_b64(json.dumps(
            {**json.loads(base64.urlsafe_b64decode(head + "==")), "groups": ["admins"]}).encode()), payload, signature),
        "groups in a part after the signature": f"{real}.{_b64(json.dumps({'groups': ['admins']}).encode())}",
        "no expiry": jwt.encode({key: value for key, value in claims.items() if key != "exp"}, idp.key,
                                algorithm="RS256", headers=header),
    }


def test_forged_and_misdirected_tokens_are_refused_with_401_and_change_nothing(live_server, oidc, other_idp):
    tokens = forged_tokens(oidc, other_idp)
    assert call(live_server, oidc.access_token("bob")).status_code == 200  # the real one works
    before = state()
    for attack, token in tokens.items():
        for path in (f"{UC}/catalogs", "/api/catalog/v1/unity/namespaces", "/api/management/v1/catalogs"):
            response = call(live_server, token, path)
            assert response.status_code == 401, (attack, path, response.text)
        exchange = requests.post(f"{live_server.url}{TOKENS}", data={**EXCHANGE, "subject_token": token}, timeout=30)
        assert (exchange.status_code, exchange.json()["error"]) == (400, "invalid_grant"), (attack, exchange.text)
    assert state() == before
    assert not Principal.objects.filter(name="mallory").exists() and not Group.objects.filter(name="admins").exists()
    assert not Grant.objects.filter(principal="admins").exists()


# -- the console's sign-in -----------------------------------------------------------------------------
def _start_sign_in(live_server) -> tuple[requests.Session, requests.Response]:
    session = requests.Session()
    page = session.get(f"{live_server.url}/admin/login/", timeout=30)
    assert "Sign in with corp" in page.text
    return session, session.get(f"{live_server.url}/admin/sign-in/corp/", timeout=30)


def test_console_sign_in_acts_as_the_principal_and_refuses_a_replayed_code_and_a_wrong_state(live_server, oidc):
    session, login_page = _start_sign_in(live_server)
    callback = oidc.log_in(session, login_page, "alice", until=f"{live_server.url}/admin/sign-in/corp/callback")
    assert "state=" in callback and "code=" in callback
    home = session.get(callback, timeout=30)
    assert home.status_code == 200 and "alice" in home.text and home.url.endswith("/admin/")
    user = get_user_model().objects.get(username="alice")
    assert (user.is_staff, user.is_superuser, user.has_usable_password()) == (True, False, False)

    # A deactivated principal (the flag SCIM turns off) loses its console session at the next page.
    Principal.objects.filter(name="alice").update(active=False)
    assert session.get(f"{live_server.url}/admin/", timeout=30).url.startswith(f"{live_server.url}/admin/login/")
    Principal.objects.filter(name="alice").update(active=True)

    before = state()
    replayed = requests.Session().get(callback, timeout=30)
    assert replayed.status_code == 401 and "Sign-in with corp failed" in replayed.text
    replayed_in_session = session.get(callback, timeout=30)
    assert replayed_in_session.status_code == 401
    # A callback whose state is not the one this browser was sent with.
    session, login_page = _start_sign_in(live_server)
    callback = oidc.log_in(session, login_page, "alice", until=f"{live_server.url}/admin/sign-in/corp/callback")
    wrong_state = session.get(callback.replace("state=", "state=x"), timeout=30)
    assert wrong_state.status_code == 401
    assert state() == before


def test_console_sign_in_outside_the_staff_group_is_refused(live_server, oidc):
    session, login_page = _start_sign_in(live_server)
    callback = oidc.log_in(session, login_page, "bob", until=f"{live_server.url}/admin/sign-in/corp/callback")
    refused = session.get(callback, timeout=30)
    assert refused.status_code == 403 and "console-users" in refused.text
    assert session.get(f"{live_server.url}/admin/", timeout=30).url.startswith(f"{live_server.url}/admin/login/")


def test_a_local_account_is_not_taken_over_and_local_passwords_can_be_switched_off(live_server, oidc, settings):
    get_user_model().objects.create_superuser("alice", "alice@example.com", "local-password")
    session, login_page = _start_sign_in(live_server)
    callback = oidc.log_in(session, login_page, "alice", until=f"{live_server.url}/admin/sign-in/corp/callback")
    assert session.get(callback, timeout=30).status_code == 401

    session = requests.Session()
    assert 'id="login-form"' in session.get(f"{live_server.url}/admin/login/", timeout=30).text  # sets csrftoken
    settings.UCWEB_LOCAL_PASSWORDS = False
    page = session.get(f"{live_server.url}/admin/login/", timeout=30)
    assert 'id="login-form"' not in page.text and "Sign in with corp" in page.text
    posted = session.post(f"{live_server.url}/admin/login/?next=/admin/", data={
        "username": "alice", "password": "local-password", "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{live_server.url}/admin/login/"}, timeout=30)
    assert posted.status_code == 200 and "sessionid" not in session.cookies


def test_console_sign_in_in_chromium(live_server, oidc, driver):
    console = Console(driver, live_server.url)
    driver.delete_all_cookies()
    try:
        console.open("/admin/login/", expect="#sign-in-corp")
        console.shot("oidc-01-login")
        console.css("#sign-in-corp").click()
        console.css("input[name=login]").send_keys("alice")
        console.css("input[name=password]").send_keys("anything")
        console.css("button[type=submit]").click()
        assert "alice" in console.css("#user-tools").text.lower()
        assert driver.current_url == f"{live_server.url}/admin/"
        console.shot("oidc-02-signed-in")
        assert get_user_model().objects.get(username="alice").is_staff
        assert GroupClosure.objects.filter(principal="alice", group_name="console-users").exists()
    finally:
        driver.delete_all_cookies()


# -- an engine configured with a provider's token --------------------------------------------------------
@pytest.mark.spark
def test_sail_configured_with_a_provider_token_writes_as_its_principal(live_server, oidc, tmp_path, settings):
    from pyspark.sql.connect.session import SparkSession

    from tests.sail_server import SailServer

    settings.UCWEB_STORAGE_ROOT = (tmp_path / "storage").as_uri()
    token = oidc.access_token("alice")
    assert call(live_server, token).status_code == 200  # alice's groups are synced: analysts
    grant("analysts", "catalog", "unity", "USE_CATALOG")
    grant("analysts", "schema", "unity.default", "USE_SCHEMA", "CREATE_TABLE")
    sail = SailServer(uc_url=f"{live_server.url}{UC}", token=token, workdir=tmp_path / "sail")
    sail.start()
    try:
        spark = SparkSession.builder.remote(sail.remote).create()
        try:
            spark.sql("CREATE TABLE unity.default.signed_in (id INT) USING DELTA")
            spark.sql("INSERT INTO unity.default.signed_in VALUES (1), (2)")
            assert sorted(row.id for row in spark.sql("SELECT id FROM unity.default.signed_in").collect()) == [1, 2]
        finally:
            spark.stop()
    except Exception:
        print(sail.log_tail())
        raise
    finally:
        sail.stop()
    table = Table.objects.get(name="signed_in")
    assert table.owner == "alice"
    assert set(AuditEvent.objects.filter(securable_id=table.id).values_list("principal", flat=True)) == {"alice"}


# -- configuration --------------------------------------------------------------------------------------
def test_providers_are_configured_from_the_environment(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from ucweb.settings import oidc_providers_from_environment

    for name in ("UCWEB_OIDC_PROVIDERS", "UCWEB_OIDC_ISSUER", "UCWEB_OIDC_AUDIENCE", "UCWEB_OIDC_CLIENT_ID",
                 "UCWEB_OIDC_USERNAME_CLAIM", "UCWEB_OIDC_NAME"):
        monkeypatch.delenv(name, raising=False)
    assert oidc_providers_from_environment() == []  # the local playground: no provider
    monkeypatch.setenv("UCWEB_OIDC_ISSUER", "https://login.example.com/realms/corp/")
    monkeypatch.setenv("UCWEB_OIDC_CLIENT_ID", "ucweb-console")
    (single,) = oidc_providers_from_environment()
    assert single == {"issuer": "https://login.example.com/realms/corp", "name": "login.example.com",
                      "audience": "ucweb-console", "username_claim": "sub", "groups_claim": "groups",
                      "client_id": "ucweb-console", "client_secret": "", "staff_group": "",
                      "scopes": "openid email profile"}
    monkeypatch.setenv("UCWEB_OIDC_PROVIDERS", json.dumps([
        {"issuer": "https://a.example.com", "audience": "ucweb", "username_claim": "email"},
        {"issuer": "https://b.example.com", "audience": "ucweb", "name": "b"}]))
    assert [(p["name"], p["username_claim"]) for p in oidc_providers_from_environment()] == [
        ("a.example.com", "email"), ("b", "sub")]
    for wrong in ('[{"issuer": "https://a.example.com"}]', "{", '[{"issuer": "https://a.example.com", '
                  '"audience": "x", "username_claim": "name"}]', '[{"issuer": "https://a", "audience": "x"}, '
                  '{"issuer": "https://a", "audience": "y"}]'):
        monkeypatch.setenv("UCWEB_OIDC_PROVIDERS", wrong)
        with pytest.raises(ImproperlyConfigured):
            oidc_providers_from_environment()


def test_concurrent_first_requests_sync_the_groups_once(live_server, oidc):
    from concurrent.futures import ThreadPoolExecutor

    token = oidc.access_token("alice")
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda _: call(live_server, token).status_code, range(8)))
    assert statuses == [200] * 8
    assert AuditEvent.objects.filter(action="syncIdpGroups", securable_name="alice").count() == 1
    assert set(GroupClosure.objects.filter(principal="alice").values_list("group_name", flat=True)) == {
        "analysts", "console-users"}
