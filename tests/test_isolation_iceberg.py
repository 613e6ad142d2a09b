"""Storage isolation through the Iceberg REST API, driven by pyiceberg as bob (a principal with
CREATE TABLE on unity.default and CREATE EXTERNAL TABLE on his own external location only): no
location he names reaches storage that is not his, whatever the spelling, on file:// and S3.

Each case asserts the refusal (status and error type), that the storage trees (managed root and
external locations) are byte for byte what they were, that no table row appeared, and that the
log and the answer hold no file content."""

from __future__ import annotations

import json
import os
import uuid

import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError, ForbiddenError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from pyiceberg.view.metadata import SQLViewRepresentation, ViewVersion

from catalog.models import Table
from catalog.storage import parse, storage_for
from tests.isolation import (
    ICEBERG,
    SECRET,
    STORES,
    assert_quiet,
    iceberg_table_body,
    shared_attacks,
    symlink_to,
    world_on,
)

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True))
REFUSED = {400: BadRequestError, 403: ForbiddenError}


@pytest.fixture(params=STORES)
def world(request, live_server, bootstrap, admin_client, tmp_path):
    world = world_on(request, admin_client=admin_client, tmp_path=tmp_path)
    world.extra["url"] = live_server.url
    world.extra["client_properties"] = {} if world.server is None else {
        "s3.access-key-id": world.server.access_key, "s3.secret-access-key": world.server.secret_key}
    return world


def connect(world, make_token, name="bob", admin=False) -> RestCatalog:
    return RestCatalog(name, uri=f"{world.extra['url']}{ICEBERG}", warehouse="unity",
                       token=make_token(name, admin=admin), **world.extra["client_properties"])


def http(world, make_token, name="bob", admin=False):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {make_token(name, admin=admin)}"
    base = f"{world.extra['url']}{ICEBERG}/v1/unity"
    return lambda method, path, body=None: session.request(method, base + path, json=body, timeout=30)


def attacks(world) -> list[tuple[str, str, int]]:
    """(what, location, expected status) for every spelling of a location that is not bob's."""
    victim = parse(world.victim)
    cases = [
        *shared_attacks(world),
        ("a relative path", "tables/x", 400),
    ]
    if world.kind == "file":
        cases += [
            ("FILE://localhost/", "FILE://localhost" + victim.path, 400),
            ("a bare path to another table", victim.path, 400),
            ("file:///etc", "file:///etc", 403),
            ("a symbolic link to another table", symlink_to(world.victim, world), 400),
        ]
    return cases


def refused(status: int, call, caplog, world, what: str) -> str:
    """Runs `call` (a pyiceberg call or an HTTP request) and checks the refusal and its traces."""
    before = world.tree()
    tables = set(Table.objects.values_list("id", flat=True))
    error = None
    try:
        response = call()
    except (BadRequestError, ForbiddenError) as exc:
        error = exc
    if error is not None:
        assert isinstance(error, REFUSED[status]), (what, error)
        text = str(error)
    else:
        assert response.status_code == status, (what, response.status_code, response.text)
        body = response.json()["error"]
        assert body["code"] == status and body["type"] == (
            "BadRequestException" if status == 400 else "ForbiddenException"), (what, body)
        text = response.text
    assert world.tree() == before, what
    assert set(Table.objects.values_list("id", flat=True)) == tables, what
    assert not os.path.exists("/etc/metadata") and not os.path.exists("/etc/data")
    assert_quiet(caplog, text)
    return text


def test_create_table_at_a_location_that_is_not_the_callers(world, make_token, caplog):
    bob = connect(world, make_token)
    for index, (what, location, status) in enumerate(attacks(world)):
        text = refused(status, lambda: bob.create_table(("default", f"t{index}"), schema=SCHEMA, location=location),
                       caplog, world, what)
        assert text
    # His own external location works, written as a bare path on file://.
    own = world.fresh()
    mine = bob.create_table(("default", "mine"), schema=SCHEMA,
                            location=parse(own).path if world.kind == "file" else own)
    assert mine.metadata.location == own
    assert Table.objects.get(name="mine").table_type == "EXTERNAL"


def test_stage_create_at_a_location_that_is_not_the_callers(world, make_token, caplog):
    bob = connect(world, make_token)
    for index, (what, location, status) in enumerate(attacks(world)):
        refused(status, lambda: bob.create_table_transaction(("default", f"s{index}"), schema=SCHEMA,
                                                             location=location), caplog, world, what)


