"""Slow clients do not stall the server: with 64 connections sending their request headers a byte
at a time, other clients' GETs are answered as fast as without them. The server is started as
`make run` starts it. (With the gthread workers it had before, 16 such connections took every
thread: other GETs waited until the slow clients finished or gave up.)"""

import socket
import stat
import statistics
import threading
import time
from contextlib import contextmanager

import pytest
import requests

from tests.helpers import UC
from tests.server_process import running_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
SLOW_CLIENTS = 64
GETS = 200


@pytest.fixture
def server(tmp_path):
    with running_server(tmp_path) as process:
        yield process


class Trickler:
    """A connection that sends a request line and then its headers one byte at a time, never
    finishing them."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.sendall(f"GET {UC}/catalogs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".encode())

    def send_byte(self) -> None:
        self.sock.sendall(b"a")

    def unanswered(self) -> bool:
        """Still open, and the server has sent nothing (it is still waiting for the headers)."""
        self.sock.setblocking(False)
        try:
            self.sock.recv(1)  # bytes of an answer, or b"" when the server closed it
            return False
        except BlockingIOError:
            return True
        except OSError:
            return False
        finally:
            self.sock.setblocking(True)


@contextmanager
def trickling(tricklers):
    """Each trickler sends a byte every 0.1 s on a thread of its own until the block ends; then
    their connections are closed."""
    stop = threading.Event()

    def trickle():
        while not stop.is_set():
            for trickler in tricklers:
                trickler.send_byte()
            stop.wait(0.1)

    sender = threading.Thread(target=trickle, daemon=True)
    sender.start()
    try:
        yield
    finally:
        stop.set()
        sender.join()
        for trickler in tricklers:
            trickler.sock.close()


def timed_gets(session, url, count):
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        response = session.get(url, timeout=120)
        latencies.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text
    return latencies


def test_64_trickling_connections_leave_get_latency_unchanged(server, make_token):
    token = make_token("admin", admin=True)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    url = f"{server.url}{UC}/catalogs"
    timed_gets(session, url, 20)  # warm: both workers, their pools, the token cache
    alone = timed_gets(session, url, GETS)

    tricklers = [Trickler(server.port) for _ in range(SLOW_CLIENTS)]
    trickling_since = time.perf_counter()
    with trickling(tricklers):
        crowded = timed_gets(session, url, GETS)
        trickled_for = time.perf_counter() - trickling_since
        still_waiting = sum(trickler.unanswered() for trickler in tricklers)

    p50_alone, p50_crowded = statistics.median(alone), statistics.median(crowded)
    print(f"GET p50 alone {p50_alone * 1000:.1f} ms, with {SLOW_CLIENTS} trickling connections "
          f"{p50_crowded * 1000:.1f} ms (max {max(crowded) * 1000:.1f} ms over {trickled_for:.1f} s)")
    assert still_waiting == SLOW_CLIENTS, "every slow client was still sending its headers throughout"
    assert p50_crowded < 3 * p50_alone
    # No GET waited for a slow client: the slowest took a fraction of the time they trickled.
    assert max(crowded) < trickled_for / 4

    # `make run` without UCWEB_SECRET_KEY generated the server's key into its var directory.
    key_file = server.var_dir / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(key_file.read_text().strip()) >= 64


SLOW_BODIES = 24  # more than both workers' database pools (8 each), fewer than their threads (32 each)


class BodyTrickler(Trickler):
    """A connection that sends an authenticated POST's headers whole, then its body one byte at a
    time, never finishing it."""

    def __init__(self, port: int, token: str):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.sendall(f"POST {UC}/catalogs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                          "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{".encode())

    def send_byte(self) -> None:
        self.sock.sendall(b" ")


def test_slow_bodies_leave_other_gets_answered(server, make_token):
    """Connections sending their bodies slowly hold a thread each while the body arrives (granian
    calls the application before it has; ucweb.request_body receives it first), no more: more of
    them than the database pools hold leave other clients' GETs answered."""
    token = make_token("admin", admin=True)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    url = f"{server.url}{UC}/catalogs"
    timed_gets(session, url, 20)
    tricklers = [BodyTrickler(server.port, token) for _ in range(SLOW_BODIES)]
    with trickling(tricklers):
        crowded = timed_gets(session, url, 100)
        still_waiting = sum(trickler.unanswered() for trickler in tricklers)
    assert len(crowded) == 100
    assert still_waiting == SLOW_BODIES, "every slow body was still being sent throughout"
