"""``make bench-scale``: one braid daemon as the cluster around its node grows (docs/scale.md).

One etcd and kube-apiserver (the cluster tier's, tests/cluster/apiserver.py, with deploy/base
and its admission policy applied), one ``braidctl daemon`` of node-a (``scale_daemon``) with a
pod of its own naming a NAD, and, in steps, pods bound to other nodes, NADs and ResourceClaims
created through the API (``scale_grow``). At each step: the daemon's resident memory and
threads once settled, the API server's, the daemon's connections to it, what its caches hold,
and the API requests of one warm ADD and DEL of its pod (``apiserver_request_total``). At the
largest size the API server is restarted under the daemon: the time until the daemon's
watches are open again, the peaks of both processes meanwhile, and the requests made for
braid's resources (``apiserver_request_total`` names no client: the API server's own informers
are counted too, e.g. its LIST of every pod, in pages of 500, as it starts).

    .venv/bin/python benches/scale/scale_run.py --steps full --restart --out /tmp/scale
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from scale_daemon import NETWORKS, NODE, ScaleDaemon, apiserver  # noqa: I001 - sets the path
import cluster_manifests
import kubernetes.client
from scale_grow import Grower, Size
from scale_probe import (
    PeakSampler,
    braid_requests,
    connections,
    open_watches,
    request_counts,
    rss_threads,
    settled_rss,
)
from scale_report import in_workdir, plot, print_table, write_report

STEPS = {
    "smoke": (Size(0, 0, 0), Size(2000, 200, 1000)),
    "full": (Size(0, 0, 0), Size(5000, 500, 2000), Size(20000, 2000, 10000),
             Size(60000, 5000, 30000), Size(150000, 10000, 100000)),
}  # fmt: skip
OWN_NS = "braid-own"
WATCHED = ("pods", "network-attachment-definitions", "resourceslices")
MIB = 1 << 20


class Bench:
    """The run's API server, daemon and grower; ``close`` stops them."""

    def __init__(self, workdir: Path, *, watch_seconds: int = 300) -> None:
        (workdir / "kube").mkdir(parents=True)
        self.server = apiserver.start(workdir / "kube")
        try:
            with self.server.api_client() as admin:
                cluster_manifests.apply_base(admin)
                self.uid = own_pod(admin)
            url, token, ca = self.server.url, self.server.token("admin"), str(self.server.ca_file)
            self.grower = Grower(url, token, ca)
            self.grower.namespaces()
            self.daemon = ScaleDaemon(self.server, workdir / "daemon", watch_seconds=watch_seconds)
        except BaseException:
            self.server.stop()
            raise
        self.adds = 0

    def counts(self) -> Any:
        return request_counts(self.server.url, self.server.token("admin"), str(self.server.ca_file))

    @property
    def apiserver_pid(self) -> int:
        return self.server.processes[-1].pid

    def cache(self, what: str, cache: str) -> int:
        return int(self.daemon.metric(f'braid_daemon_cache_{what}{{cache="{cache}"}}'))

    def measure(self, size: Size, grow_seconds: float) -> dict[str, Any]:
        rss, threads = settled_rss(self.daemon.pid)
        row: dict[str, Any] = {
            "pods": size.pods, "nads": size.nads, "claims": size.claims,
            "grow_seconds": round(grow_seconds, 1),
            "daemon_rss_mib": round(rss / MIB, 1), "daemon_threads": threads,
            "apiserver_rss_mib": round(rss_threads(self.apiserver_pid)[0] / MIB),
            "connections": connections(self.daemon.pid, self.server.port),
            "cached_nads": self.cache("objects", "nads"),
            "cached_claims": self.cache("objects", "claims"),
            "nad_live_reads": self.cache("live_reads_total", "nads"),
        }  # fmt: skip
        row["warm_add_del_requests"] = self.add_del()
        return row

    def add_del(self) -> dict[str, int]:
        """The API requests of one ADD and DEL of the node's pod, caches warm."""
        self.adds += 1
        before = self.counts()
        self.daemon.call("ADD", OWN_NS, "own", self.uid, f"c{self.adds}")
        self.daemon.call("DEL", OWN_NS, "own", self.uid, f"c{self.adds}")
        time.sleep(2)  # the status write and events are in the background
        return braid_requests(before, self.counts())

    def restart(self) -> dict[str, Any]:
        """The API server restarted under the daemon: the re-sync's time, peaks, requests."""
        daemon = PeakSampler({"daemon": self.daemon.pid}).start()
        steady = rss_threads(self.apiserver_pid)[0]
        started = time.monotonic()
        self.server.stop_apiserver()
        self.server.start_apiserver()
        back = time.monotonic()  # the API server ready again (/readyz)
        server = PeakSampler({"apiserver": self.apiserver_pid}).start()
        token, ca = self.server.token("admin"), str(self.server.ca_file)
        while set(open_watches(self.server.url, token, ca)) < set(WATCHED):
            if time.monotonic() - started > 300:
                raise RuntimeError(f"no re-sync after 300 s: {self.daemon.log_tail()}")
            time.sleep(0.5)
        took = time.monotonic() - started
        time.sleep(5)
        daemon.stop()
        server.stop()
        return {
            "resync_seconds": round(took, 1),
            "apiserver_back_seconds": round(back - started, 1),
            "daemon_peak_rss_mib": round(daemon.peak_rss["daemon"] / MIB, 1),
            "daemon_peak_threads": daemon.peak_threads["daemon"],
            "apiserver_steady_rss_mib": round(steady / MIB),
            "apiserver_peak_rss_mib": round(server.peak_rss["apiserver"] / MIB),
            "requests": braid_requests(type(self.counts())(), self.counts()),
            "daemon_running": self.daemon.proc is not None and self.daemon.proc.poll() is None,
        }

    def close(self) -> None:
        self.daemon.stop()
        self.grower.close()
        self.server.stop()


