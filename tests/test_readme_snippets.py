"""The snippets of the README and docs/, run as printed (tests/readme_snippets.py), against a live
server bootstrapped as `make run` bootstraps it."""

import ast
import json
import re
import shlex
from pathlib import Path

import pytest
import requests
import yaml
from django.contrib.auth import get_user_model
from django.db import connection
from pyiceberg.catalog.rest import RestCatalog

from catalog.models import AuditEvent, Grant, GroupMember, Table
from catalog.services import principals
from tests import readme_snippets
from tests.pyiceberg_support import SCHEMA
from tests.server_process import database_url

pytestmark = pytest.mark.django_db(transaction=True)


class Reader:
    """A reader of the README and docs/ with the server they address and alice's admin token as
    $TOKEN (as the README's first step makes it), in a folder of their own unless told."""

    def __init__(self, url: str, token: str, cwd: Path):
        self.url, self.token, self.cwd = url, token, cwd

    def python(self, name: str, **options) -> str:
        return readme_snippets.run_python(name, **{"server": self.url, "token": self.token, "cwd": self.cwd, **options})

    def shell(self, name: str, **options) -> str:
        return readme_snippets.run_shell(name, **{"server": self.url, "token": self.token, "cwd": self.cwd, **options})


@pytest.fixture
def reader(live_server, bootstrap, make_token, storage_root, tmp_path) -> Reader:
    return Reader(live_server.url, make_token("alice", admin=True), tmp_path)


def test_every_marked_snippet_is_named_once_and_fenced():
    marked = readme_snippets.snippets()
    assert {"uc-sdk", "pyiceberg", "duckdb-iceberg", "polars", "duckdb-delta", "deltalake", "daft-iceberg",
            "dlt-iceberg", "pyiceberg-cli", "first-token", "console-login", "iceberg-connect", "spark-iceberg",
            "iceberg-scan-planning", "polaris-client", "polaris-cli-roles", "polaris-cli-privileges",
            "daft-unity"} <= set(marked)


def test_every_fenced_block_is_a_snippet_run_here_or_a_fragment_checked_here():
    assert readme_snippets.unmarked_blocks() == []
    tested = set(re.findall(r'\.(?:python|shell|fragment)\("([\w.-]+)"', Path(__file__).read_text()))
    marked = set(readme_snippets.snippets()) | set(readme_snippets.snippets("fragment"))
    assert marked - tested == set(), "marked blocks that no test here runs or checks"


def test_links_between_the_pages_lead_somewhere():
    for page in readme_snippets.PAGES:
        for target in re.findall(r"\]\(((?:docs/|\.\./|\./)?[\w./-]+\.md)(?:#[\w-]+)?\)", page.read_text()):
            assert (page.parent / target).resolve().is_file(), f"{page.name} links to {target}, which is missing"


def test_pyiceberg_snippet_creates_appends_and_lists(reader):
    printed = reader.python("pyiceberg")
    assert "('default', 'events')" in printed and printed.split()[-1] == "3"


def test_uc_sdk_snippet_lists_the_bootstrapped_catalog(reader):
    printed = reader.python("uc-sdk")
    assert "name='unity'" in printed


def test_duckdb_iceberg_snippet_creates_and_counts_a_table(reader):
    printed = reader.python("duckdb-iceberg")
    assert "10" in printed.split()
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="trips")
    assert table.data_source_format == "ICEBERG"


def test_polars_snippet_registers_and_reads_a_parquet_directory(reader, tmp_path):
    printed = reader.python("polars")
    assert "shape: (3, 2)" in printed and "7.0" in printed
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="rides")
    assert (table.table_type, table.data_source_format) == ("EXTERNAL", "PARQUET")
    assert table.registered_location == (tmp_path / "var" / "lake" / "rides").resolve().as_uri() + "/"


def test_duckdb_delta_snippet_creates_writes_and_reads_a_managed_table(reader):
    printed = reader.python("duckdb-delta")
    assert "Paris" in printed and "Lyon" in printed
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="cities")
    assert (table.table_type, table.data_source_format, table.latest_version) == ("MANAGED", "DELTA", 1)


def test_deltalake_snippet_registers_and_reads_an_external_table(reader, tmp_path):
    printed = reader.python("deltalake")
    assert "{'id': 3, 'city': 'Quito'}" in printed
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="journeys")
    assert (table.table_type, table.data_source_format) == ("EXTERNAL", "DELTA")
    assert table.storage_location == (tmp_path / "var" / "lake" / "journeys").as_uri()


def test_daft_iceberg_snippet_creates_appends_and_reads(reader):
    printed = reader.python("daft-iceberg")
    assert "Quito" in printed
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="visits")
    assert table.data_source_format == "ICEBERG"


