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
from collections.abc import Iterator
from typing import Any

import pytest

from braid.daemon.settings import default_concurrency
from overhead_record import THICK_STANDIN
from thick_paired import paired_benchmark
from thick_world import ThickNode, thick_node_or_fail

ROUNDS = int(os.environ.get("BRAID_STANDIN_ROUNDS", "300"))
EXTRA_NETWORKS = [0, 1, 2, 4]


@pytest.fixture(scope="module")
def standin() -> Iterator[ThickNode]:
    with thick_node_or_fail(default_concurrency(), standin=True) as node:
        yield node


@pytest.mark.parametrize("extra", EXTRA_NETWORKS)
def test_thick_standin_overhead(benchmark: Any, standin: ThickNode, extra: int) -> None:
    benchmark.group = f"thick stand-in paired rounds, {extra} extra network(s)"
    paired_benchmark(benchmark, THICK_STANDIN, standin, extra, ROUNDS)
