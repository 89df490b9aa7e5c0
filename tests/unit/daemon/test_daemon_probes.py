"""The HTTP endpoint's bounds: connections held open neither keep /healthz from answering nor
hold more than the bound, silent ones are closed after a few seconds, heads are bounded."""

from __future__ import annotations

import asyncio
import socket
import time
from pathlib import Path

from daemon_fakes import FakeEngine, http_get, running

from braid.daemon.server import DaemonServer
from braid.daemon.settings import MAX_PROBE_CONNECTIONS, MAX_PROBE_REQUEST_BYTES


def port_of(daemon: DaemonServer) -> int:
    assert daemon.probe_server is not None
    port: int = daemon.probe_server.sockets[0].getsockname()[1]
    return port


def connect(port: int, count: int) -> list[socket.socket]:
    """``count`` connections, made off the event loop (which must accept them meanwhile)."""
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
    async def go() -> None:
        async with running(tmp_path, FakeEngine()) as daemon:
            held = await asyncio.to_thread(connect, port_of(daemon), MAX_PROBE_CONNECTIONS + 8)
            try:
                await asyncio.sleep(0.2)
                started = time.monotonic()
                assert await asyncio.wait_for(http_get(daemon, "/healthz"), 1) == (200, b"ok\n")
                assert time.monotonic() - started < 0.5
            finally:
                for conn in held:
                    conn.close()

    asyncio.run(go())


def test_connections_beyond_the_bound_are_closed_at_once(tmp_path: Path) -> None:
    async def go() -> int:
        async with running(tmp_path, FakeEngine()) as daemon:
            held = await asyncio.to_thread(connect, port_of(daemon), 200)
            try:
                await asyncio.sleep(0.5)  # well before the idle time
                return sum(not closed_by_peer(conn) for conn in held)
            finally:
                for conn in held:
                    conn.close()

    assert asyncio.run(go()) <= MAX_PROBE_CONNECTIONS


def test_a_silent_connection_is_closed_after_the_idle_time(tmp_path: Path) -> None:
    async def go() -> float:
        async with running(tmp_path, FakeEngine()) as daemon:
            reader, writer = await asyncio.open_connection("127.0.0.1", port_of(daemon))
            started = time.monotonic()
            writer.write(b"GET /healthz HTTP/1.0\r\n")  # never finished
            assert await asyncio.wait_for(reader.read(), 5) == b""
            writer.close()
            return time.monotonic() - started

    assert 1.5 < asyncio.run(go()) < 3.0


def test_a_request_head_beyond_the_bound_is_refused(tmp_path: Path) -> None:
    async def go() -> bytes:
        async with running(tmp_path, FakeEngine()) as daemon:
            reader, writer = await asyncio.open_connection("127.0.0.1", port_of(daemon))
            writer.write(b"GET /healthz HTTP/1.0\r\nX: " + b"a" * MAX_PROBE_REQUEST_BYTES)
            answer = await asyncio.wait_for(reader.read(), 5)
            writer.close()
            return answer

    assert asyncio.run(go()).startswith(b"HTTP/1.0 431 ")
