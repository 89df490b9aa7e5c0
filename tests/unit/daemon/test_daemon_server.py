"""A daemon server in this process over a temp socket, with a fake engine behind it."""

from __future__ import annotations

import base64
import json
import os
import socket
import stat
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from daemon_fakes import ENV, STDIN, FakeEngine, http_get, in_background, running, sock

from braid.cni.exec import ProcessExecutor
from braid.daemon import server as server_module
from braid.daemon.client import call_cni, exchange, is_ready
from braid.daemon.protocol import frame_of
from braid.daemon.server import DaemonAlreadyRunning, prepare_socket_dir
from braid.daemon.service import SlotLentWhileDelegatesRun
from braid.engine.memory import EngineMemory


def test_cni_call_runs_the_engine_with_the_requests_env_and_stdin(tmp_path: Path) -> None:
    engine = FakeEngine()

    def go() -> None:
        with running(tmp_path, engine) as daemon:
            out, code = call_cni(sock(daemon), ENV, STDIN)
            assert (out, code) == (b'{"cniVersion":"1.0.0"}\n', 0)
            call_cni(sock(daemon), ENV, STDIN)

    go()
    env, stdin, executor = engine.calls[0]
    assert env == ENV
    assert stdin == STDIN
    assert isinstance(executor, SlotLentWhileDelegatesRun), "waiting delegates hold no slot"
    assert isinstance(executor.inner, ProcessExecutor), "the daemon's delegates are processes"
    # The engine's memory is the daemon's own, the same for every call.
    first, second = engine.memories
    assert isinstance(first, EngineMemory)
    assert second is first


def test_socket_and_directory_are_private_and_removed_at_exit(tmp_path: Path) -> None:
    def go() -> Path:
        with running(tmp_path, FakeEngine()) as daemon:
            path = sock(daemon)
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
            assert is_ready(path)
            return path

    assert not go().exists()


def test_a_stale_socket_is_replaced_and_a_live_one_refused(tmp_path: Path) -> None:
    path = tmp_path / "run" / "braid.sock"
    path.parent.mkdir()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # bound, never listening: what a killed daemon leaves
    prepare_socket_dir(path)
    assert not path.exists()
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(path))
    live.listen()
    try:
        with pytest.raises(DaemonAlreadyRunning):
            prepare_socket_dir(path)
    finally:
        live.close()


def test_overload_is_answered_with_code_11_at_once(tmp_path: Path) -> None:
    engine = FakeEngine()
    engine.gate.clear()

    def go() -> tuple[bytes, int]:
        with running(tmp_path, engine, concurrency=1, queue_size=0) as daemon:
            first = in_background(call_cni, sock(daemon), ENV, STDIN)
            engine.entered.wait(5)
            other = {**ENV, "CNI_CONTAINERID": "ctr-2"}
            refused = call_cni(sock(daemon), other, STDIN, 5)
            engine.gate.set()
            assert first.result(15)[1] == 0
            return refused

    out, code = go()
    assert code == 1
    error = json.loads(out)
    assert error["code"] == 11
    assert error["cniVersion"] == "1.0.0"
    assert "daemonConcurrency" in error["details"]


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (b"\x00\x00\x00\x03abc", 4),
        (b'\x00\x00\x00\x1f{"protocol":9,"kind":"health"}\n', 11),
        (b"\xff\xff\xff\xff", 4),
        (frame_of(b"[" * 100_000 + b"]" * 100_000), 4),
        (frame_of(b'{"protocol":1,"kind":"cni","stdin":"\xff"}'), 4),
    ],
)
def test_malformed_frames_get_a_cni_error(tmp_path: Path, frame: bytes, expected: int) -> None:
    def go() -> dict[str, Any]:
        with running(tmp_path, FakeEngine()) as daemon:
            return exchange(sock(daemon), frame, 5)

    answer = go()
    assert answer["exitCode"] == 1
    assert json.loads(base64.b64decode(answer["stdout"]))["code"] == expected


@pytest.mark.parametrize(
    "stdin",
    [b'{"cniVersion":"1.0.0","name":"\xff","type":"braid"}', b"[" * 50_000 + b"]" * 50_000],
    ids=["invalid-utf8", "deeply-nested"],
)
def test_undecodable_stdin_through_the_daemon_is_code_6(tmp_path: Path, stdin: bytes) -> None:
    def go() -> tuple[bytes, int]:
        with running(tmp_path, None) as daemon:
            return call_cni(sock(daemon), ENV, stdin, 5)

    out, code = go()
    assert code == 1
    assert json.loads(out)["code"] == 6


def test_a_silent_client_is_dropped_with_an_error_after_a_few_seconds(tmp_path: Path) -> None:
    def go() -> tuple[dict[str, Any], float]:
        with running(tmp_path, FakeEngine()) as daemon:
            started = time.monotonic()
            answer = exchange(sock(daemon), b"\x00\x00", 10)
            return answer, time.monotonic() - started

    answer, seconds = go()
    error = json.loads(base64.b64decode(answer["stdout"]))
    assert error["code"] == 4
    assert "within 3 s" in error["msg"]
    assert 2.9 < seconds < 4.5, seconds


def test_shutdown_refuses_new_work_answers_not_ready_and_drains(tmp_path: Path) -> None:
    engine = FakeEngine()
    engine.gate.clear()

    def go() -> tuple[bytes, int]:
        with running(tmp_path, engine) as daemon:
            path = sock(daemon)
            inflight = in_background(call_cni, path, ENV, STDIN)
            engine.entered.wait(5)
            daemon.stop()
            time.sleep(0.1)
            assert http_get(daemon, "/readyz") == (503, b"not ready\n")
            assert not path.exists(), "a draining daemon still accepts connections"
            with pytest.raises(OSError):
                exchange(path, {"protocol": 1, "kind": "health"}, 2)
            engine.gate.set()
            return inflight.result(15)

    assert go() == (b'{"cniVersion":"1.0.0"}\n', 0)


