"""Which store a request gets from a daemon: with the operator's configuration naming the
daemon's kubeconfig, the daemon's caches serve every request, whatever store the request's own
configuration names (the operator's configuration is the policy); a daemon without one leaves
each request its own store: a client of its own (live reads, as braid-thin) for a request that
names a kubeconfig."""

from __future__ import annotations

import shutil

import faultproxy
import kubernetes.client
from faultproxy import LoggedRequest, where
from k8s_engine import Node, create_nad, create_pod, node
from test_daemon_k8s_reads import NETWORKS_KEY, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

__all__ = ["k8s_daemon", "node"]  # the fixtures


def namespaced(proxy: faultproxy.FaultProxy, since: int, ns: str) -> list[LoggedRequest]:
    """The requests after the first `since` that name objects of namespace `ns`."""
    return [r for r in proxy.requests()[since:] if f"/namespaces/{ns}/" in r.path]


def test_the_operators_kubeconfig_wins_over_a_requests_own_store(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    # The file store the request names has no NAD "green": the cluster has it.
    nad_dir = node.root / "empty-nads"
    nad_dir.mkdir()
    create_nad(kube_admin, ns, "green")
    uid = create_pod(kube_admin, ns, "web", {NETWORKS_KEY: "green"})
    k8s_daemon.start()
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    since = len(fault_proxy.requests())

    result, code = k8s_daemon.call(
        "ADD",
        namespace=ns,
        pod="web",
        uid=uid,
        runtime_annotations={NETWORKS_KEY: "green"},
        kubeconfig="",
        nadDir=str(nad_dir),
    )
    assert code == 0, result
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")]
    # Served from the daemon's caches, its status written by the daemon's writer.
    reads = [r for r in namespaced(fault_proxy, since, ns) if r.method == "GET"]
    assert reads == []
    assert wait_until(
        lambda: k8s_daemon.metric('braid_daemon_status_writes_total{outcome="written"}') == 1
    )


def test_without_an_operator_configuration_a_request_keeps_its_own_client(
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
    k8s_daemon.start(with_config=False)
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
    # The daemon has no writer of its own: its metrics count no status write.
    assert k8s_daemon.metric('braid_daemon_status_writes_total{outcome="written"}') == 0
    assert fault_proxy.requests(where(method="PATCH", path="/pods/web/status"))[0].status == 200
