"""Sail (the ``pysail`` package in requirements-dev.txt) as a Spark Connect server for tests.

``SailServer`` runs ``sail spark server`` as a child process on a free port of 127.0.0.1, with
one Unity Catalog catalog configured through the environment:

    SAIL_CATALOG__LIST='[{name="unity", type="unity", uri="<ucweb>/api/2.1/unity-catalog",
                          default_catalog="unity", token="<bearer token>"}]'
    SAIL_CATALOG__DEFAULT_CATALOG=unity
    UNITY_ALLOW_HTTP_URL=true      (Sail refuses plain-http catalog URIs without it)

PySpark then connects with ``pyspark.sql.connect.session.SparkSession.builder.remote(server.remote)``. The server's log
(stdout and stderr) goes to ``log_path``; ``log_tail()`` is what a failing test should show.

``RequestRecorder`` wraps the WSGI application of Django's live server and keeps every request
made under the Unity Catalog prefix (method, path, query, JSON body, status),
so a test can say which endpoints a real engine called and with what (paths as the server saw
them, after percent-decoding).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import UC, die_with_parent, free_port, stop_process

STARTUP_TIMEOUT = 60.0


def find_sail() -> str | None:
    """The ``sail`` launcher: next to the running interpreter (a virtualenv's bin) or on PATH."""
    candidate = Path(sys.executable).parent / "sail"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which("sail")


def unity_catalog_list(*, name: str, uri: str, default_catalog: str, token: str) -> str:
    """The value of SAIL_CATALOG__LIST for one Unity Catalog catalog (a TOML-like inline list)."""

    def quoted(value: str) -> str:
        return json.dumps(value)  # a double-quoted string with backslashes and quotes escaped

    return (
        f"[{{name={quoted(name)}, type=\"unity\", uri={quoted(uri)}, "
        f"default_catalog={quoted(default_catalog)}, token={quoted(token)}}}]"
    )


class SailServer:
    def __init__(self, *, uc_url: str, token: str, workdir: Path, catalog: str = "unity",
                 uc_catalog: str = "unity"):
        self.uc_url = uc_url
        self.token = token
        self.workdir = workdir
        self.catalog = catalog
        self.uc_catalog = uc_catalog
        self.log_path = workdir / "sail.log"
        self.port = 0
        self.process: subprocess.Popen | None = None

    @property
    def remote(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        # Sail also reads Unity Catalog settings from DATABRICKS_*, UNITY_* and UC_*: only the
        # catalog list below may configure it.
        ignored = ("SAIL_", "SPARK_", "DATABRICKS_", "UNITY_", "UC_")
        env = {key: value for key, value in os.environ.items() if not key.startswith(ignored)}
        env.update({
            "SAIL_CATALOG__LIST": unity_catalog_list(
                name=self.catalog, uri=self.uc_url, default_catalog=self.uc_catalog, token=self.token
            ),
            "SAIL_CATALOG__DEFAULT_CATALOG": self.catalog,
            "UNITY_ALLOW_HTTP_URL": "true",
            "RUST_LOG": env.get("RUST_LOG", "warn"),
        })
        return env

    def start(self) -> None:
        binary = find_sail()
        if binary is None:
            raise RuntimeError("the sail launcher is not installed (pip install pysail)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        args = [binary, "spark", "server", "--ip", "127.0.0.1", "--port", str(self.port)]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                args, cwd=self.workdir, env=self.env(), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, preexec_fn=die_with_parent,
            )
        self._wait_ready(time.monotonic() + STARTUP_TIMEOUT)

    def _wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sail exited with code {self.process.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"sail did not listen on port {self.port} within {STARTUP_TIMEOUT}s:\n{self.log_tail()}")

    def stop(self) -> None:
        stop_process(self.process, grace=10)

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


# -- what the engine asked the catalog -----------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    method: str
    path: str  # decoded, relative to the Unity Catalog prefix: "/tables/unity.default.t"
    query: str
    body: object
    status: int
    response: object = None  # the JSON answer of a failed request


    def __str__(self) -> str:
        text = f"{self.method} {self.path} -> {self.status}"
        return f"{text} {self.response}" if self.response is not None else text


class RequestRecorder:
    """A WSGI middleware around the live server's application. ``install()`` puts one around a
pytest-django ``live_server``; the server then calls it from its request threads."""

    def __init__(self, app):
        self.app = app
        self.calls: list[Call] = []
        self._lock = threading.Lock()

    @classmethod
    def install(cls, live_server) -> RequestRecorder:
        httpd = live_server.thread.httpd
        recorder = cls(httpd.get_app())
        httpd.set_app(recorder)
        return recorder

    def uninstall(self, live_server) -> None:
        httpd = live_server.thread.httpd
        if httpd.get_app() is self:
            httpd.set_app(self.app)

    def clear(self) -> None:
        with self._lock:
            self.calls = []

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if not path.startswith(UC):
            return self.app(environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw_body = environ["wsgi.input"].read(length) if length > 0 else b""
        environ["wsgi.input"] = _Replay(raw_body)
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            body = raw_body
        status = []

        def recording_start_response(status_line, headers, exc_info=None):
            status.append(int(status_line.split(" ", 1)[0]))
            return start_response(status_line, headers, exc_info)

        result = self.app(environ, recording_start_response)
        response = None
        if status and status[0] >= 400:
            result = list(result)
            with contextlib.suppress(ValueError):
                response = json.loads(b"".join(result))
        call = Call(
            method=environ.get("REQUEST_METHOD", ""),
            path=path[len(UC):],
            query=environ.get("QUERY_STRING", ""),
            body=body,
            status=status[0] if status else 0,
            response=response,
        )
        with self._lock:
            self.calls.append(call)
        return result

    def find(self, method: str, path: str, *, prefix: bool = False) -> list[Call]:
        with self._lock:
            calls = list(self.calls)
        return [
            c for c in calls
            if c.method == method and (c.path.startswith(path) if prefix else c.path == path)
        ]


class _Replay:
    """A wsgi.input that gives back a body that was read already."""

    def __init__(self, data: bytes):
        self._data = data
        self._offset = 0

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = len(self._data) - self._offset
        chunk = self._data[self._offset:self._offset + size]
        self._offset += len(chunk)
        return chunk

    def readline(self, size: int = -1) -> bytes:
        end = self._data.find(b"\n", self._offset)
        end = len(self._data) if end < 0 else end + 1
        if size is not None and size >= 0:
            end = min(end, self._offset + size)
        chunk = self._data[self._offset:end]
        self._offset = end
        return chunk
