"""What the unix socket's clients may hold: connections beyond the bound are answered code 11
at once, frame bytes beyond the bound too, silent connections do not hold the acceptors back
from a request behind them, and a queued request whose client left is dropped, never run."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from daemon_fakes import ENV, STDIN, FakeEngine, in_background, running, sock

from braid.daemon.client import call_cni, cni_request, exchange
from braid.daemon.connection import READ_CHUNK
from braid.daemon.protocol import HEADER_BYTES, MAX_FRAME, encode_frame
from braid.daemon.server import DaemonServer


def read_answer(conn: socket.socket) -> dict[str, Any]:
    data = b""
    while len(data) < HEADER_BYTES or len(data) < HEADER_BYTES + struct.unpack(">I", data[:4])[0]:
        chunk = conn.recv(65536)
        assert chunk, f"closed after {len(data)} bytes without an answer"
        data += chunk
    answer: dict[str, Any] = json.loads(data[HEADER_BYTES:])
    return answer


def error_of(answer: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = json.loads(base64.b64decode(answer["stdout"]))
    return error


@contextmanager
def connections(path: Path, count: int) -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(str(path))
            opened.append(conn)
        yield opened
    finally:
        for conn in opened:
            conn.close()


def settled(daemon: DaemonServer, connections: int) -> None:
    """Waits until the daemon counts ``connections`` open ones."""
    for _ in range(500):
        if daemon.bounds.connections == connections:
            return
        time.sleep(0.01)
    raise AssertionError(f"{daemon.bounds.connections} connections open, not {connections}")


def test_a_connection_beyond_the_bound_is_answered_code_11_at_once(tmp_path: Path) -> None:
    def go() -> None:
        with running(tmp_path, FakeEngine(), max_connections=3) as daemon:
            with connections(sock(daemon), 3):
                settled(daemon, 3)
                started = time.monotonic()
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as extra:
                    extra.settimeout(5)
                    extra.connect(str(sock(daemon)))
                    error = error_of(read_answer(extra))
                assert time.monotonic() - started < 1
                assert error["code"] == 11
                assert "connections" in error["msg"]
            settled(daemon, 0)
            assert call_cni(sock(daemon), ENV, STDIN, 5) == (
                b'{"cniVersion":"1.0.0"}\n',
                0,
            )
            settled(daemon, 0)
            assert daemon.bounds.held == 0, "a closed connection still holds bytes"

    go()


def test_frame_bytes_beyond_the_bound_are_answered_code_11(tmp_path: Path) -> None:
    """Two connections each sending most of a 4 MiB frame: the second would take what they
    hold together beyond 6 MiB, and is refused; the first still holds its share."""
    header = struct.pack(">I", MAX_FRAME)
    part = b"x" * (MAX_FRAME - 1024)

    def go() -> None:
        with running(tmp_path, FakeEngine(), max_held_frame_bytes=6 << 20) as daemon:
            with connections(sock(daemon), 2) as (first, second):
                first.sendall(header + part)
                for _ in range(500):
                    if daemon.bounds.held >= len(part):
                        break
                    time.sleep(0.01)
                second.settimeout(5)
                second.setblocking(True)
                send_all_it_takes(second, header + part)
                error = error_of(read_answer(second))
                assert error["code"] == 11
                assert "request bytes" in error["msg"]
                assert daemon.bounds.held <= 6 << 20
            settled(daemon, 0)
            assert daemon.bounds.held == 0

    go()


def send_all_it_takes(conn: socket.socket, data: bytes) -> None:
    """Sends ``data`` until the daemon, having answered, closes the connection."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        conn.sendall(data)


