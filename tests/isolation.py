"""What the storage-isolation tests share: a snapshot of a storage tree (to show that a refused
request wrote and deleted nothing), the world they attack, and the checks every case makes.

The world, on file:// or on SeaweedFS (s3://):

    managed root      <root>/tables/<id>   unity.default.victim (admin's managed Iceberg table, data)
                                           cat_b.s.secret       (another catalog's managed table)
    external root     <ext>/bob            external location `bobs`: bob holds CREATE EXTERNAL TABLE
                      <ext>/carol          external location `carols`: carol's, with carol's table
                                           unity.default.carol_t at <ext>/carol/t1

bob holds USE CATALOG unity, USE SCHEMA, CREATE TABLE and CREATE SCHEMA there, nothing on cat_b.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass, field

import pytest

from catalog.storage import parse, storage_for
from tests.helpers import UC, grant

ICEBERG = "/api/catalog"
SECRET = "ucweb-isolation-secret-7f3a"  # planted in files that must never be echoed


def snapshot(*urls: str) -> dict[str, str]:
    """Every object under each URL (and on file:// every folder too): name → size and digest.
    Two equal snapshots mean nothing was written, changed or deleted there."""
    found: dict[str, str] = {}
    for url in urls:
        location = parse(url)
        if location.scheme == "file":
            for directory, folders, files in os.walk(location.path):
                found[directory + "/"] = "folder"
                for name in files:
                    path = os.path.join(directory, name)
                    with open(path, "rb") as handle:
                        found[path] = hashlib.sha256(handle.read()).hexdigest()
        else:
            storage = storage_for(url)
            for info in storage.list(url):
                found[info.url] = f"{info.size}:{hashlib.sha256(storage.read(info.url)).hexdigest()}"
    return found


def symlink_to(target: str, world) -> str:
    """A symbolic link in bob's own external location (file://) that points at `target`."""
    link = os.path.join(parse(world.bob).path, f"link-{uuid.uuid4().hex[:6]}")
    os.symlink(parse(target).path, link)
    return "file://" + link


def assert_quiet(caplog, response_text: str = "", *secrets: str) -> None:
    """Neither the server log nor the answer holds file content (the planted secret, the first
    line of /etc/passwd) or a traceback."""
    log = caplog.text
    for secret in (SECRET, "root:x:0:0", *secrets):
        assert secret not in log, f"{secret!r} leaked into the log"
        assert secret not in response_text, f"{secret!r} leaked into the answer"
    assert "Traceback" not in log


@dataclass
class World:
    kind: str  # file or s3
    root: str  # the managed storage root
    ext: str  # the folder of the external locations
    victim: str = ""  # location of unity.default.victim
    victim_metadata: str = ""
    secret_table: str = ""  # location of cat_b.s.secret
    secret_metadata: str = ""
    carol_table: str = ""
    server: object = None  # the S3 server (tests/s3_server.py) of an s3 world
    extra: dict = field(default_factory=dict)
    bob: str = field(init=False)  # the folder of bob's external location, in ext
    carol: str = field(init=False)  # and of carol's

    def __post_init__(self) -> None:
        self.bob, self.carol = f"{self.ext}/bob", f"{self.ext}/carol"

    def tree(self) -> dict[str, str]:
        return snapshot(self.root, self.ext)

    def fresh(self, name: str = "t") -> str:
        return f"{self.bob}/{name}-{uuid.uuid4().hex[:6]}"


def make_external_location(client, name: str, url: str) -> None:
    if client.get(f"{UC}/credentials/files").status_code == 404:
        response = client.post(f"{UC}/credentials", {
            "name": "files", "purpose": "STORAGE",
            "aws_iam_role": {"role_arn": "arn:aws:iam::123456789012:role/files"}}, format="json")
        assert response.status_code == 200, response.content
    response = client.post(f"{UC}/external-locations", {"name": name, "url": url, "credential_name": "files"},
                           format="json")
    assert response.status_code == 200, response.content


def iceberg_table_body(name: str, location: str | None = None) -> dict:
    body = {"name": name, "schema": {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True}]}}
    if location is not None:
        body["location"] = location
    return body


