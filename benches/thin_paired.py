"""The thin-mode benchmark's `braid-thin` (`test_bench_thin_overhead.py`); its paired rounds are
`braid.bench.rounds.Rounds`, the code of `braidctl bench`: one pod's VERSION, ADD, CHECK and
DEL through `braid-thin` (`braid.bench.braid_side.BraidPod`) and the same calls of its
delegates executed directly (`braid.bench.direct.DirectPod`), in the world of the thick-mode
benchmarks (`thick_world`: bridge + host-local, the cluster network and NADs from files).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def thin_path() -> Path:
    """`braid-thin` as installed beside the running interpreter (`BRAID_THIN` names another,
    for instance one installed from the wheel into a virtualenv of its own)."""
    path = Path(os.environ.get("BRAID_THIN") or Path(sys.executable).parent / "braid-thin")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"no braid-thin executable at {path}")
    return path
