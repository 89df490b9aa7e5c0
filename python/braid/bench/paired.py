"""Paired samples: the same operation timed through braid and directly in each round.

The overhead is the median (and the 90th percentile) of the per-round differences, so drift
and noise from other load on the machine fall on both sides alike.

Every timed call starts after an untimed pause of random length, uniform over ``spread``
seconds. A plugin's own duration is made of kernel waits that end on the kernel's tick (RCU
grace periods behind a veth's deletion, timers), so a call started at a fixed offset after the
one before it, as back-to-back calls are, finds the tick at the same phase every round, and a
side whose own work shifts that phase by a millisecond gets the plugin's duration
systematically longer or shorter by up to a tick. Runtimes' calls arrive at any phase; so do
these. 20 ms is a whole number of ticks at HZ 100, 250, 300 and 1000.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

DEFAULT_SPREAD_SECONDS = 0.020


class Pod(Protocol):
    """A pod attached directly or through braid."""

    extra: int

    def add(self) -> object: ...

    def delete(self) -> None: ...


def p90(values: list[float]) -> float:
    """The 90th percentile (inclusive method: one value is its own percentile)."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """The distribution-free ``confidence`` interval of the median of ``values``: the order
    statistics whose ranks a Binomial(n, 1/2) count keeps the median between with at least that
    probability (the sign test's interval; no assumption about the values' distribution).
    With too few values for it, their whole range."""
    ordered = sorted(values)
    n = len(ordered)
    tail = (1.0 - confidence) / 2
    below, rank, total = 0, 0, 2**n
    while rank < n // 2 and (below + math.comb(n, rank)) / total <= tail:
        below += math.comb(n, rank)
        rank += 1
    if rank == 0:
        return ordered[0], ordered[-1]
    return ordered[rank - 1], ordered[n - rank]


@dataclass(frozen=True)
class Figures:
    """One operation's figures in seconds: both sides' medians, the median and 90th
    percentile of the per-round differences (measured minus direct), the 95 % interval of
    that median (``median_interval``), and the rounds."""

    rounds: int
    direct_median: float
    measured_median: float
    overhead_median: float
    overhead_p90: float
    overhead_low: float = 0.0
    overhead_high: float = 0.0


@dataclass
class OverheadRecord:
    """Paired samples by (operation, side); ``measured`` names the side compared with
    "direct"."""

    measured: str = "braid"
    samples: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    spread: float = DEFAULT_SPREAD_SECONDS
    pauses: random.Random = field(default_factory=lambda: random.Random(2026))  # noqa: S311

    def add(self, operation: str, side: str, seconds: float) -> None:
        self.samples.setdefault((operation, side), []).append(seconds)

    def timed(self, operation: str, side: str, target: Callable[[], object]) -> None:
        """Times one call, started at a random phase (the module's docstring says why)."""
        if self.spread > 0:
            time.sleep(self.pauses.uniform(0.0, self.spread))
        started = time.perf_counter()
        target()
        self.add(operation, side, time.perf_counter() - started)

    def paired_round(self, direct: Pod, measured: Pod, *, measured_first: bool) -> None:
        """One ADD and one DEL on each side, in the order given; ``direct.extra`` names them."""
        sides = [("direct", direct), (self.measured, measured)]
        if measured_first:
            sides.reverse()
        label = f"+{direct.extra} extra network(s)"
        for side, pod in sides:
            self.timed(f"ADD {label}", side, pod.add)
            self.timed(f"DEL {label}", side, pod.delete)

    def forget(self, suffix: str) -> None:
        """Drops the samples of every operation whose name ends with ``suffix`` (a warm-up's)."""
        for key in [k for k in self.samples if k[0].endswith(suffix)]:
            del self.samples[key]

    def figures(self, side: str | None = None) -> dict[str, Figures]:
        """Per operation with as many samples on both sides (at least one): ``side`` (by
        default ``measured``) against "direct"."""
        found = {}
        for op in sorted({op for op, _ in self.samples}):
            direct = self.samples.get((op, "direct"), [])
            measured = self.samples.get((op, side or self.measured), [])
            if not direct or len(direct) != len(measured):
                continue
            diffs = [m - d for d, m in zip(direct, measured, strict=True)]
            low, high = median_interval(diffs)
            found[op] = Figures(
                rounds=len(direct),
                direct_median=statistics.median(direct),
                measured_median=statistics.median(measured),
                overhead_median=statistics.median(diffs),
                overhead_p90=p90(diffs),
                overhead_low=low,
                overhead_high=high,
            )
        return found

    def summary_lines(self, *, with_p90: bool = False) -> list[str]:
        """One line per operation, in milliseconds."""
        lines = []
        for op, fig in self.figures().items():
            line = (
                f"{op:<28} n={fig.rounds:<4} direct {fig.direct_median * 1e3:6.2f}"
                f"  {self.measured} {fig.measured_median * 1e3:6.2f}"
            )
            if with_p90:
                line += (
                    f"  overhead median {fig.overhead_median * 1e3:+6.2f}"
                    f"  p90 {fig.overhead_p90 * 1e3:+6.2f}"
                )
            else:
                line += (
                    f"  overhead (median of paired differences) {fig.overhead_median * 1e3:+6.2f}"
                )
            lines.append(line)
        return lines
