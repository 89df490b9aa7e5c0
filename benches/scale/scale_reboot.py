"""A node reboot (docs/scale.md, "A node reboot"): one simulated node of ``scale_fleet`` whose
pods all come back at once, on the same driver (``scale_kubelet``) and cluster
(``scale_cluster``).

The node's default network is the reference ``bridge`` with ``host-local`` IPAM (a bridge and a
lease directory of the run's own); every pod also names ``real-net`` (``macvlan``, host-local
IPAM). Every pod has a network namespace of its own. The pods are created through the API,
bound to the node; once the watch saw them all, the runtime starts every sandbox at once: one
ADD per pod through the compiled shim, all in flight together (kubelet starts each pod on a
worker of its own and containerd does not bound parallel sandbox starts). The daemon runs at
its default concurrency and queue. Measured: failed ADDs with their errors, the daemon's peak
resident memory (sampled, and ``VmHWM``), every pod's network-status in the API and its
interfaces in its namespace, the time from the first ADD to the last answer and to the last
status; then a DEL of every pod at once, and what is left: links in the namespaces or on the
bridge, leases (the bridge's and real-net's), attachment records, namespaces.

    .venv/bin/python benches/scale/scale_reboot.py --pods 250 --out /tmp/reboot
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from scale_nodes import BraidNode, bound_token, free_port  # noqa: I001 - sets the path
from scale_cluster import Fleet, Plan
from scale_fleet import wait_in_sync
from scale_kubelet import STATUS, Kubelet, Pod, add_netns, netns_links, remove_netns
from scale_probe import PeakSampler
from scale_report import in_workdir, write_report

MIB = 1 << 20
PREFIX = f"bsr{os.getpid() % 100000}"  # the run's namespaces and bridge
NETWORKS = "real-net"  # the cluster's macvlan NAD
INTERFACES = {"eth0", "net1"}
LEASE_BOOKKEEPING = {"lock", "last_reserved_ip.0"}  # host-local's own files, not leases


def default_network(node: BraidNode) -> str:
    """The node's default network: bridge + host-local, in the node's directories; its name."""
    bridge = f"{PREFIX}br"
    ipam = {
        "type": "host-local",
        "dataDir": str(node.root / "ipam"),
        "ranges": [[{"subnet": "198.19.0.0/23"}]],
    }
    plugin = {"type": "bridge", "bridge": bridge, "ipam": ipam}
    conf = {"cniVersion": "1.0.0", "name": "reboot-default", "plugins": [plugin]}
    (node.root / "net.d" / "10-default.conflist").write_text(json.dumps(conf))
    return bridge


def start_node(fleet: Fleet, node: BraidNode) -> None:
    with fleet.server.api_client() as admin:
        token = bound_token(admin, "braid", "braid-system", node.name)
    node.start(fleet.server, token, free_port())
    wait_in_sync(fleet, [node], time.monotonic())


def vm_hwm(pid: int) -> int:
    """The process's peak resident size, from ``/proc/<pid>/status``, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def create(fleet: Fleet, pods: list[Pod]) -> None:
    """The pods through the API, then until the driver's watch saw every one."""
    assert fleet.api is not None
    api = fleet.api
    seen = [fleet.watch.expect(pod.name) for pod in pods]
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda pod: api.create_pod(pod, NETWORKS), pods))
    deadline = time.monotonic() + 120
    if not all(event.wait(max(0.0, deadline - time.monotonic())) for event in seen):
        raise RuntimeError("the watch did not see every pod in 120 s")


def burst(kubelet: Kubelet, verb: str, pods: list[Pod]) -> tuple[float, list[str]]:
    """``verb`` for every pod at once; the seconds to the last answer, and the failures."""
    started = time.monotonic()

    def one(pod: Pod) -> str:
        code, doc = kubelet.call(verb, pod)
        return "" if code == 0 else f"{pod.name}: {verb} exit {code}: {json.dumps(doc)[:400]}"

    with ThreadPoolExecutor(len(pods)) as pool:
        failures = [f for f in pool.map(one, pods) if f]
    return time.monotonic() - started, failures


def wait_statuses(fleet: Fleet, pods: list[Pod], started: float) -> float | None:
    """The seconds from ``started`` to the last pod's network-status seen by the watch."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        times = [fleet.watch.status_at.get(pod.name) for pod in pods]
        if all(t is not None for t in times):
            return max(t for t in times if t is not None) - started
        time.sleep(0.1)
    return None


def attached(fleet: Fleet, pod: Pod) -> str:
    """'' when the pod's status in the API and its namespace both show eth0 and net1."""
    assert fleet.api is not None
    meta = fleet.api.request("GET", f"/api/v1/namespaces/scale-pods/pods/{pod.name}")["metadata"]
    status = json.loads((meta.get("annotations") or {}).get(STATUS, "[]"))
    named = {entry.get("interface") for entry in status if entry.get("ips")}
    links = set(netns_links(pod.netns.rsplit("/", 1)[1]))
    if named != INTERFACES or links != INTERFACES:
        return f"{pod.name}: status {sorted(map(str, named))}, namespace {sorted(links)}"
    return ""


