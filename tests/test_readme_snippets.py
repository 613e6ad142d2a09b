"""The snippets of the README and docs/, run as printed (tests/readme_snippets.py), against a live
server bootstrapped as `make run` bootstraps it."""

import re

import pytest

from catalog.models import Table
from tests import readme_snippets

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(live_server, bootstrap, make_token, storage_root):
    return live_server.url, make_token("alice", admin=True)


def test_every_marked_snippet_is_named_once_and_fenced():
    marked = readme_snippets.snippets()
    assert {"uc-sdk", "pyiceberg", "duckdb-iceberg", "polars", "duckdb-delta", "deltalake", "daft-iceberg",
            "dlt-iceberg", "pyiceberg-cli"} <= set(marked)


def test_links_between_the_pages_lead_somewhere():
    for page in readme_snippets.PAGES:
        for target in re.findall(r"\]\(((?:docs/|\.\./|\./)?[\w./-]+\.md)(?:#[\w-]+)?\)", page.read_text()):
            assert (page.parent / target).resolve().is_file(), f"{page.name} links to {target}, which is missing"


def test_pyiceberg_snippet_creates_appends_and_lists(server, tmp_path):
    url, token = server
    printed = readme_snippets.run_python("pyiceberg", server=url, token=token, cwd=tmp_path)
    assert "('default', 'events')" in printed and printed.split()[-1] == "3"


def test_uc_sdk_snippet_lists_the_bootstrapped_catalog(server, tmp_path):
    url, token = server
    printed = readme_snippets.run_python("uc-sdk", server=url, token=token, cwd=tmp_path)
    assert "name='unity'" in printed


def test_duckdb_iceberg_snippet_creates_and_counts_a_table(server, tmp_path):
    url, token = server
    printed = readme_snippets.run_python("duckdb-iceberg", server=url, token=token, cwd=tmp_path)
    assert "10" in printed.split()
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="trips")
    assert table.data_source_format == "ICEBERG"


def test_polars_snippet_registers_and_reads_a_parquet_directory(server, tmp_path):
    url, token = server
    printed = readme_snippets.run_python("polars", server=url, token=token, cwd=tmp_path)
    assert "shape: (3, 2)" in printed and "7.0" in printed
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="rides")
    assert (table.table_type, table.data_source_format) == ("EXTERNAL", "PARQUET")
    assert table.registered_location == (tmp_path / "var" / "lake" / "rides").resolve().as_uri() + "/"


def test_duckdb_delta_snippet_creates_writes_and_reads_a_managed_table(server, tmp_path):
    url, token = server
    printed = readme_snippets.run_python("duckdb-delta", server=url, token=token, cwd=tmp_path)
    assert "Paris" in printed and "Lyon" in printed
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="cities")
    assert (table.table_type, table.data_source_format, table.latest_version) == ("MANAGED", "DELTA", 1)


def test_deltalake_snippet_registers_and_reads_an_external_table(server, tmp_path):
    url, token = server
    printed = readme_snippets.run_python("deltalake", server=url, token=token, cwd=tmp_path)
    assert "{'id': 3, 'city': 'Quito'}" in printed
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="journeys")
    assert (table.table_type, table.data_source_format) == ("EXTERNAL", "DELTA")
    assert table.storage_location == (tmp_path / "var" / "lake" / "journeys").as_uri()


def test_daft_iceberg_snippet_creates_appends_and_reads(server, tmp_path):
    url, token = server
    printed = readme_snippets.run_python("daft-iceberg", server=url, token=token, cwd=tmp_path)
    assert "Quito" in printed
    table = Table.objects.get(schema__catalog__name="unity", schema__name="default", name="visits")
    assert table.data_source_format == "ICEBERG"


def test_dlt_iceberg_snippet_loads_events(server, tmp_path):
    url, token = server
    env = {"DLT_DATA_DIR": str(tmp_path / "dlt"), "RUNTIME__DLTHUB_TELEMETRY": "false"}
    printed = readme_snippets.run_python("dlt-iceberg", server=url, token=token, cwd=tmp_path, env=env)
    assert "completed" in printed.lower() or "load" in printed.lower()
    names = set(Table.objects.filter(schema__name="default").values_list("name", flat=True))
    assert {"events", "_dlt_loads"} <= names


def test_pyiceberg_cli_snippet_after_the_duckdb_one(server, tmp_path):
    """The CLI snippet works on the table the DuckDB snippet creates, as a reader runs them."""
    url, token = server
    readme_snippets.run_python("duckdb-iceberg", server=url, token=token, cwd=tmp_path)
    printed = readme_snippets.run_shell("pyiceberg-cli", server=url, token=token, cwd=tmp_path)
    assert "default.trips" in printed
    assert not Table.objects.filter(schema__catalog__name="unity", schema__name="default", name="trips").exists()