def build_world(kind: str, root: str, ext: str, *, admin_client) -> World:
    """Catalog cat_b, the external locations, bob's and carol's grants, and the victims' tables
    (through the Iceberg API as the admin and as carol)."""
    from rest_framework.test import APIClient

    from catalog.services import principals

    world = World(kind, root, ext)
    if kind == "file":
        os.makedirs(parse(world.bob).path, exist_ok=True)
        os.makedirs(parse(world.carol).path, exist_ok=True)
    make_external_location(admin_client, "bobs", world.bob)
    make_external_location(admin_client, "carols", world.carol)
    for principal in ("bob", "carol"):
        grant(principal, "catalog", "unity", "USE CATALOG")
        grant(principal, "schema", "unity.default", "USE SCHEMA", "CREATE TABLE")
    grant("bob", "catalog", "unity", "CREATE SCHEMA")
    grant("bob", "external_location", "bobs", "CREATE EXTERNAL TABLE", "READ FILES")
    grant("carol", "external_location", "carols", "CREATE EXTERNAL TABLE", "READ FILES")
    assert admin_client.post(f"{UC}/catalogs", {"name": "cat_b"}, format="json").status_code == 200
    assert admin_client.post(f"{UC}/schemas", {"name": "s", "catalog_name": "cat_b"},
                             format="json").status_code == 200

    def iceberg(client, prefix, body):
        response = client.post(f"{ICEBERG}/v1/{prefix}/namespaces/{'default' if prefix == 'unity' else 's'}/tables",
                               body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    victim = iceberg(admin_client, "unity", iceberg_table_body("victim"))
    world.victim, world.victim_metadata = victim["metadata"]["location"], victim["metadata-location"]
    secret = iceberg(admin_client, "cat_b", iceberg_table_body("secret"))
    world.secret_table, world.secret_metadata = secret["metadata"]["location"], secret["metadata-location"]
    carol = APIClient()
    carol.credentials(HTTP_AUTHORIZATION=f"Bearer {principals.issue_token(principal=principals.ensure_principal(name='carol'))}")
    world.carol_table = iceberg(carol, "unity", iceberg_table_body("carol_t", f"{world.carol}/t1"))["metadata"]["location"]
    # Data the victims would lose: a data file in each table folder.
    for location in (world.victim, world.secret_table, world.carol_table):
        storage_for(location).put(f"{location}/data/part-0.parquet", SECRET.encode())
    return world


# The stores a world is built on: a fixture parametrized by them calls `world_on`.
STORES = ["file", pytest.param("s3", marks=pytest.mark.s3)]


def world_on(request, *, admin_client, tmp_path) -> World:
    """The world on the store of `request.param` (one of STORES): managed storage at the test's
    own root, the external locations in a fresh folder beside it."""
    if request.param == "file":
        root = request.getfixturevalue("storage_root").as_uri()
        ext = (tmp_path / "external").as_uri()
        server = None
    else:
        server = request.getfixturevalue("s3_server")
        root = request.getfixturevalue("s3_storage_root")
        ext = server.url(f"ext-{uuid.uuid4().hex[:8]}")
    world = build_world(request.param, root, ext, admin_client=admin_client)
    world.server = server
    return world


def shared_attacks(world) -> list[tuple[str, str, int]]:
    """(what, location, expected status): the spellings of a location that is not bob's that
    every protocol must refuse alike."""
    return [
        ("another table's folder", world.victim, 400),
        ("inside another table's folder", f"{world.victim}/data", 400),
        ("a table of another catalog", world.secret_table, 400),
        ("the managed storage root", world.root, 400),
        ("the managed tables area", f"{world.root}/tables/{uuid.uuid4()}", 400),
        ("another principal's external location", f"{world.carol}/new", 403),
        ("a table in another principal's external location", world.carol_table, 400),
        ("'..' out of his own location", f"{world.bob}/../carol/t1", 400),
        ("percent-encoded '..'", f"{world.bob}/%2e%2e/carol/t1", 400),
        ("percent-encoded '/' and '..'", f"{world.bob}%2F..%2Fcarol%2Ft1", 400),
        ("duplicate and trailing slashes", world.victim.replace("/tables/", "//tables//") + "//", 400),
    ]
