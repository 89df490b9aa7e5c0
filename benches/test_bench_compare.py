"""braid-thin, braid thick (the shim and the daemon) and Multus thin against the same delegates
run directly, in the same rounds, for pods of 1 and 3 attachments, with the delegates run again
as the noise floor: `braidctl bench --mode compare` run as docs/performance.md runs it, on a
bridge + host-local network of Debian's reference plugins.

`make bench` runs `BRAID_COMPARE_ROUNDS` rounds (40 by default) and prints the command's table at
the end; `make test-bench-smoke` runs one round, untimed, and checks that every side answered
every verb for both pod sizes. Multus thin is `make multus-bin`'s (`BRAID_MULTUS` names another);
the shim is `make shim`'s (`BRAID_SHIM`). Needs root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from overhead_record import COMPARE_TABLE
from thick_world import CNI_BIN_DIR, ROOT, gateway_bridge, shim_path
from thin_paired import thin_path

ROUNDS = int(os.environ.get("BRAID_COMPARE_ROUNDS", "40"))
SIDES = {"thin", "thick", "multus", "floor"}
VERBS = {"VERSION", "ADD", "CHECK", "DEL"}


def multus_path() -> Path:
    path = Path(os.environ.get("BRAID_MULTUS") or ROOT / ".cache" / "multus" / "bin" / "multus")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no Multus thin at {path}: `make multus-bin` builds it")
    return path


def compare_command(conflist: Path, rounds: int, spread_ms: str) -> list[str]:
    braidctl = Path(sys.executable).parent / "braidctl"
    return [
        *(str(braidctl), "bench", "--mode", "compare", "--conflist", str(conflist)),
        *("--cni-path", CNI_BIN_DIR, "--extra-networks", "0,2", "--rounds", str(rounds)),
        *("--shim", str(shim_path()), "--thin", str(thin_path())),
        *("--multus", str(multus_path()), "--phase-spread-ms", spread_ms, "-q"),
    ]


def test_compare_thin_thick_and_multus(benchmark: Any, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("the comparison needs root (network namespaces)")
    conflist = gateway_bridge(tmp_path, "compare", "bcmp0", "10.250.0.0/16")
    rounds = ROUNDS if benchmark.enabled else 1
    spread = os.environ.get("BRAID_PHASE_SPREAD_MS", "20")
    out = tmp_path / "compare.json"
    command = [*compare_command(conflist, rounds, spread), "--json", str(out)]

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=3600)

    done = benchmark.pedantic(run, rounds=1, iterations=1)
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert set(doc["compare"]) == {"1", "3"}
    for size in doc["compare"].values():
        assert set(size) == {"direct", *SIDES}
        for side in SIDES:
            assert set(size[side]) == VERBS
            assert all(f["median_ms"] > 0 for f in size[side].values())
    if benchmark.enabled:
        COMPARE_TABLE[:] = done.stdout.splitlines()
