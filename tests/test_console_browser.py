"""The governance console in a real browser: headless Chromium from the distribution's packages,
driven by Selenium with the distribution's chromedriver (nothing is downloaded at run time).
Each test saves screenshots of the pages it visits, 1440 px wide, under var/screenshots/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from catalog.models import AuditEvent, Grant, Principal, Table
from catalog.services import catalogs, permissions, principals, schemas, tables

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.xdist_group("console_browser")]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SCREENSHOTS = Path(os.environ.get("UCWEB_SCREENSHOT_DIR", Path(settings.BASE_DIR) / "var" / "screenshots"))
WIDTH = 1440
PASSWORD = "console-test-password"


@pytest.fixture(scope="module")
def driver():
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("Chromium and chromedriver are missing: `make test` installs them (apt-get install chromium "
                    "chromium-driver), or install them by hand.")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never fetch a browser or a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={WIDTH},900", "--lang=en-US"):
        options.add_argument(argument)
    browser = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    yield browser
    browser.quit()


class Console:
    def __init__(self, driver, base: str):
        self.driver = driver
        self.base = base

    def wait(self, condition, timeout: float = 30):
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.driver, timeout).until(condition)

    def css(self, selector: str):
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as EC

        return self.wait(EC.presence_of_element_located((By.CSS_SELECTOR, selector)))

    def all(self, selector: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def open(self, path: str, *, expect: str = "#content"):
        self.driver.get(self.base + path)
        return self.css(expect)

    def login(self, username: str = "admin"):
        self.open("/admin/login/", expect="#id_username")
        self.css("#id_username").send_keys(username)
        self.css("#id_password").send_keys(PASSWORD)
        self.css("input[type=submit]").click()
        self.css("#user-tools")

    def select(self, selector: str, label: str):
        from selenium.webdriver.support.ui import Select

        Select(self.css(selector)).select_by_visible_text(label)

    def text(self) -> str:
        return self.css("body").text

    def shot(self, name: str) -> Path:
        """A full-page screenshot at 1440 px wide."""
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(WIDTH, max(900, min(int(height) + 40, 6000)))
        path = SCREENSHOTS / f"{name}.png"
        self.driver.save_screenshot(str(path))
        self.driver.set_window_size(WIDTH, 900)
        assert path.stat().st_size > 10_000, path
        return path


@pytest.fixture
def console(driver, live_server, bootstrap):
    get_user_model().objects.create_superuser("admin", "admin@example.com", PASSWORD)
    console = Console(driver, live_server.url)
    driver.delete_all_cookies()
    console.login()
    return console


@pytest.fixture
def namespace(bootstrap):
    admin = Principal.objects.get(name="admin")
    principals.ensure_principal(name="bob")
    catalogs.create_catalog(caller=admin, name="sales", comment="Sales data")
    schemas.create_schema(caller=admin, name="orders", catalog_name="sales")
    for catalog, schema, name in (("sales", "orders", "ext_orders"), ("unity", "default", "not_this_table")):
        tables.create_table(caller=admin, name=name, catalog_name=catalog, schema_name=schema, table_type="VIEW",
                            view_definition="select 1", columns=[{"name": "id", "type_name": "LONG"}])
    return Table.objects.get(name="ext_orders")


def test_landing_page_and_login(console):
    console.open("/", expect="h1")
    assert {"Governance console", "API docs", "Readiness", "liveness"} <= {a.text for a in console.all("a")}
    console.shot("01-landing")
    console.open("/admin/")
    assert "ucweb governance console" in console.text()
    # No worker runs beside the test's server: the home page says so, part by part.
    assert "Catalog health: unavailable" in console.text() and "no Celery worker has ever reported" in console.text()
    console.shot("02-console-home")


def test_grant_and_revoke_through_the_pickers(console, namespace):
    console.open("/admin/catalog/grant/add/?securable_type=catalog", expect="#grant-form")
    assert "sales.orders.ext_orders" not in console.css("#id_securable").text
    console.select("#id_type_picker", "table")  # reloads the page with the tables to pick from
    console.wait(lambda d: "securable_type=table" in d.current_url)
    console.select("#id_securable", "sales.orders.ext_orders")
    console.select("#id_principal", "bob (user)")
    console.css("#id_privileges input[value='SELECT']").click()
    console.shot("03-grant-picker")
    console.css("#grant-submit").click()
    console.css(".messagelist .success")
    assert "Granted SELECT on sales.orders.ext_orders to bob." in console.text()
    console.shot("04-grants")
    grant = Grant.objects.get(principal="bob")
    assert (grant.securable_id, grant.securable_name) == (namespace.id, "sales.orders.ext_orders")

    console.open("/admin/catalog/auditevent/?action=updatePermissions", expect="#result_list")
    row = console.css("#result_list tbody tr").text
    assert "admin" in row and "updatePermissions" in row and "sales.orders.ext_orders" in row and "SUCCESS" in row
    console.shot("05-audit-trail")

    console.open("/admin/catalog/grant/", expect="#result_list")
    console.css(f"a[data-grant='{grant.pk}']").click()
    console.css("#revoke-confirm").click()
    console.css(".messagelist .success")
    assert "Revoked SELECT on sales.orders.ext_orders from bob." in console.text()
    assert not Grant.objects.exists()
    assert AuditEvent.objects.filter(action="updatePermissions", securable_id=namespace.id).count() == 2


def test_inherited_access_on_a_table_and_on_a_principal(console, namespace):
    admin = Principal.objects.get(name="admin")
    permissions.update_permissions(caller=admin, securable_type="catalog", full_name="sales",
                                   changes=[{"principal": "bob", "add": ["USE CATALOG", "SELECT"]}])
    console.open(f"/admin/catalog/table/{namespace.id}/change/", expect="#effective-access")
    bob = console.css("#effective-access tr[data-principal='bob']").text
    assert "SELECT" in bob and "inherited from a grant on catalog sales" in bob
    assert "missing USE SCHEMA on schema sales.orders" in bob
    console.shot("06-table-effective-access")

    console.open(f"/admin/catalog/principal/{Principal.objects.get(name='bob').pk}/change/", expect="#reach")
    reach = console.css("#reach tr[data-securable='sales.orders.ext_orders']").text
    assert "inherited from a grant on catalog sales" in reach
    console.shot("07-principal-reach")

    console.open(f"/admin/catalog/principal/check/?securable_type=table&securable={namespace.id}",
                 expect="#check-form")
    console.select("#id_principal", "bob (user)")
    console.select("#id_privilege", "SELECT")
    console.css("#check-submit").click()
    answer = console.css("#check-answer").text
    assert answer.startswith("No:") and "bob may not use SELECT on table sales.orders.ext_orders" in answer
    assert "no grant of USE SCHEMA to bob on schema sales.orders" in console.text()
    console.shot("08-check-access")


def fill_the_grant_form(console) -> None:
    """The console's grant form, filled in (not sent): MODIFY on table sales.orders.ext_orders to bob."""
    console.open("/admin/catalog/grant/add/?securable_type=table", expect="#grant-form")
    console.select("#id_securable", "sales.orders.ext_orders")
    console.select("#id_principal", "bob (user)")
    console.css("#id_privileges input[value='MODIFY']").click()