def test_probes_and_metrics_over_http(tmp_path: Path) -> None:
    def go() -> None:
        with running(tmp_path, FakeEngine()) as daemon:
            call_cni(sock(daemon), ENV, STDIN)
            assert http_get(daemon, "/healthz") == (200, b"ok\n")
            assert http_get(daemon, "/readyz") == (200, b"ready\n")
            assert (http_get(daemon, "/nope"))[0] == 404
            # A request's metrics are recorded once its work is over, which can be just after
            # its answer reached the client: the scrape is given a moment.
            done = 'braid_daemon_requests_total{outcome="success",verb="ADD"} 1.0'
            for _ in range(200):
                status, body = http_get(daemon, "/metrics")
                text = body.decode()
                if status != 200 or done in text:
                    break
                time.sleep(0.01)
            assert status == 200
            assert done in text
            assert 'braid_daemon_request_seconds_count{verb="ADD"} 1.0' in text
            assert 'braid_daemon_phase_seconds_count{phase="queue",plugin=""} 1.0' in text
            assert "braid_daemon_queue_depth 0.0" in text
            assert "braid_daemon_in_flight 0.0" in text

    go()


class CountingEngine:
    """Holds every call until released; records the peak of calls running at once and the
    order in which they started."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0
        self.started: list[str] = []
        self.release = threading.Event()

    def __call__(self, env: Mapping[str, str], stdin: bytes, **kw: Any) -> tuple[bytes, int]:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.started.append(env["CNI_CONTAINERID"])
        self.release.wait(10)
        with self.lock:
            self.running -= 1
        return b'{"cniVersion":"1.0.0"}\n', 0


def test_a_burst_keeps_the_bound_whichever_thread_takes_each_request(tmp_path: Path) -> None:
    """Requests served by the acceptor threads and those waiting in threads of their own
    share one bound: never more than ``concurrency`` at once, and the queued ones all run."""
    engine = CountingEngine()

    def go() -> list[tuple[bytes, int]]:
        with running(tmp_path, engine, concurrency=2, queue_size=10) as daemon:
            calls = [
                in_background(
                    call_cni, sock(daemon), {**ENV, "CNI_CONTAINERID": f"ctr-{i}"}, STDIN, 10
                )
                for i in range(8)
            ]
            time.sleep(0.5)
            assert engine.running == 2, "two slots, two requests running"
            engine.release.set()
            return [call.result(15) for call in calls]

    answers = go()
    assert all(code == 0 for _, code in answers), answers
    assert engine.peak == 2
    assert sorted(engine.started) == sorted(f"ctr-{i}" for i in range(8))


def test_one_container_waits_for_its_running_request(tmp_path: Path) -> None:
    """A DEL arriving while the container's ADD runs in an acceptor thread waits for it (in
    a thread of its own), then runs."""
    engine = CountingEngine()

    def go() -> None:
        with running(tmp_path, engine, concurrency=4, queue_size=4) as daemon:
            add = in_background(call_cni, sock(daemon), ENV, STDIN, 10)
            time.sleep(0.2)
            delete = in_background(call_cni, sock(daemon), {**ENV, "CNI_COMMAND": "DEL"}, STDIN, 10)
            time.sleep(0.3)
            assert engine.started == ["ctr-1"], "the DEL started while its ADD ran"
            engine.release.set()
            assert add.result(15)[1] == 0
            assert delete.result(15)[1] == 0
            assert engine.started == ["ctr-1", "ctr-1"]
            assert engine.peak == 1

    go()


def test_an_existing_directory_is_used_as_it_is(tmp_path: Path) -> None:
    """``/run`` or a directory an administrator made: braid never changes its mode."""
    directory = tmp_path / "run"
    directory.mkdir()
    directory.chmod(0o755)
    prepare_socket_dir(directory / "braid.sock")
    assert stat.S_IMODE(directory.stat().st_mode) == 0o755


def test_a_directory_braid_makes_is_private_with_its_parents(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        prepare_socket_dir(tmp_path / "a" / "run" / "braid.sock")
    finally:
        os.umask(previous)
    modes = [stat.S_IMODE((tmp_path / p).stat().st_mode) for p in ("a", "a/run")]
    assert modes == [0o700, 0o700]


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777, 0o757])
def test_a_directory_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    directory = tmp_path / "run"
    directory.mkdir()
    directory.chmod(mode)
    with pytest.raises(OSError, match="writable by others") as info:
        prepare_socket_dir(directory / "braid.sock")
    assert str(directory) in str(info.value)
    assert stat.S_IMODE(directory.stat().st_mode) == mode, "left as it was"


def test_a_directory_of_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "run"
    directory.mkdir(mode=0o755)
    if os.geteuid() == 0:
        os.chown(directory, 65534, 65534)
    else:
        monkeypatch.setattr(server_module.os, "geteuid", lambda: os.getuid() + 1)
    with pytest.raises(OSError, match="belongs to uid"):
        prepare_socket_dir(directory / "braid.sock")


def test_a_file_where_the_directory_goes_is_refused(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("")
    with pytest.raises(OSError, match="is not a directory"):
        prepare_socket_dir(tmp_path / "run" / "braid.sock")
