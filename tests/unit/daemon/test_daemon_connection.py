"""The daemon's connections: frames in pieces, a client that closes mid-frame, and the early
answer (an ADD answered before the engine's final work, its container still locked)."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from daemon_fakes import ENV, STDIN, in_background, running, sock

from braid.daemon.client import call_cni, cni_request, exchange
from braid.daemon.protocol import encode_frame

EARLY = b'{"cniVersion":"1.0.0","ips":[]}\n'


class EarlyEngine:
    """Answers an ADD early, then holds its worker until ``finish`` is set (the final record
    write); records the order in which calls start and end."""

    def __init__(self) -> None:
        self.finish = threading.Event()
        self.events: list[str] = []

    def __call__(self, env: Mapping[str, str], stdin: bytes, **kw: Any) -> tuple[bytes, int]:
        verb = env["CNI_COMMAND"]
        self.events.append(f"start {verb}")
        if verb == "ADD" and kw.get("answer") is not None:
            kw["answer"](EARLY)
            self.finish.wait(10)
        self.events.append(f"end {verb}")
        return (EARLY, 0) if verb == "ADD" else (b"", 0)


def test_an_early_answer_reaches_the_client_while_the_container_stays_locked(
    tmp_path: Path,
) -> None:
    engine = EarlyEngine()

    def go() -> None:
        with running(tmp_path, engine) as daemon:
            path = sock(daemon)
            answered = call_cni(path, ENV, STDIN, 5)
            assert answered == (EARLY, 0), "answered while the engine still runs"
            assert engine.events == ["start ADD"]
            delete = in_background(call_cni, path, {**ENV, "CNI_COMMAND": "DEL"}, STDIN, 5)
            time.sleep(0.2)
            assert engine.events == ["start ADD"], "a DEL of the container waits for the ADD"
            engine.finish.set()
            assert delete.result(15) == (b"", 0)
            assert engine.events == ["start ADD", "end ADD", "start DEL", "end DEL"]

    go()


def test_a_draining_daemon_waits_for_work_after_an_early_answer(tmp_path: Path) -> None:
    engine = EarlyEngine()

    def go() -> None:
        with running(tmp_path, engine) as daemon:
            assert call_cni(sock(daemon), ENV, STDIN, 5) == (EARLY, 0)
            daemon.stop()
            threading.Timer(0.3, engine.finish.set).start()
            started = time.monotonic()
        assert time.monotonic() - started >= 0.25, "shutdown waited for the ADD to end"
        assert engine.events == ["start ADD", "end ADD"]

    go()


def test_a_frame_sent_in_pieces_is_answered(tmp_path: Path) -> None:
    frame = encode_frame(cni_request({**ENV, "CNI_COMMAND": "DEL"}, STDIN))

    def send_in_pieces(path: Path) -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(path))
            for index in range(0, len(frame), 7):
                client.sendall(frame[index : index + 7])
                time.sleep(0.001)
            return client.recv(1 << 16)

    def go() -> bytes:
        with running(tmp_path, EarlyEngine()) as daemon:
            return send_in_pieces(sock(daemon))

    answer = json.loads(go()[4:])
    assert (answer["exitCode"], base64.b64decode(answer["stdout"])) == (0, b"")


def test_a_client_that_closes_mid_frame_gets_an_error(tmp_path: Path) -> None:
    def half_frame(path: Path) -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(str(path))
            client.sendall(b'\x00\x00\x00\x40{"protocol":1')
            client.shutdown(socket.SHUT_WR)
            return client.recv(1 << 16)

    def go() -> bytes:
        with running(tmp_path, EarlyEngine()) as daemon:
            got = half_frame(sock(daemon))
            health = exchange(sock(daemon), {"protocol": 1, "kind": "health"}, 5)
            assert health["ready"] is True, "the daemon goes on answering"
            return got

    error = json.loads(base64.b64decode(json.loads(go()[4:])["stdout"]))
    assert error["code"] == 4
    assert "frame cut short: 13 of 64 bytes" in error["msg"]


class HoldingEngine:
    """Answers early, then holds its thread until the verb's event is set."""

    def __init__(self) -> None:
        self.hold = {"ADD": threading.Event(), "DEL": threading.Event()}
        self.ended: list[str] = []

    def __call__(self, env: Mapping[str, str], stdin: bytes, **kw: Any) -> tuple[bytes, int]:
        verb = env["CNI_COMMAND"]
        out = EARLY if verb == "ADD" else b""
        kw["answer"](out)
        self.hold[verb].wait(10)
        self.ended.append(verb)
        return out, 0


def test_the_early_answer_is_written_by_the_thread_serving_the_request(tmp_path: Path) -> None:
    """The ADD served by an acceptor and the DEL that waited for it in a thread of its own
    are each answered while their engine still runs."""
    engine = HoldingEngine()
    with running(tmp_path, engine) as daemon:
        path = sock(daemon)
        assert call_cni(path, ENV, STDIN, 5) == (EARLY, 0)
        delete = in_background(call_cni, path, {**ENV, "CNI_COMMAND": "DEL"}, STDIN, 5)
        time.sleep(0.2)
        assert not delete.done(), "the DEL waits for the ADD of its container"
        engine.hold["ADD"].set()
        assert delete.result(5) == (b"", 0)
        assert engine.ended == ["ADD"], "the DEL was answered while its engine ran"
        engine.hold["DEL"].set()
