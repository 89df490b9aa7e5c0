"""N simulated nodes against one API server, braid's daemons then Multus thick's, in one run
(docs/scale.md, "Many nodes, side by side with Multus thick").

The cluster is ``scale_cluster``'s. For each kind in turn, N nodes (``scale_nodes``) whose
daemons start at once, then: their memory, threads and connections at rest; the API requests
of pod lifecycles (ADD, CHECK, DEL) by verb and resource (``apiserver_request_total``; the
driver's own, its POSTs and DELETEs of pods and its one watch, left out); churn on every node
(``scale_churn``) with the daemons' peaks; the API server restarted under them during churn;
what is left once every pod is gone. With ``--grow``, both kinds' memory at rest as the cluster
grows.

    .venv/bin/python benches/scale/scale_fleet.py --nodes 4 --rate 2 --seconds 60 --out /tmp/f
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from scale_nodes import BraidNode, MultusNode, SimNode  # noqa: I001 - sets the path
from braid.daemon.client import is_ready
from scale_churn import Tally, churn, lifecycle
from scale_fleet_report import print_fleet
from scale_report import in_workdir, write_report
from scale_cluster import Fleet, Plan
from scale_grow import Grower, Size
from scale_kubelet import Kubelet
from scale_nodes import bound_token, free_port
from scale_probe import (
    CpuMeter,
    PeakSampler,
    braid_requests,
    connections,
    rss_threads,
    settled_rss,
)

MIB = 1 << 20
KINDS: dict[str, type[SimNode]] = {"braid": BraidNode, "multus": MultusNode}
ACCOUNTS = {"braid": ("braid", "braid-system"), "multus": ("multus", "kube-system")}


def start_nodes(fleet: Fleet, kind: str, phase: str = "") -> tuple[list[SimNode], dict[str, Any]]:
    """N daemons of ``kind`` started at once; the API server's load until all are in sync."""
    n, root = fleet.plan.nodes, fleet.workdir / f"{kind}{phase}"
    nodes = [KINDS[kind](root / f"sim-{i}", f"sim-{i}") for i in range(n)]
    account, namespace = ACCOUNTS[kind]
    with fleet.server.api_client() as admin:
        tokens = [bound_token(admin, account, namespace, node.name, phase) for node in nodes]
    before, sampler = fleet.counts(), PeakSampler({"apiserver": fleet.apiserver_pid}).start()
    started = time.monotonic()
    for node, token in zip(nodes, tokens, strict=True):
        node.start(fleet.server, token, free_port())
    wait_in_sync(fleet, nodes, started)
    took = time.monotonic() - started
    sampler.stop()
    requests = braid_requests(before, fleet.counts())
    return nodes, {
        "in_sync_seconds": round(took, 1),
        "apiserver_peak_rss_mib": round(sampler.peak_rss["apiserver"] / MIB),
        "requests": requests,
        "requests_per_second": round(sum(requests.values()) / took, 1),
    }


def wait_in_sync(fleet: Fleet, nodes: list[SimNode], started: float, limit: float = 300) -> None:
    """Until every daemon wrote its configuration, answers, and watches pods and NADs."""
    while True:
        dead = [node.name for node in nodes if not node.running()]
        if dead:
            raise RuntimeError(f"{dead} exited: {nodes[0].log_tail()}")
        watches = fleet.watches()
        ready = all(node.network_conf() is not None for node in nodes) and all(
            is_ready(node.root / "run" / "braid.sock") for node in nodes if node.kind == "braid"
        )
        if (
            ready
            and watches.get("pods", 0) > len(nodes)
            and watches.get("network-attachment-definitions", 0) >= len(nodes)
        ):
            return
        if time.monotonic() - started > limit:
            raise RuntimeError(f"not in sync after {limit:.0f} s: {watches}")
        time.sleep(0.25)


def at_rest(fleet: Fleet, nodes: list[SimNode]) -> dict[str, Any]:
    rows = []
    for node in nodes:
        rss, threads = settled_rss(node.pid, tries=5)
        rows.append(
            {
                "rss_mib": round(rss / MIB, 1),
                "threads": threads,
                "connections": connections(node.pid, fleet.server.port),
            }
        )
    return {"daemons": rows, "apiserver_rss_mib": round(rss_threads(fleet.apiserver_pid)[0] / MIB)}


