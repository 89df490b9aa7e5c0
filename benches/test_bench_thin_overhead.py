"""Thin mode's overhead per call: `braid-thin` (braid in-process, no daemon) against the same
delegates executed directly, for VERSION, ADD, CHECK and DEL of one pod with 0 and 1 extra
networks (bridge + host-local, NADs from files), in a private host namespace.

Each call is a process start on both sides (`runtime_exec`), as a runtime makes it, so the
overhead is everything `braid-thin` costs beyond its delegates: Python's start-up, its imports,
the engine's work and the attachment record. The figures (median and 90th percentile of the
per-round differences) are printed at the end of the run and recorded in `docs/performance.md`
("Thin mode in detail"). Needs root.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from braid.bench.braid_side import BraidPod
from braid.bench.direct import DirectPod
from braid.bench.namespaces import namespace
from braid.bench.rounds import Attached, Rounds
from overhead_record import THIN_OVERHEAD
from thick_world import World, inside_netns, records_left, running_world
from thin_paired import thin_path

ROUNDS = int(os.environ.get("BRAID_THIN_ROUNDS", "40"))
EXTRA_NETWORKS = [0, 1]


@pytest.fixture(scope="module")
def thin_world() -> Iterator[tuple[World, Path, str]]:
    """The world, `braid-thin`, and the pod's namespace; this thread in the host namespace."""
    if os.geteuid() != 0:
        pytest.fail("the thin-mode benchmark needs root (network namespaces)")
    try:
        thin = thin_path()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    with (
        namespace("h", loopback_up=True) as host,
        namespace("p", loopback_up=False) as pod,
        running_world(host) as world,
        inside_netns(host),
    ):
        yield world, thin, pod


@pytest.mark.parametrize("extra", EXTRA_NETWORKS)
def test_thin_paired_overhead(
    benchmark: Any, thin_world: tuple[World, Path, str], extra: int
) -> None:
    """VERSION, ADD, CHECK, DEL on both sides per round, the sides in a random order."""
    world, thin, pod_ns = thin_world
    benchmark.group = f"thin paired rounds, {extra} extra network(s)"
    suffix = uuid.uuid4().hex[:8]
    with Attached() as attached:  # whatever ends the rounds, no pod stays attached
        rounds = Rounds(
            DirectPod(world, extra, f"direct-{suffix}", pod_ns),
            BraidPod(world, thin, extra, f"thin-{suffix}", pod_ns),
            THIN_OVERHEAD,
            attached,
            label=f" +{extra} extra network(s)",
        )
        rounds.warm_up()  # untimed: page cache, bytecode, the plugins' first start
        benchmark.pedantic(rounds.round, rounds=ROUNDS)
    assert records_left(world) == []
    if not benchmark.enabled:
        THIN_OVERHEAD.samples.clear()  # one untimed run says nothing
