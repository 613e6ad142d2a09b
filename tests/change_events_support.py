"""What the change-event tests receive events with: a nats-server of their own (on a free port,
JetStream in a temporary store, stopped and started again on the same port and store) read
back through its stream, and a webhook that keeps every request it answers; the fixtures
`nats_server` and `webhook` (a pytest plugin of tests/conftest.py) give a test one of each."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NamedTuple

import pytest
from cloudevents.core.bindings.http import HTTPMessage, from_http_event

from tests.helpers import die_with_parent, free_port, stop_process

STREAM = "UCWEB_EVENTS"


class Published(NamedTuple):
    subject: str
    headers: dict
    event: dict  # the CloudEvent as JSON


def nats_server_binary() -> str:
    binary = shutil.which("nats-server") or shutil.which("nats-server", path="/usr/sbin:/usr/local/sbin")
    if binary is None:
        pytest.skip("nats-server is not installed: the change-event tests deliver to a real NATS JetStream")
    return binary


class NatsServer:
    def __init__(self, workdir: Path):
        self.binary = nats_server_binary()
        self.port = free_port()
        self.store = workdir / "jetstream"
        self.process = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> NatsServer:
        self.process = subprocess.Popen(
            [self.binary, "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(self.store)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nats-server did not start")

    def stop(self) -> None:
        stop_process(self.process, grace=10)
        self.process = None

    def stream_messages(self, stream: str = STREAM) -> list[Published]:
        """Every message the stream holds, in its order."""
        return asyncio.run(self._read(stream))

    async def _read(self, stream: str) -> list[Published]:
        import nats
        from nats.js.errors import NotFoundError

        client = await nats.connect(self.url)
        try:
            jetstream = client.jetstream()
            try:
                last = (await jetstream.stream_info(stream)).state.last_seq
            except NotFoundError:
                return []
            messages = []
            for sequence in range(1, last + 1):
                message = await jetstream.get_msg(stream, sequence)
                messages.append(Published(message.subject, dict(message.headers or {}), json.loads(message.data)))
            return messages
        finally:
            await client.close()


class Webhook:
    """An HTTP server that answers 204 to each POST and keeps it, after `delay` seconds; an event
    about `refused_subject` is answered 500 while that is set."""

    def __init__(self, delay: float = 0.0):
        self.received: list[tuple[dict, dict]] = []
        self.delay = delay
        self.refused_subject: str | None = None
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                time.sleep(hook.delay)
                headers = {key.lower(): value for key, value in self.headers.items()}
                event = from_http_event(HTTPMessage(headers=headers, body=body))
                if hook.refused_subject and event.get_subject() == hook.refused_subject:
                    self.send_response(500)
                    self.end_headers()
                    return
                hook.received.append((headers, {**event.get_attributes(), "data": event.get_data()}))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/events"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def ids(self) -> list[str]:
        return [event["id"] for _, event in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def nats_server(tmp_path):
    server = NatsServer(tmp_path).start()
    yield server
    server.stop()


@pytest.fixture
def webhook():
    hook = Webhook()
    yield hook
    hook.close()


def in_order_per_securable(events: list[dict]) -> dict[str, list[str]]:
    """The ids of each securable's events (partitionkey), in the order they arrived, first arrival only."""
    seen, order = set(), {}
    for event in events:
        if event["id"] not in seen:
            seen.add(event["id"])
            order.setdefault(event["partitionkey"], []).append(event["id"])
    return order