def per_lifecycle(fleet: Fleet, kubelets: list[Kubelet], kind: str) -> dict[str, Any]:
    """The requests of ``lifecycles`` pods on each node, one at a time, divided by their count,
    caches warm (a pod of each NAD went first)."""
    assert fleet.api is not None
    warm = Tally()
    for kubelet in kubelets:
        for real in (False, True):
            lifecycle(
                fleet.api, fleet.watch, kubelet, warm, hold=0.5, prefix=f"{kind}-warm", real=real
            )
    time.sleep(2)
    tally, before = Tally(), fleet.counts()
    for kubelet in kubelets:
        for n in range(fleet.plan.lifecycles):
            lifecycle(
                fleet.api, fleet.watch, kubelet, tally, hold=0.5, prefix=f"{kind}-one", real=n == 0
            )
    time.sleep(3)  # a status write and events go in the background
    total = fleet.plan.lifecycles * len(kubelets)
    requests = braid_requests(before, fleet.counts())
    each = {k: round(v / total, 2) for k, v in requests.items() if not k.startswith("WATCH")}
    return {"requests": each, "tally": tally.summary(), "warm_up": warm.summary()}


def restart_under(
    fleet: Fleet, nodes: list[SimNode], kubelets: list[Kubelet], kind: str
) -> dict[str, Any]:
    """The API server restarted while churn goes on: re-sync time, peaks, failures."""
    api, plan, result = fleet.api, fleet.plan, []
    assert api is not None

    def drive() -> None:  # at most one pod a second a node: the API server is away a while
        rate = min(plan.rate, 1.0)
        prefix = f"{kind}-restart"
        result.append(churn(api, fleet.watch, kubelets, rate=rate, seconds=plan.restart_seconds,
                            hold=plan.hold, prefix=prefix))  # fmt: skip

    driver = threading.Thread(target=drive, name="restart-churn")
    daemons = PeakSampler({n.name: n.pid for n in nodes}).start()
    driver.start()
    time.sleep(5)
    steady = rss_threads(fleet.apiserver_pid)[0]
    started = time.monotonic()
    fleet.server.stop_apiserver()
    fleet.server.start_apiserver()
    back = time.monotonic() - started
    server = PeakSampler({"apiserver": fleet.apiserver_pid}).start()
    wait_in_sync(fleet, nodes, started, limit=120)
    resync = time.monotonic() - started
    driver.join()
    server.stop()
    daemons.stop()
    return {
        "apiserver_back_seconds": round(back, 1),
        "in_sync_seconds": round(resync, 1),
        "apiserver_steady_rss_mib": round(steady / MIB),
        "apiserver_peak_rss_mib": round(server.peak_rss["apiserver"] / MIB),
        "daemon_peak_rss_mib": round(max(daemons.peak_rss.values()) / MIB, 1),
        "daemons_running": all(node.running() for node in nodes),
        "churn": result[0].summary(),
    }


def cpu_by_role(spent: dict[str, float], nodes: list[SimNode]) -> dict[str, float]:
    """CPU seconds of churn: the daemons' (with the delegates they ran) added up, the others'
    as they are."""
    daemons = sum(spent.pop(node.name) for node in nodes)
    return {"daemons": round(daemons, 1), **spent}


def leftovers(nodes: list[SimNode]) -> int:
    """Attachment records left in the nodes' state directories once all pods are gone."""
    return sum(len(node.records()) for node in nodes)