def test_the_forged_mismatched_grant_fails_in_the_browser(console, namespace):
    other = Table.objects.get(name="not_this_table")
    fill_the_grant_form(console)
    # The forger edits the page: the table's id under the catalog type, and a free-text name.
    console.driver.execute_script("""
        const form = document.getElementById('grant-form');
        form.querySelector('input[name=securable_type]').value = 'catalog';
        const name = document.createElement('input');
        name.type = 'hidden'; name.name = 'securable_name'; name.value = 'unity.default.not_this_table';
        form.appendChild(name);
    """)
    console.css("#grant-submit").click()
    console.css(".errorlist")
    console.shot("09-forged-grant-refused")
    assert not Grant.objects.exists()
    # The same edit without the type change grants on the picked row, under its own name.
    fill_the_grant_form(console)
    console.driver.execute_script("""
        const name = document.createElement('input');
        name.type = 'hidden'; name.name = 'securable_name'; name.value = 'unity.default.not_this_table';
        document.getElementById('grant-form').appendChild(name);
    """)
    console.css("#grant-submit").click()
    console.css(".messagelist .success")
    assert list(Grant.objects.values_list("securable_id", "securable_name")) == [
        (namespace.id, "sales.orders.ext_orders")]
    assert not Grant.objects.filter(securable_id=other.id).exists()
    # Django's stock add form with free-text fields is not there to be used.
    console.open("/admin/catalog/grant/add/", expect="#grant-form")
    assert not console.all("input[name=securable_name]") and not console.all("input[name=securable_id]")


def test_delta_and_iceberg_table_pages_show_their_history(console, delta, make_token, live_server):
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.schema import Schema as IcebergSchema
    from pyiceberg.types import LongType, NestedField

    created = delta.create_table("unity", "default", "events")
    for version in (1, 2, 3):
        delta.append(created.table_id, created.storage_location, version, f"p{version}.parquet",
                     publish=version < 3)
    console.open(f"/admin/catalog/table/{created.table_id}/change/", expect="#delta-history")
    assert len(console.all("#delta-history tr.uc-commit")) == 3
    assert not console.all("#iceberg-snapshots")
    history = console.css("#delta-history").text
    assert "WRITE" in history and "not yet" in history and "published" in history
    console.shot("10-delta-table")

    catalog = RestCatalog("ucweb", uri=f"{live_server.url}/api/catalog", warehouse="unity",
                          token=make_token("admin", admin=True))
    table = catalog.create_table("default.trips", IcebergSchema(NestedField(1, "id", LongType(), required=False)))
    for start in (0, 100, 200):
        table.append(pa.Table.from_pylist([{"id": start + i} for i in range(5)],
                                          schema=pa.schema([pa.field("id", pa.int64())])))
    row = Table.objects.get(name="trips")
    console.open(f"/admin/catalog/table/{row.id}/change/", expect="#iceberg-snapshots")
    assert len(console.all("#iceberg-snapshots tr.uc-snapshot")) == 3
    assert not console.all("#delta-history")
    assert "main" in console.css("#iceberg-refs").text
    assert "metadata.json" in console.css("#iceberg-metadata-history").text
    console.shot("11-iceberg-table")
