"""What `braid.cni.Runtime` adds on top of the plugins: ADD and DEL of bridge + host-local
through the runtime against the same plugins executed directly (same stdin, same environment,
started the same way in the same private host namespace), and VERSION of one plugin.

Needs root (network namespaces). Medians and their difference are printed at the end of the
run (see `conftest.py`) and recorded in `docs/performance.md`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench_setup import Setup, bridge_setup
from overhead_record import OVERHEAD

ROUNDS = 40
PAIRED_ROUNDS = 60


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    with bridge_setup(tmp_path) as made:
        yield made


def measure(benchmark: Any, operation: str, target: Callable[[], object], **pedantic: Any) -> None:
    benchmark.group = operation
    benchmark.pedantic(target, rounds=ROUNDS, warmup_rounds=2, **pedantic)


def paired_round(setup: Setup, first: str) -> None:
    """One ADD and one DEL on each side; `first` says which side goes first this round."""
    sides = {
        "direct": (setup.direct_add, setup.direct.delete),
        "runtime": (setup.runtime_add, setup.runtime_del),
    }
    order = ["direct", "runtime"] if first == "direct" else ["runtime", "direct"]
    for side in order:
        add, delete = sides[side]
        OVERHEAD.timed("ADD bridge+host-local", side, add)
        OVERHEAD.timed("DEL bridge+host-local", side, delete)
    for side in order:
        OVERHEAD.timed("VERSION bridge", side, getattr(setup, f"{side}_version"))


def test_paired_overhead(benchmark: Any, setup: Setup) -> None:
    """The figures of docs/performance.md: both sides in every round, order alternating."""
    benchmark.group = "paired rounds (direct + runtime)"
    rounds = iter(range(1 << 30))
    for _ in range(2):  # warm-up: plugin versions get cached, page cache fills
        paired_round(setup, "direct")
    OVERHEAD.samples.clear()
    benchmark.pedantic(
        lambda: paired_round(setup, "direct" if next(rounds) % 2 == 0 else "runtime"),
        rounds=PAIRED_ROUNDS,
    )
    if not benchmark.enabled:
        OVERHEAD.samples.clear()


def test_add_direct(benchmark: Any, setup: Setup) -> None:
    measure(benchmark, "ADD bridge+host-local", setup.direct_add, teardown=setup.direct.delete)


def test_add_runtime(benchmark: Any, setup: Setup) -> None:
    measure(benchmark, "ADD bridge+host-local", setup.runtime_add, teardown=setup.runtime_del)


def test_del_direct(benchmark: Any, setup: Setup) -> None:
    measure(benchmark, "DEL bridge+host-local", setup.direct.delete, setup=setup.direct_add)


def test_del_runtime(benchmark: Any, setup: Setup) -> None:
    measure(benchmark, "DEL bridge+host-local", setup.runtime_del, setup=setup.runtime_add)


def test_version_direct(benchmark: Any, setup: Setup) -> None:
    measure(benchmark, "VERSION bridge", setup.direct_version)


def test_version_runtime(benchmark: Any, setup: Setup) -> None:
    measure(benchmark, "VERSION bridge", setup.runtime_version)