def test_dlt_iceberg_snippet_loads_events(reader, tmp_path):
    env = {"DLT_DATA_DIR": str(tmp_path / "dlt"), "RUNTIME__DLTHUB_TELEMETRY": "false"}
    printed = reader.python("dlt-iceberg", env=env)
    assert "completed" in printed.lower() or "load" in printed.lower()
    names = set(Table.objects.filter(schema__name="default").values_list("name", flat=True))
    assert {"events", "_dlt_loads"} <= names


def test_pyiceberg_cli_snippet_after_the_duckdb_one(reader):
    """The CLI snippet works on the table the DuckDB snippet creates, as a reader runs them."""
    reader.python("duckdb-iceberg")
    printed = reader.shell("pyiceberg-cli")
    assert "default.trips" in printed
    assert not Table.objects.filter(schema__catalog__name="unity", schema__name="default", name="trips").exists()


# -- the README's set-up, first token and console login ---------------------------------------------
def on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("a command of its own reaches the test database only on PostgreSQL (DATABASE_URL)")
    return {"DATABASE_URL": database_url()}


def test_set_up_is_the_two_commands_and_ci_runs_the_second():
    commands = [line.split("#")[0].strip() for line in readme_snippets.fragment("set-up", "sh").splitlines()]
    assert [command for command in commands if command] == ["make run", "make test"]
    targets = re.findall(r"^([\w-]+):", (readme_snippets.ROOT / "Makefile").read_text(), re.M)
    assert {"run", "test"} <= set(targets)
    assert (readme_snippets.ROOT / ".ci" / "run").read_text().strip().endswith("exec make test")


def test_first_token_snippet_issues_a_token_that_lists_the_catalogs(reader):
    printed = reader.shell("first-token", cwd=readme_snippets.ROOT, env=on_postgresql())
    assert [catalog["name"] for catalog in json.loads(printed)["catalogs"]] == ["unity"]


def test_console_login_snippet_makes_the_login_admin(reader):
    reader.shell("console-login", server=None, cwd=readme_snippets.ROOT, env=on_postgresql())
    login = get_user_model().objects.get(username="admin")
    assert login.is_superuser and login.check_password("choose-one")


# -- docs/iceberg.md ----------------------------------------------------------------------------------
def test_iceberg_connect_snippet_lists_the_namespaces(reader):
    printed = reader.python("iceberg-connect")
    assert "('default',)" in printed


def test_iceberg_scan_planning_snippet_is_planned_by_the_catalog(reader):
    reader.python("pyiceberg")
    printed = reader.python("iceberg-scan-planning")
    assert printed.split()[-1] == "2"  # the two clicks of the README's events
    assert AuditEvent.objects.filter(action="planIcebergScan", securable_name="unity.default.events").exists()


def test_spark_iceberg_snippet_creates_inserts_and_selects(reader):
    printed = reader.python("spark-iceberg", cwd=readme_snippets.ROOT, timeout=600)
    assert "Lyon" in printed and "Oslo" in printed
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="rides")
    assert table.data_source_format == "ICEBERG"


def test_spark_s3_fragment_is_what_the_spark_tests_on_s3_configure():
    from tests.test_iceberg_spark_vending import S3_CATALOG_CONF

    shown = dict(re.findall(r'\.config\("spark\.sql\.catalog\.ucweb\.([\w.-]+)", "([\w.-]+)"\)',
                            readme_snippets.fragment("spark-s3", "python")))
    assert shown == {**S3_CATALOG_CONF, "header.X-Iceberg-Access-Delegation": "vended-credentials"}


def iceberg_catalog(reader: Reader, warehouse: str) -> RestCatalog:
    return RestCatalog(warehouse, uri=f"{reader.url}/api/catalog", warehouse=warehouse, token=reader.token)


def test_polaris_client_snippet_lists_what_applies_to_the_table(reader):
    from tests.polaris_support import Polaris

    unity = iceberg_catalog(reader, "unity")
    unity.create_namespace("sales")
    unity.create_table(("sales", "orders"), schema=SCHEMA)
    polaris = Polaris(reader.url, reader.token)
    polaris.create_policy("sales", "keep-a-week")
    polaris.attach("sales", "keep-a-week", "namespace", path=["sales"])
    printed = reader.python("polaris-client")
    assert "keep-a-week" in printed and "system.snapshot-expiry" in printed


def test_polaris_cli_snippets_grant_and_revoke_reading_a_table(reader, tmp_path):
    _, client_id, client_secret = principals.create_service_principal(name="ops", admin=True)
    env = {"CLIENT_ID": client_id, "CLIENT_SECRET": client_secret}
    created = reader.shell("polaris-cli-roles", env=env)
    assert "clientSecret" in created
    assert GroupMember.objects.filter(group__name="analyst", principal__name="nadia").exists()
    lake = iceberg_catalog(reader, "lake")
    lake.create_namespace("sales")
    lake.create_table(("sales", "orders"), schema=SCHEMA)
    assert lake.load_table(("sales", "orders")).location().startswith((tmp_path / "var" / "lake").as_uri())

    printed = reader.shell("polaris-cli-privileges", env=env)
    assert json.loads(printed.splitlines()[0]) == {
        "type": "table", "namespace": ["sales"], "tableName": "orders", "privilege": "TABLE_READ_DATA"}
    assert not Grant.objects.filter(principal="lake.readers").exists()  # revoked at the end


