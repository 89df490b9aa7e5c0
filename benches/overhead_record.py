"""Timings of the runtime-overhead benchmarks, paired as (direct, runtime) per operation.

The paired benchmark times both sides in the same round, alternating which goes first, so
drift and noise from other load on the machine fall on both sides alike; the overhead is the
median of the per-round differences.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class OverheadRecord:
    """Paired samples; `measured` names the side compared with "direct"."""

    measured: str = "runtime"
    samples: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def add(self, operation: str, side: str, seconds: float) -> None:
        self.samples.setdefault((operation, side), []).append(seconds)

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