def test_views_at_a_location_that_is_not_the_callers(world, make_token, caplog):
    bob = connect(world, make_token)
    version = ViewVersion(version_id=1, schema_id=0, summary={"engine-name": "pyiceberg"},
                          representations=[SQLViewRepresentation(type="sql", sql="SELECT 1", dialect="spark")],
                          default_namespace=["default"])
    for index, (what, location, status) in enumerate(attacks(world)):
        refused(status, lambda: bob.create_view(("default", f"v{index}"), SCHEMA, version, location=location),
                caplog, world, what)


def test_set_location_to_a_location_that_is_not_the_callers(world, make_token, caplog):
    """pyiceberg has no client for set-location (Transaction.update_location is not implemented):
    the commit is sent as pyiceberg would send it."""
    bob = connect(world, make_token)
    send = http(world, make_token)
    own = world.fresh()
    bob.create_table(("default", "mine"), schema=SCHEMA, location=own)
    for what, location, status in attacks(world):
        body = {"requirements": [], "updates": [{"action": "set-location", "location": location}]}
        refused(status, lambda: send("POST", "/namespaces/default/tables/mine", body), caplog, world, what)
        assert bob.load_table(("default", "mine")).metadata.location == own
    assert Table.objects.get(name="mine").storage_location == own
    # Moving inside his own external location works.
    moved = send("POST", "/namespaces/default/tables/mine",
                 {"updates": [{"action": "set-location", "location": f"{own}-moved"}]})
    assert moved.status_code == 200, moved.text
    assert Table.objects.get(name="mine").storage_location == f"{own}-moved"


def test_assert_create_commits_at_a_location_that_is_not_the_callers(world, make_token, caplog):
    """The commit of a staged create (one table, POST .../tables/{name}) and a multi-table
    transaction (POST /transactions/commit) that create a table with assert-create."""
    send = http(world, make_token)
    staged = send("POST", "/namespaces/default/tables", {**iceberg_table_body("staged"), "stage-create": True})
    assert staged.status_code == 200, staged.text
    metadata = staged.json()["metadata"]
    updates = [
        {"action": "assign-uuid", "uuid": metadata["table-uuid"]},
        {"action": "upgrade-format-version", "format-version": metadata["format-version"]},
        {"action": "add-schema", "schema": metadata["schemas"][0], "last-column-id": metadata["last-column-id"]},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": metadata["partition-specs"][0]},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": metadata["sort-orders"][0]},
        {"action": "set-default-sort-order", "sort-order-id": -1},
    ]

    def change(location):
        return {"requirements": [{"type": "assert-create"}],
                "updates": [*updates, {"action": "set-location", "location": location}]}

    for what, location, status in attacks(world):
        refused(status, lambda: send("POST", "/namespaces/default/tables/staged", change(location)),
                caplog, world, what)
        body = {"table-changes": [{"identifier": {"namespace": ["default"], "name": "staged"}, **change(location)}]}
        refused(status, lambda: send("POST", "/transactions/commit", body), caplog, world, what)
    # Another table's uuid does not make its managed location the new table's own.
    victim_id = str(Table.objects.get(name="victim").id)
    assert world.victim.endswith(victim_id)
    borrowed = [{"action": "assign-uuid", "uuid": victim_id}, *updates[1:],
                {"action": "set-location", "location": world.victim}]
    stolen = {"requirements": [{"type": "assert-create"}], "updates": borrowed}
    refused(400, lambda: send("POST", "/namespaces/default/tables/staged", stolen), caplog, world,
            "another table's uuid and managed location")
    body = {"table-changes": [{"identifier": {"namespace": ["default"], "name": "staged"}, **stolen}]}
    refused(400, lambda: send("POST", "/transactions/commit", body), caplog, world,
            "another table's uuid and managed location")
    # The location the stage-create assigned is accepted.
    body = {"table-changes": [{"identifier": {"namespace": ["default"], "name": "staged"},
                               **change(metadata["location"])}]}
    assert send("POST", "/transactions/commit", body).status_code == 204
    assert Table.objects.get(name="staged").table_type == "MANAGED"


# -- register ----------------------------------------------------------------------------------------
def _write(url: str, payload: bytes) -> None:
    storage_for(url).put(url, payload)


