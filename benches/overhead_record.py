"""The benchmarks' paired samples, one `braid.bench.paired.OverheadRecord` per group, printed at
the end of the run (`conftest.py`). The records, the random pause before every timed call and
why it is there are `braid.bench.paired`'s, shared with `braidctl bench`.

`BRAID_PHASE_SPREAD_MS` sets the pause (20 ms by default; 0 runs the calls back to back, which
reproduces the back-to-back figures of docs/performance.md).
"""

from __future__ import annotations

import os

from braid.bench.paired import OverheadRecord

PHASE_SPREAD_SECONDS = float(os.environ.get("BRAID_PHASE_SPREAD_MS", "20")) / 1e3

# The runtime library against its delegates run directly (test_bench_runtime_overhead.py).
OVERHEAD = OverheadRecord(measured="runtime", spread=PHASE_SPREAD_SECONDS)
# Thick mode: the shim and the daemon against the same delegates run directly.
THICK_OVERHEAD = OverheadRecord(measured="braid", spread=PHASE_SPREAD_SECONDS)
# Thick mode end to end with stand-in delegates (test_bench_thick_standin.py).
THICK_STANDIN = OverheadRecord(measured="braid", spread=PHASE_SPREAD_SECONDS)
# Thin mode: `braid-thin` against the same delegates run directly (test_bench_thin_overhead.py).
THIN_OVERHEAD = OverheadRecord(measured="braid-thin", spread=PHASE_SPREAD_SECONDS)
# Single figures of the thick-mode benchmarks (memory, throughput), printed as they are.
THICK_FIGURES: dict[str, str] = {}
# `braidctl bench --mode compare`'s table (test_bench_compare.py), printed as it is.
COMPARE_TABLE: list[str] = []
