"""The daemon with the Kubernetes store when the API server goes away, and its shutdown: an ADD
under `statusWritePolicy: background` returns its result and the status lands once the server
is back; under `fail` the ADD fails and is rolled back; a DEL tears everything down from the
attachment record; SIGTERM stops the watches and the background thread, leaving no thread."""

from __future__ import annotations

import json

import faultproxy
import kubernetes.client
from k8s_engine import STATUS_KEY, Node, create_nad, create_pod, node, read_pod
from test_daemon_k8s_reads import NETWORKS_KEY, PATCH_STATUS, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

__all__ = ["k8s_daemon", "node"]  # the fixtures
WRITTEN = 'braid_daemon_status_writes_total{outcome="written"}'
FAILED = 'braid_daemon_status_writes_total{outcome="failed"}'
RETRIES = "braid_daemon_status_background_retries_total"


def status_of(admin: kubernetes.client.ApiClient, ns: str, pod: str) -> str | None:
    annotations = read_pod(admin, ns, pod).metadata.annotations or {}
    return annotations.get(STATUS_KEY)


def ready_daemon(daemon: K8sDaemon, admin: kubernetes.client.ApiClient, ns: str) -> str:
    """A NAD `blue`, a pod `web` asking for it (its UID returned), a daemon that listed both."""
    create_nad(admin, ns, "blue")
    uid = create_pod(admin, ns, "web", {NETWORKS_KEY: "blue"})
    daemon.start()
    assert wait_until(daemon.ready), daemon.log_text()
    return uid


def test_api_down_during_add_returns_the_result_and_the_status_lands_later(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    uid = ready_daemon(k8s_daemon, kube_admin, ns)
    fault_proxy.stop()
    result, code = k8s_daemon.call(
        "ADD", namespace=ns, pod="web", uid=uid, statusWritePolicy="background"
    )
    assert code == 0, result
    assert result["interfaces"][0]["name"] == "eth0"
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")]
    assert node.calls("DEL") == []
    assert status_of(kube_admin, ns, "web") is None
    assert k8s_daemon.metric(FAILED) >= 1
    assert k8s_daemon.metric(WRITTEN) == 0

    fault_proxy.start()
    assert wait_until(lambda: status_of(kube_admin, ns, "web") is not None, timeout=60)
    status = json.loads(status_of(kube_admin, ns, "web") or "")
    assert [s["name"] for s in status] == ["kcluster", f"{ns}/blue"]
    assert [r.status for r in fault_proxy.requests(PATCH_STATUS)] == [200]
    assert wait_until(lambda: k8s_daemon.metric(WRITTEN) == 1)
    assert k8s_daemon.metric(RETRIES) >= 1
    assert k8s_daemon.metric("braid_daemon_background_pending") == 0


def test_api_down_during_add_fails_it_under_the_fail_policy(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    uid = ready_daemon(k8s_daemon, kube_admin, ns)
    fault_proxy.stop()
    result, code = k8s_daemon.call(
        "ADD", namespace=ns, pod="web", uid=uid, statusWritePolicy="fail"
    )
    assert code == 1
    assert result["code"] == 11
    assert "network-status not written" in result["msg"]
    assert node.calls("DEL") == [("fakesec", "net1"), ("fakenet", "eth0")]  # rolled back
    assert not node.record_exists()
    assert k8s_daemon.metric(RETRIES) == 0


def test_del_with_the_api_down_tears_everything_down_from_the_record(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    uid = ready_daemon(k8s_daemon, kube_admin, ns)
    result, code = k8s_daemon.call("ADD", namespace=ns, pod="web", uid=uid)
    assert code == 0, result
    assert node.record_exists()
    fault_proxy.stop()
    result, code = k8s_daemon.call("DEL", namespace=ns, pod="web", uid=uid)
    assert (result, code) == ({}, 0)
    assert node.calls("DEL") == [("fakesec", "net1"), ("fakenet", "eth0")]
    # The daemon answers a DEL before it removes the record (docs/daemon.md, "Answers").
    assert wait_until(lambda: not node.record_exists())


def test_sigterm_stops_the_watches_and_the_background_thread(
    k8s_daemon: K8sDaemon,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    ns = kube_namespace
    uid = ready_daemon(k8s_daemon, kube_admin, ns)
    result, code = k8s_daemon.call("ADD", namespace=ns, pod="web", uid=uid)
    assert code == 0, result
    assert wait_until(lambda: k8s_daemon.metric("braid_daemon_background_pending") == 0)

    assert k8s_daemon.terminate(timeout=20) == 0
    lines = k8s_daemon.log_lines()
    assert [line for line in lines if line["level"] == "error"] == []
    assert lines[-1]["msg"] == "exited cleanly: no thread left"
    assert not k8s_daemon.socket.exists()
