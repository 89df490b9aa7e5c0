"""The daemon under a burst: 200 pods, each with two extra networks (bridge + host-local),
ADDed at once through 200 concurrent shims, then DELed at once. Measures the daemon's resident
memory at rest and during the burst (sampled every 5 ms, and the kernel's peak `VmHWM`), and
pods per second on this machine (2 cores) for the ADD and the DEL burst.

In smoke mode (`--benchmark-disable`) the burst is 20 pods, so CI stays quick.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from braid.bench.braid_side import BraidPod
from braid.bench.daemon import DaemonProcess, RssSampler
from braid.bench.namespaces import namespace
from braid.daemon.settings import default_concurrency
from overhead_record import THICK_FIGURES
from thick_world import World, cni_env, daemon_of, records_left, running_world, shim_path

BURST = 200
SMOKE_BURST = 20
EXTRA_NETWORKS = 2


def burst(shim: Path, world: World, pods: list[tuple[str, str]], command: str) -> float:
    """Starts one shim per pod at once, waits for all; the seconds from first start to last
    exit. Every shim must succeed."""
    stdin = world.braid_conf(EXTRA_NETWORKS)
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [str(shim)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=cni_env(command, container_id, netns, bin_dir=world.bin_dir, pod=container_id),
            close_fds=True,
        )
        for container_id, netns in pods
    ]
    outputs = [proc.communicate(stdin)[0] for proc in procs]
    elapsed = time.perf_counter() - started
    failed = [(p.returncode, out) for p, out in zip(procs, outputs, strict=True) if p.returncode]
    assert not failed, f"{len(failed)} of {len(pods)} {command}s failed, first: {failed[0]!r}"
    return elapsed


@pytest.fixture
def world_and_daemon(tmp_path: Path) -> Iterator[tuple[World, DaemonProcess, Path]]:
    del tmp_path
    if os.geteuid() != 0:
        pytest.fail("the thick-mode benchmarks need root (network namespaces)")
    shim = shim_path()
    with (
        namespace("h", loopback_up=True) as host,
        running_world(host) as world,
        daemon_of(world, default_concurrency()) as daemon,
    ):
        yield world, daemon, shim


def kib_figure(kib: int) -> str:
    return f"{kib / 1024:.1f} MiB"


def test_thick_burst(benchmark: Any, world_and_daemon: tuple[World, DaemonProcess, Path]) -> None:
    world, daemon, shim = world_and_daemon
    size = BURST if benchmark.enabled else SMOKE_BURST
    benchmark.group = f"thick burst of {size} pods"
    with ExitStack() as stack:
        pods = [
            (f"burst-{i:03d}", stack.enter_context(namespace("b", loopback_up=False)))
            for i in range(size + 1)
        ]
        fresh = daemon.memory_kib()["VmRSS"]
        BraidPod(world, shim, EXTRA_NETWORKS, *pods[0]).add()  # warm: imports, plugin versions
        rest = daemon.memory_kib()["VmRSS"]
        with RssSampler(daemon) as sampler:
            add_seconds = benchmark.pedantic(
                burst, args=(shim, world, pods[1:], "ADD"), rounds=1, iterations=1
            )
            peak_add = sampler.peak_kib
            del_seconds = burst(shim, world, pods, "DEL")
        after = daemon.memory_kib()
        records = records_left(world)
        assert not records, f"{len(records)} attachment records left after the DEL burst"
    THICK_FIGURES.update(
        {
            "daemon RSS at start": kib_figure(fresh),
            "daemon RSS at rest (after one pod)": kib_figure(rest),
            f"daemon RSS peak during the ADD burst ({size})": kib_figure(peak_add),
            "daemon RSS peak (ADD + DEL bursts)": kib_figure(sampler.peak_kib),
            "daemon VmHWM (kernel's peak RSS)": kib_figure(after["VmHWM"]),
            "daemon RSS after the bursts": kib_figure(after["VmRSS"]),
            f"ADD burst: {size} pods": f"{add_seconds:.2f} s, {size / add_seconds:.1f} pods/s",
            f"DEL burst: {size + 1} pods": f"{del_seconds:.2f} s, {len(pods) / del_seconds:.1f}"
            " pods/s",
        }
    )
    if not benchmark.enabled:
        THICK_FIGURES.clear()