def test_a_frame_never_holds_more_than_its_length(tmp_path: Path) -> None:
    """A header announcing the largest frame followed by more bytes than that: the frame ends
    where its header says (not JSON: code 4); nothing beyond it is held."""

    def go() -> None:
        with running(tmp_path, FakeEngine()) as daemon:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(10)
                conn.connect(str(sock(daemon)))
                flood = struct.pack(">I", MAX_FRAME) + b"x" * (MAX_FRAME + (1 << 20))
                task = in_background(send_all_it_takes, conn, flood)
                peak = 0
                while not task.done():
                    peak = max(peak, daemon.bounds.held)
                    time.sleep(0.001)
                task.result(15)
                error = error_of(read_answer(conn))
            assert error["code"] == 4
            assert peak <= HEADER_BYTES + MAX_FRAME + READ_CHUNK

    go()


def test_a_too_large_frame_is_answered_code_4(tmp_path: Path) -> None:
    def go() -> dict[str, Any]:
        with running(tmp_path, FakeEngine()) as daemon:
            frame = struct.pack(">I", MAX_FRAME + 1) + b"{}"
            return exchange(sock(daemon), frame, 5)

    error = error_of(go())
    assert error["code"] == 4
    assert "exceeds" in error["msg"]


def test_silent_connections_do_not_delay_a_request_behind_them(tmp_path: Path) -> None:
    """400 connections that say nothing, then an ADD: each silent one used to hold an acceptor
    for 0.2 s (with three acceptors, the ADD waited 26 s)."""

    def go() -> float:
        with (
            running(tmp_path, FakeEngine(), queue_size=512) as daemon,
            connections(sock(daemon), 400),
        ):
            started = time.monotonic()
            answer = call_cni(sock(daemon), ENV, STDIN, 30)
            assert answer[1] == 0
            return time.monotonic() - started

    assert go() < 2.0


def queued(daemon: DaemonServer, waiting: int) -> None:
    for _ in range(500):
        if daemon.service.scheduler.waiting == waiting:
            return
        time.sleep(0.01)
    raise AssertionError(f"{daemon.service.scheduler.waiting} requests waiting, not {waiting}")


def send_request(path: Path, env: dict[str, str]) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(path))
    conn.sendall(encode_frame(cni_request(env, STDIN)))
    return conn


def test_a_queued_add_whose_client_left_is_dropped_before_its_del(tmp_path: Path) -> None:
    """One slot held; ctr-2's ADD queues, its client leaves, its DEL queues behind it: the DEL
    runs, the ADD never does, and the queue is free again at once."""
    engine = FakeEngine()
    engine.gate.clear()

    def go() -> None:
        with running(tmp_path, engine, concurrency=1, queue_size=2) as daemon:
            path = sock(daemon)
            holder = in_background(call_cni, path, ENV, STDIN, 10)
            engine.entered.wait(5)
            gone = send_request(path, {**ENV, "CNI_CONTAINERID": "ctr-2"})
            queued(daemon, 1)
            gone.close()
            queued(daemon, 0)
            delete = in_background(
                call_cni,
                path,
                {**ENV, "CNI_CONTAINERID": "ctr-2", "CNI_COMMAND": "DEL"},
                STDIN,
                10,
            )
            queued(daemon, 1)
            engine.gate.set()
            assert holder.result(15)[1] == 0
            assert delete.result(15)[1] == 0

    go()
    ran = [(env["CNI_COMMAND"], env["CNI_CONTAINERID"]) for env, _, _ in engine.calls]
    assert ran == [("ADD", "ctr-1"), ("DEL", "ctr-2")]


def test_a_draining_daemon_drops_a_queued_request_whose_client_left(tmp_path: Path) -> None:
    engine = FakeEngine()
    engine.gate.clear()

    def go() -> None:
        with running(tmp_path, engine, concurrency=1, queue_size=1) as daemon:
            path = sock(daemon)
            holder = in_background(call_cni, path, ENV, STDIN, 10)
            engine.entered.wait(5)
            gone = send_request(path, {**ENV, "CNI_CONTAINERID": "ctr-2"})
            queued(daemon, 1)
            daemon.stop()
            time.sleep(0.1)
            gone.close()
            queued(daemon, 0)
            engine.gate.set()
            assert holder.result(15)[1] == 0

    go()
    assert [env["CNI_CONTAINERID"] for env, _, _ in engine.calls] == ["ctr-1"]
