"""The fault soak: SOAK_CYCLES (default 300) pods added and deleted through the compiled shim
and braid's daemon on the reference plugins, each cycle with a fault drawn at random from a
seeded generator (SOAK_SEED reproduces a run; the seed is printed either way). Fails with every
finding: which cycle, which fault, what was left.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import soak_faults as faults
import soak_oracle as oracle
from soak_cycle import FREEZE_SECONDS, Cycle, run_cycle
from soak_world import World

CYCLES = int(os.environ.get("SOAK_CYCLES", "300"))
SEED = int(os.environ.get("SOAK_SEED", str(random.SystemRandom().randrange(2**32))))


@pytest.fixture
def world(shim: Path, tmp_path: Path) -> Iterator[World]:
    made = World(root=tmp_path, shim=shim)
    made.build()
    try:
        made.start_daemon()
        yield made
    finally:
        problems = made.teardown()
        problems += [f"namespace {n} left" for n in oracle.netns_named(f"braids-{made.token}")]
        problems += [f"mount {m} left" for m in oracle.mounts_under(tmp_path)]
        assert not problems, problems


def figures(cycles: list[Cycle], seconds: float) -> list[str]:
    kinds = Counter(c.fault for c in cycles)
    landed = Counter(c.fault for c in cycles if c.landed())
    failing = Counter(c.fault for c in cycles if c.findings)
    lines = [
        f"seed {SEED} (SOAK_SEED={SEED} SOAK_CYCLES={CYCLES} reproduces it), "
        f"{len(cycles)} cycles in {seconds:.0f} s",
        f"{'fault':<14} {'cycles':>6} {'landed':>6} {'failing':>7}",
    ]
    for kind in faults.WEIGHTS:
        lines.append(f"{kind:<14} {kinds[kind]:>6} {landed[kind]:>6} {failing[kind]:>7}")
    findings = sum(len(c.findings) for c in cycles)
    lines.append(f"findings: {findings} (leaks and contract failures)")
    remnants = sum(len(c.remnants) for c in cycles)
    lines.append(
        f"remnants: {remnants} (links a killed plugin left in a pod namespace under a name of "
        "its own, gone with the namespace)"
    )
    return lines


@pytest.mark.timeout(CYCLES * (3 + FREEZE_SECONDS) + 120)
def test_every_cycle_leaves_nothing_whatever_the_fault(world: World, summary: list[str]) -> None:
    sys.stderr.write(f"\nsoak: seed {SEED}, {CYCLES} cycles\n")
    rng = random.Random(SEED)  # noqa: S311 (a reproducible schedule of faults, no secret)
    started = time.monotonic()
    cycles: list[Cycle] = []
    try:
        for number in range(CYCLES):
            cycles.append(run_cycle(world, number, faults.choose(rng), rng))
    finally:
        summary.extend(figures(cycles, time.monotonic() - started))
    failing = [c.report() for c in cycles if c.findings]
    summary.extend(failing)
    if failing:
        report = f"seed {SEED}: {len(failing)} cycle(s) failed:\n" + "\n".join(failing)
        pytest.fail(report, pytrace=False)