def test_register_reads_only_what_the_caller_may_use(world, make_token, caplog):
    bob = connect(world, make_token)
    send = http(world, make_token)
    victim_json = storage_for(world.victim_metadata).read(world.victim_metadata)
    forged = json.loads(victim_json)
    forged["table-uuid"] = str(uuid.uuid4())
    own = world.fresh("forged")
    forged_file = f"{own}/metadata/00000-{uuid.uuid4()}.metadata.json"
    _write(forged_file, json.dumps(forged).encode())  # bob's own file, naming the victim's folder
    not_metadata = f"{world.bob}/copy-{uuid.uuid4().hex[:6]}.metadata.json"
    _write(not_metadata, f"root:x:0:0:{SECRET}\n".encode())
    delta_log = f"{world.bob}/d/_delta_log/00000000000000000000.json"
    _write(delta_log, json.dumps({"commitInfo": {"secret": SECRET}}).encode())
    cases = [
        ("another table's metadata file", world.victim_metadata, 400),
        ("a table of another catalog", world.secret_metadata, 400),
        ("metadata naming another table's folder", forged_file, 400),
        ("a file that is not metadata", not_metadata, 400),
        ("a Delta log file", delta_log, 400),
        ("a file in another principal's external location", f"{world.carol_table}/metadata/x.metadata.json", 400),
        ("'..' into another table", f"{world.bob}/../carol/t1/metadata/v.metadata.json", 400),
        ("percent-encoded '..'", f"{world.bob}/%2e%2e/carol/t1/metadata/v.metadata.json", 400),
    ]
    if world.kind == "file":
        link = parse(f"{world.bob}/link-{uuid.uuid4().hex[:6]}.metadata.json").path
        os.symlink("/etc/passwd", link)
        cases += [
            ("/etc/passwd", "/etc/passwd", 400),
            ("file:///etc/passwd", "file:///etc/passwd", 400),
            ("/proc/self/environ", "file:///proc/self/environ", 400),
            ("a symbolic link to /etc/passwd", link, 400),
            ("a metadata file outside every external location", "file:///tmp/x.metadata.json", 403),
        ]
    for index, (what, location, status) in enumerate(cases):
        refused(status, lambda: bob.register_table(("default", f"r{index}"), location), caplog, world, what)
        answer = send("POST", "/namespaces/default/register", {"name": f"h{index}", "metadata-location": location})
        assert answer.status_code == status, (what, answer.text)
        assert_quiet(caplog, answer.text)
    assert not Table.objects.filter(name__startswith="r").exists()

    # A metastore admin is held to the same: no other table's files, no file content anywhere.
    admin = connect(world, make_token, "admin", admin=True)
    for what, location in [("another table's metadata file", world.victim_metadata),
                           ("metadata naming another table's folder", forged_file),
                           ("a file that is not metadata", not_metadata)]:
        refused(400, lambda: admin.register_table(("default", "by_admin"), location), caplog, world, what)
    if world.kind == "file":
        for location in ("/etc/passwd", "file:///proc/self/environ"):
            refused(400, lambda: admin.register_table(("default", "by_admin"), location), caplog, world, location)

    # bob's own metadata, in his own location, registers.
    table = bob.create_table(("default", "source"), schema=SCHEMA, location=world.fresh("src"))
    bob.drop_table(("default", "source"))
    registered = bob.register_table(("default", "again"), table.metadata_location)
    assert registered.metadata.location == table.metadata.location


# Object stores have no folders and no links: these worlds are on file:// only.
@pytest.mark.parametrize("world", ["file"], indirect=True)
@pytest.mark.parametrize("staged", [True, False], ids=["stage-create", "create"])
def test_a_create_writes_nothing_through_a_link_in_its_location(world, make_token, caplog, staged):
    """A create in bob's own location whose `metadata` folder is a link to another table's folder:
    the catalog makes no folder and writes no metadata file through the link."""
    location = world.fresh("linked")
    os.makedirs(parse(location).path)
    os.symlink(parse(world.victim).path, os.path.join(parse(location).path, "metadata"))
    send = http(world, make_token)
    text = refused(400, lambda: send("POST", "/namespaces/default/tables", {
        **iceberg_table_body("linked", location), "stage-create": staged}), caplog, world,
        "a create whose metadata folder is a link to another table")
    assert "symbolic link" in text


@pytest.mark.parametrize("world", ["file"], indirect=True)
def test_a_commit_writes_nothing_through_a_link_planted_in_the_table(world, make_token, caplog):
    """bob's table, whose `metadata` folder bob then replaces with a link to another table's
    folder: the next commit writes its metadata file nowhere, and the table stays as it was."""
    send = http(world, make_token)
    location = world.fresh("planted")
    assert send("POST", "/namespaces/default/tables", iceberg_table_body("planted", location)).status_code == 200
    folder = os.path.join(parse(location).path, "metadata")
    os.rename(folder, folder + ".moved")
    os.symlink(parse(world.victim).path, folder)
    pointer = Table.objects.get(name="planted").iceberg.metadata_location
    text = refused(400, lambda: send("POST", "/namespaces/default/tables/planted", {
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"owner-team": "bob"}}]}),
        caplog, world, "a commit whose metadata folder is now a link to another table")
    assert "symbolic link" in text
    assert Table.objects.get(name="planted").iceberg.metadata_location == pointer