def own_pod(admin: kubernetes.client.ApiClient) -> str:
    """The daemon's node's pod, naming the NAD ``own-net`` (a fake delegate); its UID."""
    core = kubernetes.client.CoreV1Api(admin)
    core.create_namespace({"metadata": {"name": OWN_NS}})
    config = json.dumps({"cniVersion": "1.0.0", "name": "own-net", "type": "fakesec"})
    nad = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
           "metadata": {"name": "own-net"}, "spec": {"config": config}}  # fmt: skip
    kubernetes.client.CustomObjectsApi(admin).create_namespaced_custom_object(
        "k8s.cni.cncf.io", "v1", OWN_NS, "network-attachment-definitions", nad
    )
    pod = {"metadata": {"name": "own", "annotations": {NETWORKS: "own-net"}},
           "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "app"}]}}  # fmt: skip
    return str(core.create_namespaced_pod(OWN_NS, pod).metadata.uid)


def run(workdir: Path, sizes: tuple[Size, ...], *, restart: bool) -> dict[str, Any]:
    """The whole measurement; its report."""
    bench = Bench(workdir)
    try:
        bench.daemon.start()
        report: dict[str, Any] = {"ready_seconds": round(bench.daemon.wait_ready(), 1)}
        report["start_requests"] = braid_requests(type(bench.counts())(), bench.counts())
        steps, before = [], Size(0, 0, 0)
        for size in sizes:
            took = bench.grower.grow(before, size)
            before = size
            steps.append(bench.measure(size, took))
            print(f"measured {size.label()}: {steps[-1]}", flush=True)
        report["steps"] = steps
        if restart:
            report["restart"] = bench.restart()
        return report
    finally:
        bench.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", choices=sorted(STEPS), default="full")
    parser.add_argument("--restart", action="store_true", help="restart the API server at the end")
    parser.add_argument("--out", type=Path, help="where scale.json (and scale.png) go")
    args = parser.parse_args(argv)
    steps = STEPS[args.steps]
    report = in_workdir("braid-scale-", lambda workdir: run(workdir, steps, restart=args.restart))
    print_table(report)
    write_report(report, args.out, "scale.json")
    if args.out is not None:
        plot(report, args.out / "scale.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
