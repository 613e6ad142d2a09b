"""What test modules share: the API prefix, granting privileges, free ports, waiting on a
condition, and starting and stopping the servers that tests run in subprocesses."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

UC = "/api/2.1/unity-catalog"


def grant(principal: str, securable_type: str, full_name: str, *privileges: str) -> dict:
    """Grant `privileges` on a securable to `principal` (a principal, created if missing, or a
    group), as a metastore admin would: through the permissions endpoint, so what a test sets up
    is what a client could. Returns the securable's privilege assignments."""
    from rest_framework.test import APIClient

    from catalog.services import principals

    # Enums of the SDK or of catalog.choices are sent as their values.
    securable_type = getattr(securable_type, "value", securable_type)
    privileges = [getattr(privilege, "value", privilege) for privilege in privileges]
    from catalog.models import Group

    if not Group.objects.filter(name=principal).exists():  # a group is granted to as it is
        principals.ensure_principal(name=principal)
    admin = principals.ensure_principal(name="admin", admin=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {principals.issue_token(principal=admin)}")
    response = client.patch(f"{UC}/permissions/{securable_type}/{full_name}",
                            {"changes": [{"principal": principal, "add": privileges}]}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def external_table_body(name: str, location: str, *, catalog: str = "shop", schema: str = "sales",
                        **fields) -> dict:
    """The body that creates EXTERNAL Parquet table `catalog.schema.name` at `location`, with two
    columns (id, amount); `fields` are added or replace what is here."""
    return {
        "name": name,
        "catalog_name": catalog,
        "schema_name": schema,
        "table_type": "EXTERNAL",
        "data_source_format": "PARQUET",
        "storage_location": location,
        "columns": [
            {"name": "id", "type_name": "LONG", "type_text": "bigint", "position": 0, "nullable": False},
            {"name": "amount", "type_name": "DOUBLE", "type_text": "double", "position": 1},
        ],
        **fields,
    }


def rows(*models) -> dict:
    """Every row of `models`, to compare the database before and after a request."""
    return {model.__name__: sorted(repr(row) for row in model.objects.values_list()) for model in models}


def securable_rows(*more_models) -> dict:
    """Every row of the catalogs, schemas, volumes, functions, registered models and their
    versions, credentials, external locations and grants (and of `more_models`): what a refused
    request must leave as it was."""
    from catalog.models import (Catalog, Credential, ExternalLocation, Function, Grant, ModelVersion,
                                RegisteredModel, Schema, Volume)

    return rows(Catalog, Schema, Volume, Function, RegisteredModel, ModelVersion, Credential, ExternalLocation, Grant,
                *more_models)


def plant_orphans(root: Path) -> tuple[Path, Path]:
    """Two data files no commit names in table folder `root`: one two hours old, and a fresh one
    (a writer's, about to commit). VACUUM with one hour of retention deletes only the first."""
    old, fresh = root / "part-old-orphan.parquet", root / "part-fresh-orphan.parquet"
    old.write_bytes(b"orphan")
    fresh.write_bytes(b"in flight")
    two_hours_ago = time.time() - 7200
    os.utime(old, (two_hours_ago, two_hours_ago))
    return old, fresh


def free_ports(count: int) -> list[int]:
    # Every socket stays open until all are chosen, so the same port is not handed out twice.
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def free_port() -> int:
    return free_ports(1)[0]


def wait_for(predicate, *, timeout: float = 30, interval: float = 0.2):
    """The first true value of `predicate()`; fails after `timeout` seconds (named by the
    predicate's docstring)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {predicate.__doc__ or predicate}")


def die_with_parent() -> None:
    """`preexec_fn` of a server subprocess: its own process group (so `stop_process` reaches every
    process it starts) and, on Linux, SIGKILL when the test process dies, so an aborted run
    leaves no server behind."""
    os.setsid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            pr_set_pdeathsig = 1
            libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


def signal_group(pid: int, signum: int) -> bool:
    """Send `signum` to process group `pid` (0: none, only ask whether one of it is left); False when
    no process of it is left."""
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        return False
    return True


def stop_process(process: subprocess.Popen | None, *, grace: float) -> None:
    """Stop a subprocess started in its own process group (`die_with_parent` or
    `start_new_session=True`) and everything it started: SIGTERM, `grace` seconds to exit, then
    SIGKILL; returns once no process of the group is left (none holds a port or a database
    connection any more)."""
    if process is None:
        return
    if process.poll() is None:
        signal_group(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            signal_group(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    _wait_until_group_is_gone(process.pid, grace=grace)


def stop_groups(groups: list[int], *, grace: float) -> None:
    """Stop process groups whose leader is no child of this process (scripts/run_server.sh starts
    each part of ucweb in a group of its own): SIGTERM to those still there, then as
    `stop_process`."""
    for group in groups:
        signal_group(group, signal.SIGTERM)
    for group in groups:
        _wait_until_group_is_gone(group, grace=grace)


def _wait_until_group_is_gone(group: int, *, grace: float) -> None:
    """Returns once no process of `group` is left, sending SIGKILL after `grace` seconds."""
    # What the leader started may outlive it for a moment; a group of zombies nobody reaps
    # answers signals too, hence the bound after SIGKILL.
    deadline, killed = time.monotonic() + grace, False
    while signal_group(group, 0):
        if time.monotonic() > deadline:
            if killed:
                return
            signal_group(group, signal.SIGKILL)
            deadline, killed = time.monotonic() + 30, True
        time.sleep(0.05)


def terminate_other_connections(application_name: str | None = None) -> int:
    """pg_terminate_backend on every connection to the test database but this process's own, or
    only on those of one application (libpq's PGAPPNAME); how many."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                       "AND (%s::text IS NULL OR application_name = %s)", [application_name, application_name])
        return cursor.fetchone()[0]


def audited_successes(action: str) -> int:
    """How many `action`s the audit trail records as done (refusals are recorded under the same name)."""
    from catalog.models import AuditEvent

    return AuditEvent.objects.filter(action=action, outcome="SUCCESS").count()


def api_routes() -> list[tuple[str, type]]:
    """(route, view class) of every API route the server serves, routes spelled as Django's
    patterns spell them (`/api/2.1/unity-catalog/tables/<str:full_name>`)."""
    from django.urls import get_resolver
    from rest_framework.views import APIView

    found = []

    def walk(patterns, prefix="/"):
        for pattern in patterns:
            if hasattr(pattern, "url_patterns"):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
                continue
            view = getattr(pattern.callback, "cls", None)
            if view is not None and issubclass(view, APIView):
                found.append((prefix + str(pattern.pattern), view))

    walk(get_resolver().url_patterns)
    return found
