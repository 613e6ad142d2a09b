"""A table's location is answered in the form it was registered in (catalog.locations.as_registered):
a directory registered with a trailing slash keeps it in the answers of the Unity Catalog and
Delta APIs, and one registered without keeps none. The location rule still compares canonical
forms: `dir`, `dir/` and `dir/sub` overlap however each was spelled, containment in an external
location is judged as before, and vended credentials (tests/test_credentials_vending.py) cover the
same directory."""

from __future__ import annotations

import pytest

from catalog import locations
from catalog.models import Table
from tests.helpers import UC, external_table_body, grant, rows

pytestmark = pytest.mark.django_db

DELTA_TABLES = f"{UC}/delta/v1/catalogs/unity/schemas/default/tables"


def register(client, name, location, **fields):
    body = external_table_body(name, location, catalog="unity", schema="default", **fields)
    return client.post(f"{UC}/tables", body, format="json")


def test_as_registered_keeps_only_a_directorys_slash():
    assert locations.as_registered("s3://b/x/dir/", "s3://b/x/dir") == "s3://b/x/dir/"
    assert locations.as_registered("s3://b/x/dir", "s3://b/x/dir") == "s3://b/x/dir"
    assert locations.as_registered("/data/dir/ ", "file:///data/dir") == "file:///data/dir/"
    assert locations.as_registered("file:///", "file:///") == "file:///"


def test_the_location_is_answered_as_registered(admin_client):
    for name, sent, answered in [
        ("with_slash", "s3://lake/x/dir/", "s3://lake/x/dir/"),
        ("without", "s3://lake/y/dir", "s3://lake/y/dir"),
        # Spelled otherwise, the canonical form is answered, with the directory's slash.
        ("respelled", "S3A://lake//z/dir//", "s3://lake/z/dir/"),
    ]:
        created = register(admin_client, name, sent)
        assert created.status_code == 200 and created.json()["storage_location"] == answered, created.content
        assert admin_client.get(f"{UC}/tables/unity.default.{name}").json()["storage_location"] == answered
        assert Table.objects.get(name=name).storage_location == answered.rstrip("/")  # compared canonical
    listed = admin_client.get(f"{UC}/tables", {"catalog_name": "unity", "schema_name": "default"}).json()
    assert {t["name"]: t["storage_location"] for t in listed["tables"]} == {
        "with_slash": "s3://lake/x/dir/", "without": "s3://lake/y/dir", "respelled": "s3://lake/z/dir/"}

    assert register(admin_client, "delta_dir", "s3://lake/d/events/", data_source_format="DELTA").status_code == 200
    assert admin_client.get(f"{DELTA_TABLES}/delta_dir").json()["metadata"]["location"] == "s3://lake/d/events/"


def test_a_protocol_that_moves_the_table_answers_the_new_location(admin_client):
    assert register(admin_client, "moved", "s3://lake/m/dir/").status_code == 200
    Table.objects.filter(name="moved").update(storage_location="s3://lake/m/elsewhere")
    assert admin_client.get(f"{UC}/tables/unity.default.moved").json()["storage_location"] == "s3://lake/m/elsewhere"


@pytest.mark.parametrize("first", ["s3://lake/x/dir/", "s3://lake/x/dir"])
def test_overlaps_are_judged_on_canonical_forms(admin_client, first):
    assert register(admin_client, "first", first).status_code == 200
    before = rows(Table)
    for other in ("s3://lake/x/dir", "s3://lake/x/dir/", "s3://lake/x/dir//", "s3://lake/x/dir/sub",
                  "s3://lake/x/dir/sub/", "s3://lake/x/", "s3://lake/x"):
        refused = register(admin_client, "second", other)
        assert refused.status_code == 400, (other, refused.content)
        assert refused.json()["error_code"] == "INVALID_PARAMETER_VALUE" and "overlaps" in refused.json()["message"]
    assert rows(Table) == before
    assert register(admin_client, "sibling", "s3://lake/x/dirx/").status_code == 200  # shares the text only


def test_external_location_containment_is_unchanged(admin_client, make_client):
    assert admin_client.post(f"{UC}/credentials", {"name": "lake", "aws_iam_role": {
        "role_arn": "arn:aws:iam::123456789012:role/lake"}}, format="json").status_code == 200
    assert admin_client.post(f"{UC}/external-locations", {
        "name": "landing", "url": "s3://lake/landing/", "credential_name": "lake"}, format="json").status_code == 200
    grant("bob", "catalog", "unity", "USE CATALOG")
    grant("bob", "schema", "unity.default", "USE SCHEMA", "CREATE TABLE")
    bob = make_client("bob")
    # Without CREATE EXTERNAL TABLE on the location, neither spelling is accepted.
    for location in ("s3://lake/landing/t/", "s3://lake/landing/t"):
        assert register(bob, "t", location).status_code == 403
    grant("bob", "external_location", "landing", "CREATE EXTERNAL TABLE")
    created = register(bob, "t", "s3://lake/landing/t/")
    assert created.status_code == 200 and created.json()["storage_location"] == "s3://lake/landing/t/"
    # Next to the location, sharing its text: outside it, whatever the slash.
    for location in ("s3://lake/landingx/u/", "s3://lake/landingx/u"):
        assert register(bob, "u", location).status_code == 403