def leftovers(fleet: Fleet, node: BraidNode, bridge: str, pods: list[Pod]) -> dict[str, int]:
    """What is left once every DEL answered and every pod was deleted through the API."""
    in_netns = sum(len(netns_links(pod.netns.rsplit("/", 1)[1])) for pod in pods)
    shown = subprocess.run(  # the bridge stays: bridge's DEL removes only the pod's veth
        ["ip", "-j", "link", "show", "master", bridge], capture_output=True, check=True
    )
    ports = len(json.loads(shown.stdout or b"[]"))
    leases = [
        p
        for p in (node.root / "ipam").rglob("*")
        if p.is_file() and p.name not in LEASE_BOOKKEEPING
    ]
    return {
        "links_in_namespaces": in_netns,
        "bridge_ports": ports,
        "host_local_leases": len(leases) + fleet.leases_held(),  # bridge's and real-net's
        "attachment_records": len(node.records()),
    }


def measure(fleet: Fleet, node: BraidNode, pods: list[Pod], bridge: str) -> dict[str, Any]:
    kubelet = Kubelet(node, fleet.shared)
    create(fleet, pods)
    sampler = PeakSampler({"daemon": node.pid}).start()
    started = time.monotonic()
    add_seconds, add_failures = burst(kubelet, "ADD", pods)
    status_seconds = wait_statuses(fleet, pods, started)
    sampler.stop()
    with ThreadPoolExecutor(16) as pool:
        unattached = [p for p in pool.map(lambda pod: attached(fleet, pod), pods) if p]
    del_seconds, del_failures = burst(kubelet, "DEL", pods)
    assert fleet.api is not None
    api = fleet.api
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(api.delete_pod, pods))
    time.sleep(2)
    return {
        "pods": len(pods),
        "parallel_calls": len(pods),
        "add_failures": len(add_failures),
        "add_errors": add_failures[:5],
        "first_add_to_last_answer_seconds": round(add_seconds, 2),
        "first_add_to_last_status_seconds": None
        if status_seconds is None
        else round(status_seconds, 2),
        "daemon_peak_rss_mib": round(sampler.peak_rss["daemon"] / MIB, 1),
        "daemon_vm_hwm_mib": round(vm_hwm(node.pid) / MIB, 1),
        "daemon_peak_threads": sampler.peak_threads["daemon"],
        "attached": len(pods) - len(unattached),
        "unattached": unattached[:5],
        "del_failures": len(del_failures),
        "del_errors": del_failures[:5],
        "del_seconds": round(del_seconds, 2),
        "left": leftovers(fleet, node, bridge, pods),
        "load_average": [round(n, 2) for n in os.getloadavg()],
    }


def run(workdir: Path, count: int) -> dict[str, Any]:
    """The whole scenario with ``count`` pods; its report. Everything it made is removed."""
    fleet = Fleet(workdir, Plan(nodes=1, kinds=("braid",), restart=False))
    node, pods, bridge = BraidNode(workdir / "reboot", "reboot-0"), [], ""
    try:
        bridge = default_network(node)
        start_node(fleet, node)
        for n in range(count):
            pod = Pod(f"reboot-{n}", node.name, real=True)
            pod.netns = add_netns(f"{PREFIX}-{n}")
            pods.append(pod)
        report = measure(fleet, node, pods, bridge)
        for pod in pods:
            remove_netns(pod.netns.rsplit("/", 1)[1])
        report["left"]["namespaces"] = sum(1 for p in Path("/run/netns").glob(f"{PREFIX}-*"))
        report["log_tail"] = node.log_tail(5).splitlines()
        return report
    finally:
        node.stop()
        for pod in pods:
            remove_netns(pod.netns.rsplit("/", 1)[1])
        if bridge:
            subprocess.run(["ip", "link", "del", bridge], check=False, capture_output=True)
        fleet.close()


def print_reboot(report: dict[str, Any]) -> None:
    left = ", ".join(f"{k} {v}" for k, v in report["left"].items())
    print(
        "| pods at once | failed ADDs | attached | first ADD to last answer, s"
        " | to last status, s | daemon peak RSS MiB (VmHWM) | DEL all, s | left |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {report['pods']} | {report['add_failures']} | {report['attached']}"
        f" | {report['first_add_to_last_answer_seconds']}"
        f" | {report['first_add_to_last_status_seconds']}"
        f" | {report['daemon_peak_rss_mib']} ({report['daemon_vm_hwm_mib']})"
        f" | {report['del_seconds']} | {left} |"
    )
    print(f"load average after: {report['load_average']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=250)
    parser.add_argument("--out", type=Path, help="where reboot.json goes")
    args = parser.parse_args(argv)
    report = in_workdir("braid-reboot-", lambda workdir: run(workdir, args.pods))
    print_reboot(report)
    write_report(report, args.out, "reboot.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
