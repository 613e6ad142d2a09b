"""scripts/port_is_free.py, which `make run` asks before anything else: a taken port, a port that
is not one and an address that cannot be listened on each stop it with one clear line."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "port_is_free.py"


def probe(host: str, port: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), host, port], capture_output=True, text=True, timeout=60)


def test_a_port_another_server_shares_out_is_taken():
    """A listener with SO_REUSEPORT, as granian binds: another granian could join it, the probe may not."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = str(listener.getsockname()[1])
        for host in ("127.0.0.1", "0.0.0.0"):
            done = probe(host, port)
            assert done.returncode == 1, done
            assert done.stderr.startswith(f"ucweb: ERROR: {host}:{port} is in use"), done.stderr
    done = probe("127.0.0.1", port)
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("host, port, message", [
    ("127.0.0.1", "eighty", "UCWEB_PORT must be a port number (1-65535), not 'eighty'."),
    ("127.0.0.1", "70000", "UCWEB_PORT must be a port number (1-65535), not '70000'."),
    ("127.0.0.1", "0", "UCWEB_PORT must be a port number (1-65535), not '0'."),
    ("192.0.2.1", "8080", "UCWEB_BIND '192.0.2.1' cannot be listened on"),
    ("no-such-host.invalid", "8080", "UCWEB_BIND 'no-such-host.invalid' cannot be listened on"),
])
def test_what_cannot_be_a_place_to_listen_is_said_in_one_line(host, port, message):
    done = probe(host, port)
    assert done.returncode == 1
    assert done.stderr.startswith(f"ucweb: ERROR: {message}"), done.stderr
    assert "Traceback" not in done.stderr
