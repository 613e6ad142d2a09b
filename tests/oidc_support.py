"""A real OpenID provider for the tests: oidc-provider (tests/idp, installed by `make test`) on a
free loopback port, with users and groups a test can change, and a user's sign-in through its
login page (authorization code with PKCE) for tokens, as a person's browser would."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import subprocess
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.helpers import die_with_parent, free_port, stop_process, wait_for

IDP_DIR = Path(__file__).resolve().parent / "idp"
AUDIENCE = "urn:ucweb:catalog"  # the resource (audience) of the access tokens the provider issues
TOKEN_CLIENT = {"client_id": "tokens", "client_secret": "tokens-secret",
                "redirect_uris": ["http://127.0.0.1/callback"]}


def new_signing_key() -> tuple[rsa.RSAPrivateKey, dict]:
    """An RSA key and its private JWK (with a fresh `kid`), as the provider is configured with."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(key))
    jwk.pop("key_ops", None)  # PyJWT marks a private key "sign"; the provider publishes the public half for "verify"
    jwk.update(kid=uuid.uuid4().hex, use="sig", alg="RS256")
    return key, jwk


class IdentityProvider:
    """One oidc-provider process. `users` maps a login to its e-mail and groups; `set_users`
    rewrites the directory the provider reads at every sign-in."""

    def __init__(self, workdir: Path, *, users: dict, clients: list[dict] = ()):
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.users_file = workdir / "users.json"
        self.clients = [TOKEN_CLIENT, *clients]
        self.key, jwk = new_signing_key()
        self.jwks = [jwk]
        self.process: subprocess.Popen | None = None
        self.set_users(users)

    @property
    def kid(self) -> str:
        return self.jwks[0]["kid"]

    def set_users(self, users: dict) -> None:
        self.users_file.write_text(json.dumps(users))

    def start(self) -> IdentityProvider:
        config = self.workdir / "config.json"
        config.write_text(json.dumps({
            "port": self.port, "jwks": {"keys": self.jwks}, "clients": self.clients, "audience": AUDIENCE,
            "users_file": str(self.users_file)}))
        log = open(self.workdir / "idp.log", "ab")
        self.process = subprocess.Popen(["node", str(IDP_DIR / "server.mjs"), str(config)], cwd=IDP_DIR,
                                        stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        log.close()

        def discovery_answers():
            """the OpenID provider's discovery document"""
            assert self.process.poll() is None, (self.workdir / "idp.log").read_text()
            try:
                return requests.get(f"{self.issuer}/.well-known/openid-configuration", timeout=2).ok
            except requests.ConnectionError:
                return False

        wait_for(discovery_answers)
        return self

    def stop(self) -> None:
        stop_process(self.process, grace=5)
        self.process = None

    def rotate_key(self) -> None:
        """The provider signs with a new key from now on (the old one is gone): a restart with a
        new JWKS, on the same port and issuer."""
        self.stop()
        self.key, jwk = new_signing_key()
        self.jwks = [jwk]
        self.start()

    def provider_config(self, **fields) -> dict:
        """The provider as ucweb's settings hold it (UCWEB_OIDC_PROVIDERS)."""
        from ucweb.settings import oidc_provider

        return oidc_provider({"issuer": self.issuer, "audience": AUDIENCE, **fields})

    def log_in(self, session: requests.Session, response: requests.Response, login: str, *, until: str) -> str:
        """Signs in as `login` on the provider's login page (`response`, which led there) and
        follows the redirects up to the first one to a URL that starts with `until`: that URL."""
        assert response.ok and "/interaction/" in response.url, response.text
        response = session.post(response.url, data={"prompt": "login", "login": login, "password": "x"},
                                allow_redirects=False)
        while response.is_redirect and not response.headers["location"].startswith(until):
            response = session.get(urljoin(response.url, response.headers["location"]), allow_redirects=False)
        assert response.is_redirect, response.text
        return response.headers["location"]

    def sign_in(self, login: str, *, client: dict = TOKEN_CLIENT) -> dict:
        """The provider's token response (access_token, id_token) after `login` signs in on its
        login page: authorization code flow with PKCE, as a person's browser and a tool would."""
        session = requests.Session()
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        redirect_uri = client["redirect_uris"][0]
        response = session.get(f"{self.issuer}/auth", params={
            "client_id": client["client_id"], "response_type": "code", "redirect_uri": redirect_uri,
            "scope": "openid email profile groups", "code_challenge": challenge,
            "code_challenge_method": "S256", "resource": AUDIENCE, "state": secrets.token_urlsafe(8)})
        query = parse_qs(urlparse(self.log_in(session, response, login, until=redirect_uri)).query)
        assert "code" in query, query
        tokens = session.post(f"{self.issuer}/token", data={
            "grant_type": "authorization_code", "code": query["code"][0], "redirect_uri": redirect_uri,
            "code_verifier": verifier, "resource": AUDIENCE},
            auth=(client["client_id"], client["client_secret"]))
        assert tokens.ok, tokens.text
        return tokens.json()

    def access_token(self, login: str) -> str:
        return self.sign_in(login)["access_token"]
