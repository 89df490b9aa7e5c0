"""``braidctl demo`` (the README's main command) works end to end through the shim and daemon."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import kernel_host_state

REPO = Path(__file__).resolve().parents[2]


def test_demo_attaches_three_networks_and_leaves_nothing() -> None:
    # In a fresh host of the test's own (empty /run and /var/lib); at the end it lists what
    # is left in its /var/lib (host-local's leases, records) and /run/netns.
    leftovers = ['"$@"; status=$?; echo @@left >&2; find /var/lib /run/netns -mindepth 1 >&2; '
                 'exit $status', "sh"]  # fmt: skip
    demo = [sys.executable, "-m", "braid.commands.braidctl", "demo", "--cni-path", "/usr/lib/cni"]
    done = subprocess.run(
        [*kernel_host_state.PRIVATE_HOST, "sh", "-c", *leftovers, *demo],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "braidctl daemon is serving" in out
    status_text = out.split("== k8s.v1.cni.cncf.io/network-status\n", 1)[1].split("\n==", 1)[0]
    status = json.loads(status_text)
    assert [s["name"] for s in status] == ["demo", "default/bridge-net", "default/macvlan-net"]
    assert [s["interface"] for s in status] == ["eth0", "net1", "mv0"]
    assert [s["default"] for s in status] == [True, False, False]
    assert status[2]["ips"] == ["10.89.2.10"]
    assert status[2]["mac"] == "02:42:0a:59:02:0a"
    assert re.search(r"mv0@\S+\s+UP\s+10\.89\.2\.10/24", out)
    after_del = out.split("== interfaces in the pod after DEL\n", 1)[1]
    assert "eth0" not in after_del.split("==", 1)[0]
    assert "files naming the container after DEL: none" in out
    assert done.stderr.endswith("@@left\n"), done.stderr
