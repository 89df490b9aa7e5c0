"""A daemon server in this process over a temp socket, with a fake engine behind it."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from daemon_fakes import ENV, STDIN, FakeEngine, http_get, running, sock

from braid.daemon import server as server_module
from braid.daemon.client import call_cni, exchange, is_ready
from braid.daemon.server import DaemonAlreadyRunning, prepare_socket_dir


def test_cni_call_runs_the_engine_with_the_requests_env_and_stdin(tmp_path: Path) -> None:
    engine = FakeEngine()

    async def go() -> None:
        async with running(tmp_path, engine) as daemon:
            out, code = await asyncio.to_thread(call_cni, sock(daemon), ENV, STDIN)
            assert (out, code) == (b'{"cniVersion":"1.0.0"}\n', 0)

    asyncio.run(go())
    env, stdin, executor = engine.calls[0]
    assert env == ENV
    assert stdin == STDIN
    assert executor is not None, "delegates must go through the timing executor"


def test_socket_and_directory_are_private_and_removed_at_exit(tmp_path: Path) -> None:
    async def go() -> Path:
        async with running(tmp_path, FakeEngine()) as daemon:
            path = sock(daemon)
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
            assert await asyncio.to_thread(is_ready, path)
            return path

    assert not asyncio.run(go()).exists()


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

    async def go() -> tuple[bytes, int]:
        async with running(tmp_path, engine, concurrency=1, queue_size=0) as daemon:
            first = asyncio.create_task(asyncio.to_thread(call_cni, sock(daemon), ENV, STDIN))
            await asyncio.to_thread(engine.entered.wait, 5)
            other = {**ENV, "CNI_CONTAINERID": "ctr-2"}
            refused = await asyncio.to_thread(call_cni, sock(daemon), other, STDIN, 5)
            engine.gate.set()
            assert (await first)[1] == 0
            return refused

    out, code = asyncio.run(go())
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
    ],
)
def test_malformed_frames_get_a_cni_error(tmp_path: Path, frame: bytes, expected: int) -> None:
    async def go() -> dict[str, Any]:
        async with running(tmp_path, FakeEngine()) as daemon:
            return await asyncio.to_thread(exchange, sock(daemon), frame, 5)

    answer = asyncio.run(go())
    assert answer["exitCode"] == 1
    assert json.loads(base64.b64decode(answer["stdout"]))["code"] == expected


def test_a_silent_client_is_dropped_with_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "FRAME_TIMEOUT", 0.2)

    async def go() -> dict[str, Any]:
        async with running(tmp_path, FakeEngine()) as daemon:
            return await asyncio.to_thread(exchange, sock(daemon), b"\x00\x00", 5)

    answer = asyncio.run(go())
    assert json.loads(base64.b64decode(answer["stdout"]))["code"] == 4


def test_shutdown_refuses_new_work_answers_not_ready_and_drains(tmp_path: Path) -> None:
    engine = FakeEngine()
    engine.gate.clear()

    async def go() -> tuple[bytes, int]:
        async with running(tmp_path, engine) as daemon:
            path = sock(daemon)
            inflight = asyncio.create_task(asyncio.to_thread(call_cni, path, ENV, STDIN))
            await asyncio.to_thread(engine.entered.wait, 5)
            daemon.stop()
            await asyncio.sleep(0.1)
            assert await http_get(daemon, "/readyz") == (503, b"not ready\n")
            assert not path.exists(), "a draining daemon still accepts connections"
            with pytest.raises(OSError):
                await asyncio.to_thread(exchange, path, {"protocol": 1, "kind": "health"}, 2)
            engine.gate.set()
            return await inflight

    assert asyncio.run(go()) == (b'{"cniVersion":"1.0.0"}\n', 0)


def test_probes_and_metrics_over_http(tmp_path: Path) -> None:
    async def go() -> None:
        async with running(tmp_path, FakeEngine()) as daemon:
            await asyncio.to_thread(call_cni, sock(daemon), ENV, STDIN)
            assert await http_get(daemon, "/healthz") == (200, b"ok\n")
            assert await http_get(daemon, "/readyz") == (200, b"ready\n")
            assert (await http_get(daemon, "/nope"))[0] == 404
            # A request's metrics are recorded once its work is over, which can be just after
            # its answer reached the client: the scrape is given a moment.
            done = 'braid_daemon_requests_total{outcome="success",verb="ADD"} 1.0'
            for _ in range(200):
                status, body = await http_get(daemon, "/metrics")
                text = body.decode()
                if status != 200 or done in text:
                    break
                await asyncio.sleep(0.01)
            assert status == 200
            assert done in text
            assert 'braid_daemon_request_seconds_count{verb="ADD"} 1.0' in text
            assert 'braid_daemon_phase_seconds_count{phase="queue",plugin=""} 1.0' in text
            assert "braid_daemon_queue_depth 0.0" in text
            assert "braid_daemon_in_flight 0.0" in text

    asyncio.run(go())
