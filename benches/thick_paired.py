"""The paired rounds of the thick-mode end-to-end benchmarks (bridge + host-local in
`test_bench_thick_overhead.py`, the stand-in in `test_bench_thick_standin.py`): a pod attached
and detached directly (`braid.bench.direct`) and through the shim (`braid.bench.braid_side`)
in each round, the order alternating, every call timed into an `OverheadRecord` whose summary
is the median of the per-round differences.
"""

from __future__ import annotations

import uuid
from typing import Any

from braid.bench.braid_side import BraidPod
from braid.bench.direct import DirectPod
from braid.bench.paired import OverheadRecord
from thick_world import ThickNode, records_left


def paired_benchmark(
    benchmark: Any, record: OverheadRecord, node: ThickNode, extra: int, rounds: int
) -> None:
    """`rounds` paired rounds after one untimed (page cache, the plugins' VERSION); every
    record is gone after."""
    suffix = uuid.uuid4().hex[:8]
    direct = DirectPod(node.world, extra, f"direct-{suffix}", node.pod_ns)
    braid = BraidPod(node.world, node.shim, extra, f"braid-{suffix}", node.pod_ns)
    record.paired_round(direct, braid, measured_first=False)  # warm-up
    record.forget(f"+{extra} extra network(s)")
    turns = iter(range(1 << 30))
    benchmark.pedantic(
        lambda: record.paired_round(direct, braid, measured_first=next(turns) % 2 == 1),
        rounds=rounds,
    )
    assert records_left(node.world) == []
    if not benchmark.enabled:
        record.samples.clear()  # one untimed run says nothing
