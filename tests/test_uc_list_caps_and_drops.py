"""What the one declaration of the UC endpoints (catalog.api.uc.resources) and the shared drop recipe
brought: every list is capped at its Unity Catalog spec maximum even when the server's own ceiling
(UCWEB_MAX_PAGE_SIZE) is above it, a dropped catalog's audit event keeps its id, and a catalog or
schema is locked while it is dropped (what is created in it meanwhile cannot slip in after the
check that it is empty)."""

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from catalog.choices import CredentialPurpose
from catalog.models import AuditEvent, Catalog, Credential, ExternalLocation, Function, Schema, Volume
from catalog.pagination import SPEC_MAXIMUM
from tests.helpers import UC

pytestmark = pytest.mark.django_db


@pytest.fixture
def sales(admin_client, storage_root) -> Schema:
    assert admin_client.post(f"{UC}/catalogs", {"name": "shop"}, format="json").status_code == 200
    assert admin_client.post(f"{UC}/schemas", {"name": "sales", "catalog_name": "shop"},
                             format="json").status_code == 200
    return Schema.objects.get(catalog__name="shop", name="sales")


def volumes(schema, count):
    Volume.objects.bulk_create(
        Volume(schema=schema, name=f"v{i:05}", volume_type="EXTERNAL", storage_location=f"file:///v/{i}", owner="admin")
        for i in range(count))


def functions(schema, count):
    Function.objects.bulk_create(
        Function(schema=schema, name=f"f{i:05}", data_type="INT", full_data_type="INT", routine_body="SQL",
                 routine_definition="1", parameter_style="S", is_deterministic=True, sql_data_access="NO_SQL",
                 is_null_call=False, security_type="DEFINER", specific_name=f"f{i:05}", owner="admin")
        for i in range(count))


def credentials(schema, count):
    Credential.objects.bulk_create(
        Credential(name=f"c{i:05}", purpose=CredentialPurpose.STORAGE, owner="admin") for i in range(count))


def external_locations(schema, count):
    credential = Credential.objects.create(name="lake", owner="admin")
    ExternalLocation.objects.bulk_create(
        ExternalLocation(name=f"l{i:05}", url=f"file:///lake/{i:05}", credential=credential, owner="admin")
        for i in range(count))


LISTS = {  # the key of the list in the answer: its path, and how its rows are made
    "volumes": ("/volumes?catalog_name=shop&schema_name=sales", volumes),
    "functions": ("/functions?catalog_name=shop&schema_name=sales", functions),
    "credentials": ("/credentials", credentials),
    "external_locations": ("/external-locations", external_locations),
}


@pytest.mark.parametrize("key", sorted(LISTS))
def test_a_list_is_capped_at_its_spec_maximum_above_the_server_ceiling(admin_client, sales, key):
    path, make_rows = LISTS[key]
    maximum = SPEC_MAXIMUM[key]
    make_rows(sales, maximum + 1)
    separator = "&" if "?" in path else "?"
    with override_settings(UCWEB_MAX_PAGE_SIZE=maximum * 2):
        page = admin_client.get(f"{UC}{path}{separator}max_results={maximum * 2}")
        assert page.status_code == 200, page.content
        body = page.json()
        assert len(body[key]) == maximum
        assert body["next_page_token"]
        rest = admin_client.get(f"{UC}{path}{separator}max_results={maximum * 2}"
                                f"&page_token={body['next_page_token']}").json()
    assert len(rest[key]) == 1 and "next_page_token" not in rest


def test_the_audit_event_of_a_dropped_catalog_has_its_id(admin_client, storage_root):
    assert admin_client.post(f"{UC}/catalogs", {"name": "gone"}, format="json").status_code == 200
    catalog_id = Catalog.objects.get(name="gone").id
    assert admin_client.delete(f"{UC}/catalogs/gone").status_code == 200
    event = AuditEvent.objects.filter(action="deleteCatalog").order_by("-id").first()
    assert (event.securable_name, event.securable_id) == ("gone", catalog_id)
    assert event.details == {"force": False}


@pytest.mark.parametrize("path, model", [("/schemas/shop.sales", Schema), ("/catalogs/shop?force=true", Catalog)])
def test_a_dropped_catalog_or_schema_is_locked_first(admin_client, sales, path, model):
    with CaptureQueriesContext(connection) as queries:
        assert admin_client.delete(f"{UC}{path}").status_code == 200
    locked = [q["sql"] for q in queries if q["sql"].endswith("FOR UPDATE") or " FOR UPDATE OF " in q["sql"]]
    assert locked and f'FROM "{model._meta.db_table}"' in locked[0]
