"""Where a thick-mode call's overhead goes, seen from the kernel (``thick_timeline.py``): the
thick bench with one attachment under ``perf``, each delegate execution through braid and
directly split into its segments.

`make bench` runs `BRAID_TIMELINE_ROUNDS` rounds (40 by default) and prints the table;
`make test-bench-smoke` runs two rounds and checks the recording against the bench's own
figures. Needs root and `perf`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import pytest

from thick_timeline import CALL, SEGMENTS, record, report, timeline
from thick_world import CNI_BIN_DIR, gateway_bridge, shim_path

ROUNDS = int(os.environ.get("BRAID_TIMELINE_ROUNDS", "40"))
VERBS = ("ADD", "CHECK", "DEL")


def test_thick_timeline(benchmark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if os.geteuid() != 0:
        pytest.fail("the timeline needs root (network namespaces, perf's tracepoints)")
    conflist = gateway_bridge(tmp_path, "timeline", "btl0", "10.251.0.0/16")
    rounds = ROUNDS if benchmark.enabled else 2
    shim = shim_path().resolve()
    args = argparse.Namespace(
        conflist=conflist, cni_path=CNI_BIN_DIR, shim=shim, rounds=rounds, no_check=False
    )
    work = tmp_path / "work"
    work.mkdir()

    events, bench, figures = benchmark.pedantic(lambda: record(args, work), rounds=1, iterations=1)
    found = timeline(events, bench, str(shim), VERBS)

    assert found.counts() == {side: dict.fromkeys(VERBS, rounds) for side in ("direct", "braid")}
    medians = found.medians()
    for verb in VERBS:
        direct, braid = found.values["direct"][verb], found.values["braid"][verb]
        assert set(direct[SEGMENTS[0]]) == {0.0}, "the runtime forks the delegate itself"
        assert min(braid[SEGMENTS[0]]) > 0, "the shim and the daemon come first"
        assert all(value >= 0 for segment in SEGMENTS for value in braid[segment])
        # The same calls as the bench timed them itself: each side's call, fork to reaped,
        # agrees with the bench's own median (a call paired with the wrong verb would not).
        for side, key in (("direct", "direct_median_ms"), ("braid", "braid_median_ms")):
            own = figures["verbs"][verb][key]
            assert abs(medians[side][verb][CALL] - own) < max(1.0, own / 10), (side, verb)
    with capsys.disabled():
        print("\n" + "\n".join(report(medians, VERBS)))
