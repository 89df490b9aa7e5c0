"""Which store a request gets from a daemon connected to the API server: the daemon's caches
when its configuration names the daemon's kubeconfig, the file store when it has no Kubernetes
settings, and a client of its own (live reads, as braid-thin) when it names another kubeconfig."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import faultproxy
import kubernetes.client
from faultproxy import LoggedRequest, where
from k8s_engine import Node, create_nad, create_pod, node
from test_daemon_k8s_reads import NETWORKS_KEY, PATCH_STATUS, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

__all__ = ["k8s_daemon", "node"]  # the fixtures


def namespaced(proxy: faultproxy.FaultProxy, since: int, ns: str) -> list[LoggedRequest]:
    """The requests after the first `since` that name objects of namespace `ns`."""
    return [r for r in proxy.requests()[since:] if f"/namespaces/{ns}/" in r.path]


def test_a_request_without_kubernetes_settings_uses_the_file_store(
    k8s_daemon: K8sDaemon,
    node: Node,
    tmp_path: Path,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    nad_dir = tmp_path / "nads"
    nad_dir.mkdir()
    green = {"cniVersion": "1.0.0", "name": "green", "type": "fakesec"}
    manifest = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
                "metadata": {"name": "green", "namespace": ns},
                "spec": {"config": json.dumps(green)}}  # fmt: skip
    (nad_dir / "green.json").write_text(json.dumps(manifest))
    k8s_daemon.start()
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    since = len(fault_proxy.requests())

    result, code = k8s_daemon.call(
        "ADD",
        namespace=ns,
        pod="web",
        runtime_annotations={NETWORKS_KEY: "green"},
        kubeconfig="",
        nadDir=str(nad_dir),
    )
    assert code == 0, result
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")]
    assert namespaced(fault_proxy, since, ns) == []
    assert fault_proxy.requests(PATCH_STATUS) == []


def test_a_request_naming_another_kubeconfig_reads_live_with_its_own_client(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    create_nad(kube_admin, ns, "blue")
    uid = create_pod(kube_admin, ns, "web", {NETWORKS_KEY: "blue"})
    # The same identity under another path (beside it: relative paths inside still resolve).
    other = node.kubeconfig.with_name("other-kubeconfig")
    shutil.copyfile(node.kubeconfig, other)
    k8s_daemon.start()
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    since = len(fault_proxy.requests())

    result, code = k8s_daemon.call("ADD", namespace=ns, pod="web", uid=uid, kubeconfig=str(other))
    assert code == 0, result
    calls = [(r.method, r.path.rsplit("/", 1)[-1]) for r in namespaced(fault_proxy, since, ns)]
    # Live reads of the pod and the NAD, events posted inline, then the status.
    assert calls == [
        ("GET", "web"),
        ("GET", "blue"),
        *[("POST", "events")] * 2,
        ("PATCH", "status"),
    ]
    # The daemon's own writer did not see it: its metrics count no status write.
    assert k8s_daemon.metric('braid_daemon_status_writes_total{outcome="written"}') == 0
    assert fault_proxy.requests(where(method="PATCH", path="/pods/web/status"))[0].status == 200
