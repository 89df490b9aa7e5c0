"""Timings of the runtime-overhead benchmarks, paired as (direct, runtime) per operation.

The paired benchmark times both sides in the same round, alternating which goes first, so
drift and noise from other load on the machine fall on both sides alike; the overhead is the
median of the per-round differences.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


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

    def add(self, operation: str, side: str, seconds: float) -> None:
        self.samples.setdefault((operation, side), []).append(seconds)

    def timed(self, operation: str, side: str, target: Callable[[], object]) -> None:
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
# Single figures of the thick-mode benchmarks (memory, throughput), printed as they are.
THICK_FIGURES: dict[str, str] = {}
