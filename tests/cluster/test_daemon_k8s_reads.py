"""A real `braidctl daemon` process with a kubeconfig for braid's identity, through the fault
proxy to the real API server, driven over its socket with protocol v1: ADDs read the pod's
annotations and the NADs from the daemon's watch caches (no GET once they have listed), publish
one status PATCH each and emit `AddedInterface`; a NAD created a moment before the ADD is read
live; a missing NAD is a failed ADD and a `NoNetworkFound` event.

The harness (`K8sDaemon`, the `k8s_daemon` fixture) is shared with test_daemon_k8s_outages.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faultproxy
import kubernetes.client
import pytest
from faultproxy import where
from k8s_engine import (
    NODE,
    STATUS_KEY,
    Node,
    create_nad,
    create_pod,
    events,
    http_get,
    node,
    read_pod,
)
from test_k8s_status import wait_until

from braid.daemon.client import call_cni, is_ready

__all__ = ["K8sDaemon", "k8s_daemon", "node"]  # the fixtures, and the harness for outages
NETWORKS_KEY = "k8s.v1.cni.cncf.io/networks"
PATCH_STATUS = where(method="PATCH", path="/status")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class K8sDaemon:
    """One daemon process for `node`; its configuration is the node's braid configuration."""

    node: Node
    root: Path
    metrics_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def socket(self) -> Path:
        return self.root / "run" / "braid.sock"

    @property
    def log_path(self) -> Path:
        return self.root / "daemon.log"

    def conf(self, **extra: Any) -> dict[str, Any]:
        """The node's configuration with the cluster network by path (no NAD lookup for it)."""
        cluster = str(self.node.root / "net.d" / "kcluster.conflist")
        return self.node.conf(clusterNetwork=cluster, logLevel="verbose", **extra)

    def start(self, *flags: str, with_config: bool = True, **conf: Any) -> K8sDaemon:
        """Starts the daemon (with `flags`; with the node's configuration as the operator's
        unless `with_config` is false); returns once it answers (ready or not)."""
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "braid.conf"
        config.write_text(json.dumps(self.conf(**conf)))
        given = ("--config", str(config)) if with_config else ()
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    *(sys.executable, "-m", "braid.commands.daemon", *given),
                    *("--socket-dir", str(self.socket.parent), "--node-name", NODE),
                    *("--metrics-address", f"127.0.0.1:{self.metrics_port}"),
                    *("--health-address", "127.0.0.1:0"),  # in the host's namespace
                    # Short watches: the proxy's stop waits for the streams it forwards to end.
                    *("--watch-seconds", "3"),
                    # No admission check unless a test asks (its dry run is a PATCH of its own).
                    *("--admission-check-seconds", "0"),
                    *flags,
                ],
                stderr=log,
            )
        assert wait_until(self._answers), f"the daemon did not answer: {self.log_text()}"
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        assert self.proc.poll() is None, f"the daemon exited: {self.log_text()}"
        try:
            call_cni(self.socket, {"CNI_COMMAND": "VERSION"}, b"", timeout=2)
        except OSError:
            return False
        return True

    def ready(self) -> bool:
        return is_ready(self.socket)

    def call(
        self,
        command: str,
        *,
        namespace: str,
        pod: str,
        uid: str = "",
        container_id: str = "ctr1",
        runtime_annotations: dict[str, str] | None = None,
        **conf: Any,
    ) -> tuple[dict[str, Any], int]:
        """One CNI call through the daemon; (stdout document or {}, exit status)."""
        args = f"K8S_POD_NAMESPACE={namespace};K8S_POD_NAME={pod}"
        if uid:
            args += f";K8S_POD_UID={uid}"
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": container_id,
               "CNI_NETNS": self.node.netns, "CNI_IFNAME": "eth0", "CNI_PATH": "",
               "CNI_ARGS": args}  # fmt: skip
        if runtime_annotations is not None:
            conf["runtimeConfig"] = {"io.kubernetes.cri.pod-annotations": runtime_annotations}
        out, code = call_cni(self.socket, env, json.dumps(self.conf(**conf)).encode())
        return (json.loads(out) if out.strip() else {}), code

    def http(self, path: str) -> tuple[int, str]:
        return http_get(f"127.0.0.1:{self.metrics_port}", path)

    def metric(self, sample: str) -> float:
        """The value of one sample (`name{labels}` as exposed), 0 when absent."""
        for line in self.http("/metrics")[1].splitlines():
            name, _, value = line.rpartition(" ")
            if name == sample:
                return float(value)
        return 0.0

    def terminate(self, timeout: float = 30) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def log_text(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def log_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log_text().splitlines() if line.strip()]


@pytest.fixture
def k8s_daemon(node: Node, tmp_path: Path) -> Iterator[K8sDaemon]:
    daemon = K8sDaemon(node, tmp_path / "daemon")
    try:
        yield daemon
    finally:
        if daemon.proc is not None and daemon.proc.poll() is None:
            assert daemon.terminate() == 0, daemon.log_text()


