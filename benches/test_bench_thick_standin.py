"""Thick mode's overhead per pod end to end, with stand-in delegates: ADD and DEL through the
compiled shim and a real daemon against the same delegates executed directly, with 0, 1, 2 and
4 extra networks, where every delegate is the stand-in plugin (`thick_standin.py`: executed,
reads its configuration, answers at once).

Everything is real on both sides (every process start, braid's shim, socket, daemon, engine,
record and checks); only the plugins' own work is left out, so a round costs a few
milliseconds and hundreds of paired rounds are cheap. The overhead is the median of the
per-round differences (each round runs ADD then DEL on both sides, the order alternating).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from braid.daemon.settings import default_concurrency
from overhead_record import THICK_STANDIN
from thick_direct import DirectPod
from thick_shim import ShimPod
from thick_world import ThickNode, records_left, thick_node

ROUNDS = int(os.environ.get("BRAID_STANDIN_ROUNDS", "300"))
EXTRA_NETWORKS = [0, 1, 2, 4]


@pytest.fixture(scope="module")
def standin() -> Iterator[ThickNode]:
    try:
        with thick_node(default_concurrency(), standin=True) as node:
            yield node
    except RuntimeError as exc:
        pytest.fail(str(exc))


def timed(operation: str, side: str, target: Callable[[], object]) -> None:
    started = time.perf_counter()
    target()
    THICK_STANDIN.add(operation, side, time.perf_counter() - started)


@pytest.mark.parametrize("extra", EXTRA_NETWORKS)
def test_thick_standin_overhead(benchmark: Any, standin: ThickNode, extra: int) -> None:
    benchmark.group = f"thick stand-in paired rounds, {extra} extra network(s)"
    suffix = uuid.uuid4().hex[:8]
    direct = DirectPod(standin.world, extra, f"direct-{suffix}", standin.pod_ns)
    braid = ShimPod(standin.world, standin.shim, extra, f"braid-{suffix}", standin.pod_ns)
    label = f"+{extra} extra network(s)"
    sides = [("direct", direct.add, direct.delete), ("braid", braid.add, braid.delete)]
    for _, add, delete in sides:  # warm-up: page cache, the plugin's VERSION
        add()
        delete()
    rounds = iter(range(1 << 30))

    def paired_round() -> None:
        order = sides if next(rounds) % 2 == 0 else sides[::-1]
        for side, add, delete in order:
            timed(f"ADD {label}", side, add)
            timed(f"DEL {label}", side, delete)

    benchmark.pedantic(paired_round, rounds=ROUNDS)
    assert records_left(standin.world) == []
    if not benchmark.enabled:
        THICK_STANDIN.samples.clear()
