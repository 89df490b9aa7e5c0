"""The daemon's per-phase trace (``braidctl daemon --trace``) and the acceptor's hand-off of a
request it cannot admit at once (decoded once, not again on the thread that serves it)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from daemon_fakes import ENV, STDIN, in_background, running, sock

from braid.bench.trace import CALL, IN_DAEMON, SHIM_EXIT, SHIM_START, phase_medians, trace_lines
from braid.daemon import service as service_module
from braid.daemon.client import call_cni
from braid.daemon.protocol import Request, decode_request
from braid.daemon.trace import Tracer
from braid.engine.phases import delegate_observer, phase


class PhasedEngine:
    """Reports a store lookup and two delegate executions, answers early, then works on
    after the answer; blocks on ``release`` while it is clear."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.release.set()
        self.started: list[str] = []

    def __call__(self, env: Mapping[str, str], stdin: bytes, **kw: Any) -> tuple[bytes, int]:
        self.started.append(env["CNI_COMMAND"])
        self.release.wait(10)
        with phase("store_lookup"):
            time.sleep(0.002)
        observe = delegate_observer()
        assert observe is not None, "a traced request's delegates are observed"
        observe("bridge", 0.010)
        observe("bridge", 0.005)
        out = b'{"cniVersion":"1.0.0"}\n'
        kw["answer"](out)
        time.sleep(0.003)  # the record's rewrite after the answer
        return out, 0


def test_each_request_leaves_one_line_of_its_phases(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    engine = PhasedEngine()
    with running(tmp_path, engine) as daemon:
        daemon.service.tracer = Tracer(path)
        for verb in ("ADD", "DEL"):
            assert call_cni(sock(daemon), {**ENV, "CNI_COMMAND": verb}, STDIN)[1] == 0
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["verb"] for line in lines] == ["ADD", "DEL"]
    ms = lines[0]["ms"]
    assert set(ms) == {
        "read",
        "decode",
        "admit",
        "store_lookup",
        "delegate bridge",
        "to_answer",
        "after_answer",
    }
    assert ms["delegate bridge"] == pytest.approx(15.0)  # both executions, summed
    assert ms["store_lookup"] >= 2.0
    assert ms["to_answer"] >= ms["store_lookup"] + ms["delegate bridge"] - 15.0
    assert ms["after_answer"] >= 3.0
    assert all(value >= 0 for value in ms.values())
    at = lines[0]["at"]  # the node's monotonic clock, as a client's time.monotonic reads it
    assert at["accepted"] < at["answered"] <= time.monotonic() * 1e3
    assert at["answered"] - at["accepted"] == pytest.approx(
        sum(ms[k] for k in ("read", "decode", "admit", "to_answer")), abs=0.5
    )

    medians = phase_medians(path)
    assert medians["ADD"]["n"] == 1
    assert medians["ADD"][IN_DAEMON] == pytest.approx(
        sum(ms[k] for k in ("read", "decode", "admit", "to_answer")), abs=0.01
    )
    table = "\n".join(trace_lines(medians))
    assert "requests: ADD 1 DEL 1" in table
    assert "delegate bridge" in table


def test_no_trace_without_the_flag(tmp_path: Path) -> None:
    with running(tmp_path, PhasedEngine()) as daemon:
        assert daemon.service.tracer is None
        assert call_cni(sock(daemon), ENV, STDIN)[1] == 0
    assert not list(tmp_path.glob("*.jsonl"))


def test_a_trace_summary_skips_lines_cut_short(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text(
        '{"verb": "DEL", "ms": {"read": 1.0, "to_answer": 3.0, "delegate x": 2.0}}\n'
        '{"verb": "DEL", "ms": {"read": 3.0, "to_answer": 5.0, "delegate x": 2.0}}\n'
        '{"verb": "DEL", "ms": {"rea'
    )
    medians = phase_medians(path)["DEL"]
    assert medians["n"] == 2
    assert medians["read"] == 2.0
    assert medians["to_answer beside delegates"] == 2.0
    assert phase_medians(tmp_path / "missing") == {}


def test_the_shims_segments_come_from_the_call_around_each_request(tmp_path: Path) -> None:
    """``braidctl bench --trace`` places each request inside the shim's execution that made
    it: the start to the accept, the answer to the exit; a request no call was running for
    (another client's) gets none."""
    path = tmp_path / "trace.jsonl"
    path.write_text(
        '{"verb": "ADD", "ms": {"read": 0.1, "to_answer": 3.0}, '
        '"at": {"accepted": 1000.5, "answered": 1003.6}}\n'
        '{"verb": "ADD", "ms": {"read": 0.1, "to_answer": 3.0}, '
        '"at": {"accepted": 2000.25, "answered": 2003.35}}\n'
        '{"verb": "DEL", "ms": {"read": 0.1, "to_answer": 3.0}, '
        '"at": {"accepted": 5000.0, "answered": 5003.1}}\n'
    )
    calls = [(1.000, 1.004), (2.000, 2.0045), (3.0, 3.01)]
    medians = phase_medians(path, calls)
    assert medians["ADD"]["n"] == 2
    assert medians["ADD"][SHIM_START] == pytest.approx(0.375)  # 0.5 and 0.25
    assert medians["ADD"][SHIM_EXIT] == pytest.approx(0.775)  # 0.4 and 1.15
    assert medians["ADD"][CALL] == pytest.approx(4.25)
    assert SHIM_START not in medians["DEL"], "accepted while no call ran"
    # "in the daemon" is summed over the same requests as the call, so their medians compare.
    assert IN_DAEMON not in medians["DEL"]
    assert medians["ADD"][IN_DAEMON] < medians["ADD"][CALL]
    table = trace_lines(medians)
    rows = [line.split()[0] for line in table[3:]]
    assert rows[:2] == ["shim", "read"], "the shim's start comes first"


def test_a_request_that_waits_is_decoded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DEL arriving while its container's ADD runs cannot be admitted by the acceptor: the
    thread that serves it gets the request the acceptor decoded."""
    decoded: list[Request] = []
    real = decode_request

    def counting(body: bytes) -> Request:
        decoded.append(real(body))
        return decoded[-1]

    monkeypatch.setattr(service_module, "decode_request", counting)
    engine = PhasedEngine()
    engine.release.clear()
    with running(tmp_path, engine, concurrency=4, queue_size=4) as daemon:
        add = in_background(call_cni, sock(daemon), ENV, STDIN, 10)
        deadline = time.monotonic() + 5
        while not engine.started and time.monotonic() < deadline:
            time.sleep(0.01)
        delete = in_background(call_cni, sock(daemon), {**ENV, "CNI_COMMAND": "DEL"}, STDIN, 10)
        time.sleep(0.3)
        assert engine.started == ["ADD"], "the DEL waits for its container's ADD"
        engine.release.set()
        assert add.result(15)[1] == 0
        assert delete.result(15)[1] == 0
    assert engine.started == ["ADD", "DEL"]
    assert len(decoded) == 2, "each request decoded once"
