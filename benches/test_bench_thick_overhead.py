"""Thick mode's overhead per pod: ADD and DEL through the compiled shim and a real daemon
against the same delegates executed directly, with 0, 1, 2 and 4 extra networks (bridge +
host-local NADs), and the shim's VERSION latency.

Needs root (network namespaces) and the release shim (built here when missing). Each paired
round runs ADD then DEL on both sides, the order alternating; the overhead is the median of the
per-round differences, printed at the end of the run and recorded in `docs/performance.md`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from braid.bench.braid_side import BraidPod
from braid.bench.spawn import execute
from braid.daemon.settings import default_concurrency
from overhead_record import THICK_OVERHEAD
from thick_paired import paired_benchmark
from thick_world import ThickNode, thick_node_or_fail

PAIRED_ROUNDS = int(os.environ.get("BRAID_PAIRED_ROUNDS", "40"))
VERSION_ROUNDS = 300
EXTRA_NETWORKS = [0, 1, 2, 4]


@pytest.fixture(scope="module")
def thick() -> Iterator[ThickNode]:
    with thick_node_or_fail(default_concurrency()) as node:
        yield node


@pytest.mark.parametrize("extra", EXTRA_NETWORKS)
def test_thick_paired_overhead(benchmark: Any, thick: ThickNode, extra: int) -> None:
    """ADD and DEL of one pod on both sides per round; the figures of docs/performance.md."""
    benchmark.group = f"thick paired rounds, {extra} extra network(s)"
    paired_benchmark(benchmark, THICK_OVERHEAD, thick, extra, PAIRED_ROUNDS)


def test_thick_shim_version(benchmark: Any, thick: ThickNode) -> None:
    """VERSION is answered by the shim alone: exec to exit, as the runtime sees it."""
    benchmark.group = "thick shim VERSION"
    pod = BraidPod(thick.world, thick.shim, 0, "", "")
    versions = benchmark.pedantic(pod.version, rounds=VERSION_ROUNDS, warmup_rounds=5)
    assert "1.0.0" in versions


def test_thick_spawn_floor(benchmark: Any, thick: ThickNode) -> None:
    """`/bin/true` started the same way: the part of VERSION any executable costs here."""
    benchmark.group = "thick shim VERSION"
    del thick
    run = partial(execute, "/bin/true", {}, b"{}")
    benchmark.pedantic(run, rounds=VERSION_ROUNDS, warmup_rounds=5)
