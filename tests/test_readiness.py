"""Readiness as the web server reads it from the rows the worker and the beat write, the console's
home page that shows it, and the beat's lease (the processes themselves: tests/test_product.py)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from maintenance import liveness
from maintenance.models import Lease, ProcessHeartbeat

pytestmark = pytest.mark.django_db

ENGINE_OK = {"engine": {"status": "ok", "reason": "Spark (local[*]) with the Iceberg runtime"}}


def alive(kind, name, *, seen=None, details=None):
    now = timezone.now()
    return ProcessHeartbeat.objects.create(kind=kind, name=name, started_at=now, seen_at=seen or now,
                                           details=details or {})


def lead(holder="host:2", seconds=30):
    Lease.objects.create(name="beat", holder=holder, expires_at=timezone.now() + timedelta(seconds=seconds))


def test_nothing_in_the_background_is_503_with_the_reason(client):
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["worker"] == {"status": "unavailable",
                                        "detail": "no Celery worker has ever reported (is it running?)"}
    assert body["checks"]["beat"]["status"] == "unavailable"
    assert body["checks"]["engine"] == {"status": "unavailable", "detail": "unknown: no worker is alive"}


def test_a_live_worker_and_a_leading_beat_are_ready(client):
    alive(ProcessHeartbeat.Kind.WORKER, "host:1", details=ENGINE_OK)
    alive(ProcessHeartbeat.Kind.BEAT, "host:2", details={"leading": True})
    lead()
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    checks = response.json()["checks"]
    assert response.json()["status"] == "ok"
    assert checks["worker"]["workers"][0]["name"] == "host:1"
    assert checks["beat"]["detail"] == "host:2 sends the schedule"
    assert checks["engine"] == {"status": "ok", "detail": "Spark (local[*]) with the Iceberg runtime"}


def test_an_engine_that_cannot_run_is_degraded_not_down(client):
    alive(ProcessHeartbeat.Kind.WORKER, "host:1",
          details={"engine": {"status": "unavailable", "reason": "Java is not installed"}})
    alive(ProcessHeartbeat.Kind.BEAT, "host:2")
    lead()
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["status"] == "degraded"
    assert response.json()["checks"]["engine"] == {"status": "unavailable", "detail": "Java is not installed"}


def test_a_stale_or_stopped_worker_is_not_ready(client, settings):
    stale = timezone.now() - timedelta(seconds=settings.UCWEB_HEARTBEAT_STALE_SECONDS + 1)
    alive(ProcessHeartbeat.Kind.WORKER, "host:1", seen=stale, details=ENGINE_OK)
    alive(ProcessHeartbeat.Kind.BEAT, "host:2")
    lead()
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["worker"]["detail"].startswith(
        f"no Celery worker reported in the last {settings.UCWEB_HEARTBEAT_STALE_SECONDS} s; the last one (host:1)")

    alive(ProcessHeartbeat.Kind.WORKER, "host:3", details=ENGINE_OK)
    assert client.get("/readyz").status_code == 200
    ProcessHeartbeat.objects.filter(name="host:3").update(stopped_at=timezone.now())
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["worker"]["detail"].startswith("the last Celery worker (host:3) shut down at")


def test_a_beat_without_the_lease_is_not_enough(client):
    alive(ProcessHeartbeat.Kind.WORKER, "host:1", details=ENGINE_OK)
    alive(ProcessHeartbeat.Kind.BEAT, "host:2")
    lead(seconds=-1)  # expired: nobody sends the schedule
    assert client.get("/readyz").status_code == 503


def test_the_console_home_page_shows_the_checks(client):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.create_superuser("governance", "gov@example.com", "pw"))
    alive(ProcessHeartbeat.Kind.WORKER, "host:1",
          details={"engine": {"status": "unavailable", "reason": "PySpark is not installed"}})
    page = client.get("/admin/").content.decode()
    assert 'id="readiness"' in page and "Catalog health:" in page
    assert "PySpark is not installed" in page and "no beat has ever reported" in page


def test_the_console_home_page_needs_a_login(client):
    response = client.get("/admin/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_one_holder_of_the_beat_lease_at_a_time():
    assert liveness.hold_lease("beat", "a", 30)
    assert not liveness.hold_lease("beat", "b", 30)
    assert liveness.hold_lease("beat", "a", 30)  # renewed by its holder
    Lease.objects.filter(name="beat").update(expires_at=timezone.now() - timedelta(seconds=1))
    assert liveness.hold_lease("beat", "b", 30)  # expired: taken over
    assert not liveness.hold_lease("beat", "a", 30)
    assert Lease.objects.get(name="beat").holder == "b"

