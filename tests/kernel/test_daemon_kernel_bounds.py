"""The daemon's bounds: a pod whose annotation selects a network 10,000 times is refused with
code 7 before anything runs, and the daemon's memory stays flat (sampled every 5 ms).

The NAD names a plugin that does not exist: without the bound, each such ADD resolved and
recorded all 10,000 attachments, then failed at the first secondary delegate (code 103)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import kernel_netns
import pytest
from engine_fixtures import NETWORKS, EngineSetup, make_engine
from kernel_daemon import Daemon, RssPeak, call

pytestmark = pytest.mark.kernel

SELECTIONS = 10_000
ROUNDS = 20


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", {"cniVersion": "1.0.0", "type": "kabsent"})
    return setup


@pytest.fixture
def daemon(engine: EngineSetup, tmp_path: Path) -> Iterator[Daemon]:
    started = Daemon(engine.host, tmp_path / "run", tmp_path / "daemon.log").start()
    yield started
    started.stop()


def test_ten_thousand_selections_are_refused_and_memory_stays_flat(
    engine: EngineSetup, daemon: Daemon
) -> None:
    value = ",".join(["net-a"] * SELECTIONS)
    stdin = engine.braid_conf({NETWORKS: value})
    assert len(value) < 256 * 1024
    call(daemon, engine, "ADD", engine.braid_conf(None))  # warm: imports, caches, spares
    call(daemon, engine, "DEL", engine.braid_conf(None))
    at_rest = daemon.rss_kib()
    with RssPeak(daemon) as sampled:
        for _ in range(ROUNDS):
            error, code = call(daemon, engine, "ADD", stdin)
            assert code == 1
            assert error["code"] == 7, error
            assert "selects 10000 networks, more than the 64" in error["msg"]
            assert "`maxSelections`" in error["msg"]
    peak = sampled.peak_kib
    engine.assert_nothing_left()
    sys.stderr.write(
        f"\n{SELECTIONS} selections x {ROUNDS} ADDs: RSS at rest {at_rest / 1024:.1f} MiB, "
        f"peak {peak / 1024:.1f} MiB\n"
    )
    assert peak - at_rest < 8 * 1024, f"grew {(peak - at_rest) / 1024:.1f} MiB"


@pytest.mark.parametrize(
    ("pad", "count", "key"),
    # 1 MB of spec.config, in a file under maxNadFileBytes (1 MiB): refused by maxNadBytes
    [(1_000_000, 60, "maxNadBytes"), (60_000, 60, "maxPlanBytes")],
    ids=["1MB-nad", "60KB-nad"],
)
def test_big_nads_selected_many_times_are_refused_and_memory_stays_flat(
    engine: EngineSetup, daemon: Daemon, pad: int, count: int, key: str
) -> None:
    engine.nad("big", {"cniVersion": "1.0.0", "type": "kabsent", "pad": "x" * pad})
    stdin = engine.braid_conf({NETWORKS: ",".join(["big"] * count)})
    call(daemon, engine, "ADD", engine.braid_conf(None))  # warm: imports, caches, spares
    call(daemon, engine, "DEL", engine.braid_conf(None))
    at_rest = daemon.rss_kib()
    with RssPeak(daemon) as sampled:
        for _ in range(ROUNDS):
            error, code = call(daemon, engine, "ADD", stdin)
            assert code == 1
            assert error["code"] == 7, error
            assert f"`{key}`" in error["msg"]
    engine.assert_nothing_left()
    grown = (sampled.peak_kib - at_rest) / 1024
    sys.stderr.write(
        f"\n{pad}-byte NAD x {count} x {ROUNDS} ADDs: RSS at rest {at_rest / 1024:.1f} MiB, "
        f"peak {sampled.peak_kib / 1024:.1f} MiB\n"
    )
    assert grown < 16, f"grew {grown:.1f} MiB"