def run_kind(fleet: Fleet, kind: str) -> dict[str, Any]:
    nodes, start = start_nodes(fleet, kind)
    try:
        kubelets = [Kubelet(node, fleet.shared) for node in nodes]
        report: dict[str, Any] = {"start": start, "rest": at_rest(fleet, nodes)}
        report["lifecycle"] = per_lifecycle(fleet, kubelets, kind)
        peaks = PeakSampler({n.name: n.pid for n in nodes}).start()
        cpu = CpuMeter({**{n.name: n.pid for n in nodes}, **fleet.server_pids()})
        assert fleet.api is not None
        tally = churn(
            fleet.api,
            fleet.watch,
            kubelets,
            rate=fleet.plan.rate,
            seconds=fleet.plan.seconds,
            hold=fleet.plan.hold,
            prefix=f"{kind}-churn",
        )
        peaks.stop()
        report["churn"] = {
            **tally.summary(),
            "load_average": [round(n, 2) for n in os.getloadavg()],
            "cpu_seconds": cpu_by_role(cpu.read(), nodes),
            "daemon_peak_rss_mib": round(max(peaks.peak_rss.values()) / MIB, 1),
            "daemon_peak_threads": max(peaks.peak_threads.values()),
        }
        if fleet.plan.restart:
            report["restart"] = restart_under(fleet, nodes, kubelets, kind)
        time.sleep(3)
        report["leftover_files"] = leftovers(nodes)
        report["leftover_leases"] = fleet.leases_held()  # host-local's, of the real-net pods
        if report["leftover_files"]:
            report["leftover_sample"] = [str(p) for p in nodes[0].records()[:5]]
        report["log_tail"] = nodes[0].log_tail(8).splitlines()
        return report
    finally:
        codes = [node.stop() for node in nodes]
        if any(code not in (0, None) for code in codes):
            print(f"{kind}: exit statuses {codes}: {nodes[0].log_tail()}", file=sys.stderr)


def growth(fleet: Fleet, size: Size) -> list[dict[str, Any]]:
    """Both kinds' daemons at rest on the same nodes at once, in an empty cluster, then once the
    cluster grew to ``size`` through the API (pods of other nodes, NADs, ResourceClaims)."""
    nodes = [node for kind in fleet.plan.kinds for node in start_nodes(fleet, kind, "-grow")[0]]
    grower = Grower(fleet.server.url, fleet.server.token("admin"), str(fleet.server.ca_file))
    rows = []
    try:
        grower.namespaces()
        for step in (Size(0, 0, 0), size):
            took = grower.grow(Size(0, 0, 0), step)
            row: dict[str, Any] = {"size": step.label(), "grow_seconds": round(took, 1)}
            for kind in fleet.plan.kinds:
                rss = [settled_rss(n.pid, tries=10)[0] for n in nodes if n.kind == kind]
                row[f"{kind}_rss_mib"] = round(max(rss) / MIB, 1)
            row["apiserver_rss_mib"] = round(rss_threads(fleet.apiserver_pid)[0] / MIB)
            rows.append(row)
    finally:
        grower.close()
        for node in nodes:
            node.stop()
    return rows


def run(workdir: Path, plan: Plan) -> dict[str, Any]:
    fleet = Fleet(workdir, plan)
    try:
        report: dict[str, Any] = {"plan": asdict(plan)}
        for kind in plan.kinds:
            report[kind] = run_kind(fleet, kind)
            print(f"{kind}: {json.dumps(report[kind])}", flush=True)
        if plan.grow is not None:
            report["growth"] = growth(fleet, plan.grow)
            print(f"growth: {json.dumps(report['growth'])}", flush=True)
        return report
    finally:
        fleet.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=Plan.nodes)
    parser.add_argument("--rate", type=float, default=Plan.rate, help="pods a second per node")
    parser.add_argument("--seconds", type=float, default=Plan.seconds, help="of churn")
    parser.add_argument("--kinds", default="braid,multus")
    parser.add_argument("--no-restart", action="store_true")
    parser.add_argument("--grow", help="PODS,NADS,CLAIMS: memory of both kinds at that size")
    parser.add_argument("--out", type=Path, help="where fleet.json goes")
    args = parser.parse_args(argv)
    grow = Size(*(int(n) for n in args.grow.split(","))) if args.grow else None
    plan = Plan(
        nodes=args.nodes,
        rate=args.rate,
        seconds=args.seconds,
        restart=not args.no_restart,
        grow=grow,
        kinds=tuple(args.kinds.split(",")),
    )
    report = in_workdir("braid-fleet-", lambda workdir: run(workdir, plan))
    print_fleet(report)
    write_report(report, args.out, "fleet.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
