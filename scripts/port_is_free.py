"""Exits 1, saying why, when something already listens on HOST:PORT.

granian binds its port with SO_REUSEPORT, so a second server on a taken port (another ucweb, or
the workers a killed one left behind) starts without a word, and the kernel hands each new
connection to one of the two: half of the clients would reach the other server, with its own
database. scripts/run_server.sh asks this first and refuses to start, before it touches the
database or the var folder.

The probe binds without SO_REUSEPORT, which fails while any socket listens there, and with
SO_REUSEADDR, so that the connections a stopped server left in TIME_WAIT do not count.

Usage: python scripts/port_is_free.py HOST PORT"""

import errno
import socket
import sys


def in_use(host: str, port: int) -> bool:
    host = host.strip("[]")
    for family, kind, protocol, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                                 flags=socket.AI_PASSIVE):
        with socket.socket(family, kind, protocol) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    return True
                raise
    return False


def main() -> int:
    host, port = sys.argv[1], sys.argv[2]
    if not port.isdigit() or not 0 < int(port) < 65536:
        print(f"ucweb: ERROR: UCWEB_PORT must be a port number (1-65535), not {port!r}.", file=sys.stderr)
        return 1
    try:
        taken = in_use(host, int(port))
    except OSError as error:  # an address this machine does not have, or a name it cannot resolve
        print(f"ucweb: ERROR: UCWEB_BIND {host!r} cannot be listened on: {error}.", file=sys.stderr)
        return 1
    if taken:
        print(f"ucweb: ERROR: {host}:{port} is in use (another ucweb, or another server). Stop it, or choose "
              "another port with UCWEB_PORT.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
