"""The HTTP endpoint's bounds: connections held open neither keep /healthz from answering nor
hold more than the bound, silent ones are closed after a few seconds, heads are bounded."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from daemon_fakes import FakeEngine, http_get, port_of, running

from braid.daemon.settings import MAX_PROBE_CONNECTIONS, MAX_PROBE_REQUEST_BYTES


def connect(port: int, count: int) -> list[socket.socket]:
    """``count`` connections to the endpoint."""
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]


def closed_by_peer(conn: socket.socket) -> bool:
    conn.setblocking(True)  # MSG_DONTWAIT is only honoured without a timeout
    try:
        return conn.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def test_connections_held_open_do_not_keep_healthz_from_answering(tmp_path: Path) -> None:
    def go() -> None:
        with running(tmp_path, FakeEngine()) as daemon:
            held = connect(port_of(daemon), MAX_PROBE_CONNECTIONS + 8)
            try:
                time.sleep(0.2)
                started = time.monotonic()
                assert http_get(daemon, "/healthz") == (200, b"ok\n")
                assert time.monotonic() - started < 0.5
            finally:
                for conn in held:
                    conn.close()

    go()


def test_connections_beyond_the_bound_are_closed_at_once(tmp_path: Path) -> None:
    def go() -> int:
        with running(tmp_path, FakeEngine()) as daemon:
            held = connect(port_of(daemon), 200)
            try:
                time.sleep(0.5)  # well before the idle time
                return sum(not closed_by_peer(conn) for conn in held)
            finally:
                for conn in held:
                    conn.close()

    assert go() <= MAX_PROBE_CONNECTIONS


def test_a_silent_connection_is_closed_after_the_idle_time(tmp_path: Path) -> None:
    def go() -> float:
        with (
            running(tmp_path, FakeEngine()) as daemon,
            socket.create_connection(("127.0.0.1", port_of(daemon)), timeout=5) as conn,
        ):
            started = time.monotonic()
            conn.sendall(b"GET /healthz HTTP/1.0\r\n")  # never finished
            assert conn.recv(1024) == b""
            return time.monotonic() - started

    assert 1.5 < go() < 3.0


def test_a_request_head_beyond_the_bound_is_refused(tmp_path: Path) -> None:
    def go() -> bytes:
        with (
            running(tmp_path, FakeEngine()) as daemon,
            socket.create_connection(("127.0.0.1", port_of(daemon)), timeout=5) as conn,
        ):
            conn.sendall(b"GET /healthz HTTP/1.0\r\nX: " + b"a" * MAX_PROBE_REQUEST_BYTES)
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
            return answer

    assert go().startswith(b"HTTP/1.0 431 ")