def test_adds_read_the_caches_publish_once_and_emit_events(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    create_nad(kube_admin, ns, "blue")
    uids = [create_pod(kube_admin, ns, f"web-{i}", {NETWORKS_KEY: "blue"}) for i in range(2)]
    k8s_daemon.start()
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    assert k8s_daemon.http("/readyz") == (200, "ready\n")
    listed = len(fault_proxy.requests())

    for i, uid in enumerate(uids):
        result, code = k8s_daemon.call(
            "ADD", namespace=ns, pod=f"web-{i}", uid=uid, container_id=f"c{i}"
        )
        assert code == 0, result
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")] * 2
    # The pods' annotations and the NAD came from the caches: no GET of either.
    during = fault_proxy.requests()[listed:]
    assert [r for r in during if r.method == "GET" and f"/namespaces/{ns}/" in r.path] == []
    for i in range(2):
        patches = fault_proxy.requests(where(method="PATCH", path=f"/pods/web-{i}/status"))
        assert [r.status for r in patches] == [200]
        status = json.loads(read_pod(kube_admin, ns, f"web-{i}").metadata.annotations[STATUS_KEY])
        assert [s["name"] for s in status] == ["kcluster", f"{ns}/blue"]

    def added() -> set[tuple[str, str]]:
        return {(pod, msg.split()[1]) for reason, pod, msg in events(kube_admin, ns)
                if reason == "AddedInterface"}  # fmt: skip

    expected = {(f"web-{i}", ifname) for i in range(2) for ifname in ("eth0", "net1")}
    assert wait_until(lambda: added() == expected), events(kube_admin, ns)
    phase = 'braid_daemon_phase_seconds_count{phase="status_publish",plugin=""}'
    assert k8s_daemon.metric(phase) == 2.0
    assert k8s_daemon.metric('braid_daemon_status_writes_total{outcome="written"}') == 2.0
    assert k8s_daemon.metric('braid_daemon_status_writes_total{outcome="failed"}') == 0.0


def test_a_nad_created_a_moment_before_the_add_is_read_live(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    nad_watch = where(method="GET", path="network-attachment-definitions", watch=True)
    # The NAD cache has listed but its watch is held back: a new NAD is not in it yet.
    fault_proxy.delay(4, match=nad_watch, count=1)
    uid = create_pod(kube_admin, ns, "web")
    k8s_daemon.start()
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    create_nad(kube_admin, ns, "fresh")
    result, code = k8s_daemon.call(
        "ADD", namespace=ns, pod="web", uid=uid, runtime_annotations={NETWORKS_KEY: "fresh"}
    )
    assert code == 0, result
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")]
    live = fault_proxy.requests(where(method="GET", path="network-attachment-definitions/fresh"))
    assert [r.status for r in live] == [200]
    assert fault_proxy.wait_for(nad_watch), "the held-back watch never started"


def test_a_missing_nad_fails_the_add_and_reports_no_network_found(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    ns = kube_namespace
    uid = create_pod(kube_admin, ns, "web", {NETWORKS_KEY: "absent"})
    k8s_daemon.start()
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    result, code = k8s_daemon.call("ADD", namespace=ns, pod="web", uid=uid)
    assert code == 1
    assert f"{ns}/absent" in result["msg"]
    assert node.calls("ADD") == []
    assert not node.record_exists()
    message = f"cannot find a network-attachment-definition (absent) in namespace ({ns})"
    assert wait_until(lambda: ("NoNetworkFound", "web", message) in events(kube_admin, ns)), events(
        kube_admin, ns
    )


def test_readiness_waits_for_the_caches_at_most_the_bound(
    k8s_daemon: K8sDaemon,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    # Every NAD list fails: the cache never syncs, so readiness comes from the bound alone.
    nad_list = where(method="GET", path="network-attachment-definitions", watch=False)
    fault_proxy.respond(503, count=1000, match=nad_list)
    start = time.monotonic()
    k8s_daemon.start("--cache-sync-seconds", "3")
    assert not k8s_daemon.ready()
    assert k8s_daemon.http("/readyz")[0] == 503
    assert wait_until(k8s_daemon.ready, timeout=20)
    assert time.monotonic() - start >= 3.0
    messages = [line["msg"] for line in k8s_daemon.log_lines()]
    assert any("have not synced after 3 s" in m for m in messages), messages


def test_readiness_needs_the_caches_or_an_answering_api_server(
    k8s_daemon: K8sDaemon,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    # Nothing the daemon asks is answered: no list, no watch, no /version. Past the bound it
    # stays not ready (an ADD would fail), and turns ready once the API server answers.
    fault_proxy.respond(503, count=100000, match=where())
    k8s_daemon.start("--cache-sync-seconds", "1")
    time.sleep(4)
    assert not k8s_daemon.ready(), k8s_daemon.log_text()
    assert k8s_daemon.http("/readyz")[0] == 503
    messages = [line["msg"] for line in k8s_daemon.log_lines()]
    assert any("the API server does not answer; not ready" in m for m in messages), messages
    fault_proxy.clear()
    assert wait_until(k8s_daemon.ready, timeout=20), k8s_daemon.log_text()
    assert k8s_daemon.http("/readyz") == (200, "ready\n")
