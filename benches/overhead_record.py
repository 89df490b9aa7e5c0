"""Medians of the runtime-overhead benchmarks, paired as (direct, runtime) per operation."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class OverheadRecord:
    medians: dict[tuple[str, str], float] = field(default_factory=dict)

    def record(self, operation: str, side: str, median_seconds: float) -> None:
        self.medians[(operation, side)] = median_seconds

    def summary_lines(self) -> list[str]:
        ops = sorted({op for op, _ in self.medians})
        lines = []
        for op in ops:
            direct = self.medians.get((op, "direct"))
            runtime = self.medians.get((op, "runtime"))
            if direct is None or runtime is None:
                continue
            lines.append(
                f"{op:<28} direct {direct * 1e3:7.2f}  runtime {runtime * 1e3:7.2f}"
                f"  overhead {(runtime - direct) * 1e3:+7.2f}"
            )
        return lines


OVERHEAD = OverheadRecord()
