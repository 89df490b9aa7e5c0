"""The engine on the real kernel: ADD and DEL wait for the readiness indicator file (NPWG spec
section 6.1.2), at most the bound, then answer code 11 having changed nothing; a file that
appears during the wait lets the call go on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, make_engine

from braid.engine import readiness

pytestmark = pytest.mark.kernel

BOUND = 1.0  # the wait's bound in these tests (45 s in braid)
ATTACHED = {"lo", "eth0", "net1", "net2"}


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbr1", "10.231.61.0/24"))
    setup.nad("net-b", bridge_nad(setup, "kbr2", "10.231.62.0/24"))
    return setup


@pytest.fixture
def short_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readiness, "READINESS_TIMEOUT", BOUND)
    monkeypatch.setattr(readiness, "READINESS_POLL", 0.05)


@pytest.fixture
def appears_later(tmp_path: Path) -> Iterator[tuple[Path, threading.Timer]]:
    """The indicator, and a timer (not started) that creates it 0.5 s after it starts."""
    indicator = tmp_path / "ready"
    timer = threading.Timer(0.5, indicator.touch)
    yield indicator, timer
    timer.cancel()
    timer.join()


def timed_run(engine: EngineSetup, command: str, indicator: Path) -> tuple[object, int, float]:
    start = time.monotonic()
    out, code = engine.run(
        command, {NETWORKS: "net-a,net-b"}, readinessindicatorfile=str(indicator)
    )
    return out, code, time.monotonic() - start


def leases(engine: EngineSetup) -> dict[str, int]:
    return {n: len(engine.leases(n)) for n in (CLUSTER, "net-a", "net-b")}


@pytest.mark.usefixtures("short_wait")
def test_add_without_the_indicator_waits_then_answers_11_attaching_nothing(
    engine: EngineSetup, tmp_path: Path
) -> None:
    error, code, took = timed_run(engine, "ADD", tmp_path / "ready")

    assert code == 1
    assert isinstance(error, dict)
    assert error["code"] == 11
    assert "not ready" in error["msg"]
    assert "attaching" in error["details"]
    assert took >= BOUND
    engine.assert_nothing_left()
    assert not engine.ipam_dir.joinpath(CLUSTER).exists(), "a delegate ran"


@pytest.mark.usefixtures("short_wait")
def test_del_without_the_indicator_waits_then_answers_11_removing_nothing(
    engine: EngineSetup, tmp_path: Path
) -> None:
    engine.add("net-a,net-b")
    record = engine.record_path.read_bytes()
    attached = leases(engine)
    assert attached == {CLUSTER: 2, "net-a": 1, "net-b": 1}  # the cluster is dual-stack

    error, code, took = timed_run(engine, "DEL", tmp_path / "ready")

    assert code == 1
    assert isinstance(error, dict)
    assert error["code"] == 11
    assert str(tmp_path / "ready") in error["msg"]
    assert "detaching" in error["details"]
    assert took >= BOUND
    assert set(kernel.links(engine.pod.name)) == ATTACHED
    assert leases(engine) == attached
    assert engine.record_path.read_bytes() == record, "the record was touched"


def test_del_goes_on_once_the_indicator_appears(
    engine: EngineSetup, appears_later: tuple[Path, threading.Timer]
) -> None:
    """Under the real bound (45 s): the DEL waits for the file, then tears down everything."""
    indicator, timer = appears_later
    engine.add("net-a,net-b")

    timer.start()
    out, code, took = timed_run(engine, "DEL", indicator)

    assert (out, code) == (None, 0)
    assert 0.5 <= took < readiness.READINESS_TIMEOUT
    engine.assert_nothing_left()
    assert leases(engine) == {CLUSTER: 0, "net-a": 0, "net-b": 0}


def test_add_goes_on_once_the_indicator_appears(
    engine: EngineSetup, appears_later: tuple[Path, threading.Timer]
) -> None:
    indicator, timer = appears_later

    timer.start()
    out, code, took = timed_run(engine, "ADD", indicator)

    assert code == 0, out
    assert 0.5 <= took < readiness.READINESS_TIMEOUT
    assert set(kernel.links(engine.pod.name)) == ATTACHED
    engine.delete("net-a,net-b", readinessindicatorfile=str(indicator))
    engine.assert_nothing_left()
