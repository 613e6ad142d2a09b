"""`/metrics` on the live server: its access rule, and that what clients do shows in the counts (each
asserted as the difference between a scrape before and one after)."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest
import urllib3
from prometheus_client.parser import text_string_to_metric_families
from unitycatalog.client.exceptions import ApiException

from catalog.models import Table
from catalog.storage import join, storage_for
from maintenance import runs
from maintenance.models import MaintenancePlan
from tests.helpers import UC
from tests.iceberg_vending_support import SCHEMA
from tests.iceberg_vending_support import lake  # noqa: F401 - the fixture
from tests.seaweedfs_sts import sts_s3_server  # noqa: F401 - the module-scoped server fixture

pytestmark = pytest.mark.django_db(transaction=True)
HTTP = urllib3.PoolManager(retries=False)


def scrape(base: str, token: str) -> dict[tuple, float]:
    """(sample name, sorted label pairs) -> value of one scrape."""
    answer = HTTP.request("GET", f"{base}/metrics", headers={"Authorization": f"Bearer {token}"})
    assert answer.status == 200, answer.data[:300]
    assert answer.headers["Content-Type"].startswith("text/plain")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(answer.data.decode()) for sample in family.samples}


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def grown(before: dict, after: dict, name: str, **labels) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


@pytest.fixture
def admin_token(make_token):
    return make_token("admin", admin=True)


def test_only_the_metrics_token_and_metastore_admins_may_scrape(live_server, admin_token, make_token, settings):
    url = f"{live_server.url}/metrics"
    settings.UCWEB_METRICS_TOKEN = "scraper-secret-0123456789"
    answers = {
        "nobody": HTTP.request("GET", url),
        "not bearer": HTTP.request("GET", url, headers={"Authorization": "Basic YTpi"}),
        "unknown token": HTTP.request("GET", url, headers={"Authorization": "Bearer nope"}),
        "principal": HTTP.request("GET", url, headers={"Authorization": f"Bearer {make_token('bob')}"}),
        "admin": HTTP.request("GET", url, headers={"Authorization": f"Bearer {admin_token}"}),
        "scraper": HTTP.request("GET", url, headers={"Authorization": "Bearer scraper-secret-0123456789"}),
        "post": HTTP.request("POST", url, headers={"Authorization": f"Bearer {admin_token}"}),
    }
    statuses = {who: answer.status for who, answer in answers.items()}
    assert statuses == {"nobody": 401, "not bearer": 401, "unknown token": 401, "principal": 403, "admin": 200,
                        "scraper": 200, "post": 405}, statuses
    assert answers["nobody"].headers["WWW-Authenticate"] == 'Bearer realm="ucweb"'
    assert json.loads(answers["principal"].data)["error_code"] == "PERMISSION_DENIED"
    assert b"ucweb_http_request_duration_seconds_bucket" in answers["admin"].data
    assert b'ucweb_celery_queue_depth{queue="celery"}' in answers["admin"].data


@pytest.fixture
def table(delta):
    created = delta.create_table("unity", "default", "counted")
    return created.table_id, created.storage_location


def test_delta_commits_and_requests_are_counted(live_server, delta, table, admin_token, settings, monkeypatch):
    monkeypatch.setattr("maintenance.nudges.enqueue", lambda task_name, *args: None)  # nothing publishes
    settings.UCWEB_MAX_UNPUBLISHED_COMMITS = 3
    table_id, location = table
    before = scrape(live_server.url, admin_token)

    infos = [delta.append(table_id, location, version, f"p{version}.parquet", publish=False) for version in (1, 2, 3)]
    with pytest.raises(ApiException) as conflict:
        delta.ratify(table_id, location, delta.stage_commit(location, 3, "late.parquet"))
    assert conflict.value.status == 409
    with pytest.raises(ApiException) as policy:
        delta.ratify(table_id, location, delta.stage_commit(location, 4, "compacted.parquet", operation="OPTIMIZE"))
    assert policy.value.status == 403
    for info in infos:  # unpublished commits that cannot be published: the next one is a 429
        url = join(location, "_delta_log", "_staged_commits", info.file_name)
        storage_for(url).delete(url)
    with pytest.raises(ApiException) as throttled:
        delta.append(table_id, location, 4, "p4.parquet", publish=False)
    assert throttled.value.status == 429

    after = scrape(live_server.url, admin_token)
    outcomes = {outcome: grown(before, after, "ucweb_commits_total", format="delta", outcome=outcome)
                for outcome in ("ratified", "conflict", "refused_by_policy", "throttled")}
    assert outcomes == {"ratified": 3, "conflict": 1, "refused_by_policy": 1, "throttled": 1}, outcomes
    assert value(after, "ucweb_delta_unpublished_commits") >= 3

    route = "api/2.1/unity-catalog/delta/preview/commits"
    count = "ucweb_http_request_duration_seconds_count"
    by_status = {status: grown(before, after, count, protocol="delta-legacy", route=route, method="POST",
                               status=status) for status in ("200", "409", "403", "429")}
    assert by_status == {"200": 3, "409": 1, "403": 1, "429": 1}, by_status
    assert grown(before, after, "ucweb_http_request_duration_seconds_bucket", protocol="delta-legacy", route=route,
                 method="POST", status="200", le="+Inf") == 3
    labels = {text for name, pairs in after for _, text in pairs}
    assert not any("counted" in text or table_id in text for text in labels), "no table in a label"


ICEBERG = "/api/catalog/v1/unity"


def test_iceberg_commits_are_counted(live_server, bootstrap, admin_token):
    auth = {"Authorization": f"Bearer {admin_token}"}
    created = HTTP.request("POST", f"{live_server.url}{ICEBERG}/namespaces/default/tables", headers=auth, json={
        "name": "counted_iceberg", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": False}]}})
    assert created.status == 200, created.data[:300]
    before = scrape(live_server.url, admin_token)

    def set_property(value_text):  # both assert the table has no snapshot yet, and neither adds one
        return HTTP.request("POST", f"{live_server.url}{ICEBERG}/namespaces/default/tables/counted_iceberg",
                            headers=auth, json={
                                "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                                                  "snapshot-id": None},
                                                 {"type": "assert-last-assigned-field-id",
                                                  "last-assigned-field-id": 1}],
                                "updates": [{"action": "add-schema", "schema": {
                                    "type": "struct", "schema-id": 1, "fields": [
                                        {"id": 1, "name": "id", "type": "long", "required": False},
                                        {"id": 2, "name": value_text, "type": "string", "required": False}]}}]})

    statuses = [set_property("first").status, set_property("second").status]
    assert statuses == [200, 409], statuses
    after = scrape(live_server.url, admin_token)
    assert grown(before, after, "ucweb_commits_total", format="iceberg", outcome="ratified") == 1
    assert grown(before, after, "ucweb_commits_total", format="iceberg", outcome="conflict") == 1
    route = "api/catalog/v1/<str:prefix>/namespaces/<str:namespace>/tables/<str:table>"
    assert grown(before, after, "ucweb_http_request_duration_seconds_count", protocol="iceberg", route=route,
                 method="POST", status="409") == 1, sorted(pairs for name, pairs in after if name.endswith("_count")
                                                           and ("protocol", "iceberg") in pairs)


def test_maintenance_runs_and_worker_tasks_are_counted(live_server, delta, table, admin_token):
    table_id, location = table
    for version in (1, 2):
        delta.append(table_id, location, version, f"p{version}.parquet")
    before = scrape(live_server.url, admin_token)
    run = runs.run_now(table=Table.objects.get(id=table_id), operation=MaintenancePlan.Operation.CHECKPOINT,
                       requested_by="test")
    assert run.status == MaintenancePlan.Status.SUCCEEDED, run.outcome
    after = scrape(live_server.url, admin_token)
    assert grown(before, after, "ucweb_maintenance_runs_total", operation="CHECKPOINT", outcome="succeeded") == 1


@pytest.mark.s3
@pytest.mark.xdist_group("iceberg_vending")
def test_vended_credentials_and_signed_requests_are_counted(lake, live_server):
    lake.catalog("writer").create_table(("default", "counted_vending"), schema=SCHEMA)
    before = scrape(live_server.url, lake.token["admin"])
    vended = lake.http("GET", "/namespaces/default/tables/counted_vending", name="reader")
    assert vended.status_code == 200 and "s3.session-token" in vended.json()["config"], vended.text
    loaded = lake.http("GET", "/namespaces/default/tables/counted_vending", name="writer",
                       delegation="remote-signing").json()
    signed = lake.http("POST", "/namespaces/default/tables/counted_vending/sign", name="writer", json={
        "region": loaded["config"]["s3.region"], "method": "GET", "headers": {},
        "uri": f"{loaded['config']['s3.endpoint']}/{lake.server.bucket}/{lake.key(loaded['metadata-location'])}"})
    assert signed.status_code == 200, signed.text
    after = scrape(live_server.url, lake.token["admin"])
    assert grown(before, after, "ucweb_credentials_vended_total", access="read") == 1
    assert grown(before, after, "ucweb_requests_signed_total", access="read") == 1


def dead_pid() -> int:
    """The pid of a process that has exited (its files stay in the metrics folder)."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_scrape_survives_the_files_of_processes_killed_at_any_moment(live_server, admin_token, tmp_path,
                                                                       monkeypatch):
    """A server's processes each write their metrics to files of their own (run_server.sh's
    PROMETHEUS_MULTIPROC_DIR); a process SIGKILLed while it creates or writes one leaves it empty or
    cut short. The scrape still answers, with every other process's metrics."""
    from prometheus_client import multiprocess
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    from ucweb import scrape as scraping

    folder = tmp_path / "prometheus"
    folder.mkdir()
    monkeypatch.setenv(scraping.MULTIPROCESS_DIR, str(folder))
    finished, killed_creating, killed_cut, killed_live = dead_pid(), dead_pid(), dead_pid(), dead_pid()
    # A worker that ratified three Delta commits and exited: its totals count.
    written = MmapedDict(str(folder / f"counter_{finished}.db"))
    written.write_value(mmap_key("ucweb_commits", "ucweb_commits_total", ["format", "outcome"],
                                 ["delta", "ratified"], "Commit proposals by table format and outcome."), 3.0, 0.0)
    written.close()
    # Killed between creating its file and sizing it: an empty file.
    (folder / f"counter_{killed_creating}.db").touch()
    # Cut short: the length it says it used runs past its end.
    (folder / f"histogram_{killed_cut}.db").write_bytes((4096).to_bytes(4, "little") + b"\0" * 60)
    # A key the collector cannot parse.
    broken = MmapedDict(str(folder / f"gauge_all_{killed_cut}.db"))
    broken.write_value('["ucweb_x", "ucweb_x", {"le": "not a number"', 1.0, 0.0)
    broken.close()
    # A live gauge of a dead process another scrape forgets at the same moment.
    live = MmapedDict(str(folder / f"gauge_livesum_{killed_live}.db"))
    live.write_value(mmap_key("ucweb_db_pool_connections", "ucweb_db_pool_connections", ["state"], ["open"],
                              "PostgreSQL connection pool use, summed over processes."), 8.0, 0.0)
    live.close()
    listing = multiprocess.glob.glob

    def another_scrape_forgets_them_once_listed(pattern, *args, **kwargs):
        found = listing(pattern, *args, **kwargs)
        for name in found:
            if os.path.basename(name).startswith("gauge_live"):
                os.remove(name)
        return found

    monkeypatch.setattr(multiprocess, "glob", SimpleNamespace(glob=another_scrape_forgets_them_once_listed))

    samples = scrape(live_server.url, admin_token)

    assert value(samples, "ucweb_commits_total", format="delta", outcome="ratified") == 3
    assert value(samples, "ucweb_db_pool_connections", state="open") == 0
    assert ("ucweb_delta_unpublished_commits", ()) in samples
