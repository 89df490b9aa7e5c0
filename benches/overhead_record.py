"""Timings of the runtime-overhead benchmarks, paired as (direct, runtime) per operation.

The paired benchmark times both sides in the same round, alternating which goes first, so
drift and noise from other load on the machine fall on both sides alike; the overhead is the
median of the per-round differences.

Every timed call starts after an untimed pause of random length, uniform over
`PHASE_SPREAD_SECONDS`. A plugin's own duration is made of kernel waits that end on the
kernel's tick (RCU grace periods behind a veth's deletion, timers; 4 ms apart here), so a call
started at a fixed offset after the one before it, as back-to-back calls are, finds the tick at
the same phase every round, and a side whose own work shifts that phase by a millisecond gets
the plugin's duration systematically longer or shorter by up to a tick. Runtimes' calls arrive
at any phase; so do these. Measured with bridge, back to back, 300 rounds: braid's DEL came out
-0.3 ms with no extra network and +3.6 to +4.6 ms with one; the same rounds with the pause gave
+1.3 to +1.8 ms and -1.1 to +0.8 ms (docs/performance.md, "Why the calls start at a random phase").
"""

from __future__ import annotations

import os
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

# 20 ms: a whole number of ticks at HZ 100, 250, 300 and 1000 (`BRAID_PHASE_SPREAD_MS`; 0 turns
# the pause off, which reproduces the back-to-back figures).
PHASE_SPREAD_SECONDS = float(os.environ.get("BRAID_PHASE_SPREAD_MS", "20")) / 1e3


class Pod(Protocol):
    """A pod of the thick-mode benchmarks, attached directly or through braid."""

    extra: int

    def add(self) -> object: ...

    def delete(self) -> None: ...


@dataclass
class OverheadRecord:
    """Paired samples; `measured` names the side compared with "direct"."""

    measured: str = "runtime"
    samples: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    spread: float = PHASE_SPREAD_SECONDS
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
        """One ADD and one DEL on each side, in the order given; `direct.extra` names them."""
        sides = [("direct", direct), (self.measured, measured)]
        if measured_first:
            sides.reverse()
        label = f"+{direct.extra} extra network(s)"
        for side, pod in sides:
            self.timed(f"ADD {label}", side, pod.add)
            self.timed(f"DEL {label}", side, pod.delete)

    def summary_lines(self) -> list[str]:
        lines = []
        for op in sorted({op for op, _ in self.samples}):
            direct = self.samples.get((op, "direct"), [])
            runtime = self.samples.get((op, self.measured), [])
            if not direct or len(direct) != len(runtime):
                continue
            paired = statistics.median(r - d for d, r in zip(direct, runtime, strict=True))
            lines.append(
                f"{op:<24} n={len(direct):<4} direct {statistics.median(direct) * 1e3:6.2f}"
                f"  {self.measured} {statistics.median(runtime) * 1e3:6.2f}"
                f"  overhead (median of paired differences) {paired * 1e3:+6.2f}"
            )
        return lines


OVERHEAD = OverheadRecord()
# Thick mode: the shim and the daemon against the same delegates run directly.
THICK_OVERHEAD = OverheadRecord(measured="braid")
# Thick mode end to end with stand-in delegates (test_bench_thick_standin.py).
THICK_STANDIN = OverheadRecord(measured="braid")
# Thin mode: `braid-thin` against the same delegates run directly (test_bench_thin_overhead.py).
THIN_OVERHEAD = OverheadRecord(measured="braid-thin")
# Single figures of the thick-mode benchmarks (memory, throughput), printed as they are.
THICK_FIGURES: dict[str, str] = {}
