"""braid._native's helper threads start as jobs need them: a process that hands over one job
at a time (``braid-thin``'s one durable write per ADD) starts one helper, not the whole pool."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, os, sys
from braid._native import delegate

def helpers():
    names = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/comm") as comm:
            names.append(comm.read().strip())
    return sorted(n for n in names if n.startswith("braid-helper-"))

before = helpers()
for n in range(3):  # one after another, as a call's writes are
    target = os.path.join(sys.argv[1], f"r{n}.json")
    delegate.start_durable_write(data=b"{}", target=target, tmp=target + ".tmp").wait()
one_at_a_time = helpers()
pending = [
    delegate.start_durable_write(
        data=b"{}", target=os.path.join(sys.argv[1], f"s{n}.json"),
        tmp=os.path.join(sys.argv[1], f"s{n}.tmp"),
    )
    for n in range(8)
]
for write in pending:
    write.wait()
print(json.dumps([before, one_at_a_time, helpers(), sorted(os.listdir(sys.argv[1]))]))
"""


def test_helpers_start_as_jobs_need_them(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)],
        capture_output=True,
        check=True,
        timeout=60,
        text=True,
    )
    before, one_at_a_time, after, files = json.loads(done.stdout)
    assert before == []
    assert one_at_a_time == ["braid-helper-0"]
    # Eight at once: more helpers, never more than the pool's four.
    assert 1 <= len(after) <= 4
    assert after == [f"braid-helper-{n}" for n in range(len(after))]
    assert files == sorted([f"r{n}.json" for n in range(3)] + [f"s{n}.json" for n in range(8)])
