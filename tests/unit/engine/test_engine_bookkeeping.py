"""What the engine keeps on disk around its delegates: the attachment record (every result) and
its own locks under ``<cniDir>/engine``; no libcni result cache and no runtime lock files
beside them. DEL hands each delegate the record's result as ``prevResult``. (ADD and CHECK need
a pod namespace: the kernel tier checks them, test_engine_kernel_selection.py and
test_engine_kernel_maintenance.py, where bridge's CHECK refuses to run without a prevResult.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from braid.engine import run_cni

CLUSTER_LIST = {"cniVersion": "1.0.0", "name": "kcluster", "plugins": [{"type": "fakenet"}]}
SECONDARY = {"cniVersion": "1.0.0", "name": "net-a", "type": "fakesec"}


def result(ifname: str, address: str) -> dict[str, Any]:
    return {
        "cniVersion": "1.0.0",
        "interfaces": [{"name": ifname, "sandbox": "/run/netns/pod"}],
        "ips": [{"address": address, "interface": 0}],
    }


RESULTS = {"eth0": result("eth0", "10.0.0.7/24"), "net1": result("net1", "10.1.0.7/24")}


def write_record(dirs: Any) -> None:
    """A record as a successful ADD leaves it: every attachment added, with its result."""
    entries = [
        {
            "name": "kcluster" if position == 0 else "default/net-a",
            "networkName": "kcluster" if position == 0 else "net-a",
            "ifname": ifname,
            "config": json.dumps(CLUSTER_LIST if position == 0 else SECONDARY),
            "position": position,
            "isList": position == 0,
            "state": "added",
            "result": RESULTS[ifname],
        }
        for position, ifname in enumerate(RESULTS)
    ]
    record = {
        "containerId": "ctr1",
        "netns": "/run/netns/pod",
        "kind": "braidAttachmentRecord",
        "version": 1,
        "attachments": entries,
    }
    path = dirs.cni_dir / "records" / "ctr1.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(record))


def paths_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_del_takes_prev_result_from_the_record_and_leaves_only_the_engines_locks(
    dirs: Any,
) -> None:
    write_record(dirs)

    assert run_cni(dirs.env("DEL"), dirs.stdin()) == (b"", 0)

    dels = dirs.calls("DEL")
    assert [c["env"]["CNI_IFNAME"] for c in dels] == ["net1", "eth0"]
    assert [c["stdin"]["prevResult"] for c in dels] == [RESULTS["net1"], RESULTS["eth0"]]
    left = {p for p in paths_under(dirs.cni_dir) if not p.startswith("engine/locks/")}
    assert left == {"engine", "engine/locks", "records"}, "no results/ nor locks/ of the runtime"
