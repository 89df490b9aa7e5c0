"""The HTTP endpoints' bounds: connections held open neither keep /healthz from answering nor
hold more than the bound, silent ones are closed after a few seconds, heads are bounded; the
health endpoint answers the probes (and nothing else) whatever holds the metrics port."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from daemon_fakes import FakeEngine, http_get, port_of, running

from braid.config.schema import load_braid_config
from braid.daemon.settings import MAX_PROBE_CONNECTIONS, MAX_PROBE_REQUEST_BYTES, settings_from
from braid.errors import CniError


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


def get(port: int, path: str) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return int(data.split()[1])


def test_the_health_endpoint_serves_the_probes_whatever_holds_the_metrics_port(
    tmp_path: Path,
) -> None:
    def go() -> list[int]:
        with running(tmp_path, FakeEngine(), health_address="127.0.0.1:0") as daemon:
            assert daemon.health_server is not None
            health = daemon.health_server.port
            assert health != port_of(daemon)
            held = connect(port_of(daemon), MAX_PROBE_CONNECTIONS * 4)
            try:
                return [get(health, path) for path in ("/healthz", "/readyz", "/metrics")]
            finally:
                for conn in held:
                    conn.close()

    assert go() == [200, 200, 404]


def test_one_port_for_both_endpoints_is_refused() -> None:
    config = load_braid_config(
        b'{"type": "braid", "daemonMetricsAddress": "127.0.0.1:9300", '
        b'"daemonHealthAddress": "127.0.0.1:9300"}'
    ).config.daemon
    with pytest.raises(CniError, match=r"daemonHealthAddress '127\.0\.0\.1:9300' is the metrics"):
        settings_from(config)
    with pytest.raises(CniError, match="must be HOST:PORT"):
        settings_from(config, health_address="127.0.0.1:70000")