# -- docs/clients.md ----------------------------------------------------------------------------------
def test_daft_unity_snippet_lists_and_reads_an_external_table(reader, tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    location = (tmp_path / "trips").as_uri()
    write_deltalake(location, pa.table({"id": [1, 2, 3], "city": ["Lyon", "Oslo", "Quito"]}))
    auth = {"Authorization": f"Bearer {reader.token}"}
    requests.post(f"{reader.url}/api/2.1/unity-catalog/tables", headers=auth, json={
        "name": "trips", "catalog_name": "unity", "schema_name": "default", "table_type": "EXTERNAL",
        "data_source_format": "DELTA", "storage_location": location}, timeout=30).raise_for_status()
    printed = reader.python("daft-unity")
    assert "unity.default.trips" in printed and "Quito" in printed


def test_deltalake_uc_fragment_names_what_the_delta_rs_tests_give_it():
    shown = readme_snippets.fragment("deltalake-uc", "python")
    environment = re.findall(r"\b([A-Z_]+)=", shown.splitlines()[0])
    options = re.findall(r'"(AWS_[A-Z_]+)"', shown)
    tested = (readme_snippets.ROOT / "tests" / "test_deltars.py").read_text()
    assert environment == ["DATABRICKS_HOST", "DATABRICKS_TOKEN", "UNITY_ALLOW_HTTP_URL"]
    assert options == ["AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP", "AWS_REGION"]
    assert all(f'"{name}"' in tested for name in environment + options)


# -- docs/security.md, docs/unity-catalog.md, docs/operations.md -------------------------------------
def test_oidc_providers_fragment_is_taken_by_the_settings():
    from ucweb.settings import oidc_provider

    assignment = shlex.split(readme_snippets.fragment("oidc-providers", "sh"))
    assert len(assignment) == 1 and assignment[0].startswith("UCWEB_OIDC_PROVIDERS=")
    listed = json.loads(assignment[0].split("=", 1)[1])
    provider = oidc_provider(listed[0])
    assert (provider["issuer"], provider["audience"], provider["username_claim"], provider["name"],
            provider["staff_group"]) == ("https://login.example.com/realms/corp", "ucweb", "email", "corp",
                                         "data-governance")


def test_token_exchange_fragment_sends_what_the_token_endpoint_takes():
    from catalog.api.iceberg.config import SUBJECT_TOKEN_TYPES, TOKEN_EXCHANGE

    shown = readme_snippets.fragment("token-exchange", "python")
    ast.parse(shown)
    assert f'"grant_type": "{TOKEN_EXCHANGE}"' in shown
    sent = re.findall(r'"subject_token_type": "([\w:.-]+)"', shown)
    assert sent and set(sent) <= SUBJECT_TOKEN_TYPES


def test_delta_transaction_fragment_calls_what_the_client_has():
    import inspect

    from ucweb_client import delta_transactions

    shown = readme_snippets.fragment("delta-transaction", "python")
    ast.parse(shown)
    assert "from ucweb_client.delta_transactions import DeltaTransaction, files_under" in shown
    called = set(re.findall(r"\btxn\.(\w+)\(", shown))
    assert called == {"append", "commit"}
    assert all(callable(getattr(delta_transactions.DeltaTransaction, name)) for name in called)
    assert "api" in inspect.signature(delta_transactions.DeltaTransaction).parameters
    assert callable(delta_transactions.files_under) and hasattr(delta_transactions, "DataFile")


def test_prometheus_scrape_fragment_reads_the_metrics_with_a_bearer_token_file():
    job, = yaml.safe_load(readme_snippets.fragment("prometheus-scrape", "yaml"))["scrape_configs"]
    assert job["authorization"] == {"credentials_file": "/etc/prometheus/ucweb-metrics-token"}
    assert job.get("metrics_path", "/metrics") == "/metrics"  # Prometheus's default is the server's path
    assert all(target.endswith(":8080") for target in job["static_configs"][0]["targets"])


@pytest.mark.django_db
def test_change_event_fragment_has_the_members_of_a_delivered_event(settings, bootstrap):
    from cloudevents.core.bindings.http import to_structured_event

    from catalog.models import ChangeEvent
    from catalog.services import catalogs
    from maintenance.change_events import cloud_event

    shown = json.loads(readme_snippets.fragment("change-event", "json"))
    settings.UCWEB_EVENTS_WEBHOOK_URL = "http://127.0.0.1:9/events"
    catalogs.create_catalog(caller=principals.ensure_principal(name="alice", admin=True), name="announced")
    delivered = json.loads(to_structured_event(cloud_event(ChangeEvent.objects.get(subject="announced"))).body)
    assert set(shown) == set(delivered)
    assert set(shown["data"]) == set(delivered["data"])
