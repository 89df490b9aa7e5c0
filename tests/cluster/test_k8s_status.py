"""The network-status write against a real API server through the fault proxy: conflicts,
429 with Retry-After, 500/503, the API down during ADD (per statusWritePolicy) and during DEL,
the daemon's background retries until the pod is gone, and skipping pods without networks."""

from __future__ import annotations

import json
import time
from pathlib import Path

import apiserver
import faultproxy
import kubernetes.client
import pytest
from faultproxy import where
from k8s_engine import STATUS_KEY, Node, create_nad, create_pod, delete_pod, node, read_pod

from braid.config.schema import BraidConfig
from braid.k8s.background import RetryScheduler
from braid.k8s.retry import RetryPolicy
from braid.k8s.select import connect
from braid.k8s.status import StatusWriter
from braid.nad.plan import PodRef

__all__ = ["node"]  # the fixture
PATCH_STATUS = where(method="PATCH", path="/status")


def status_of(admin: kubernetes.client.ApiClient, ns: str, pod: str) -> str | None:
    annotations = read_pod(admin, ns, pod).metadata.annotations or {}
    return annotations.get(STATUS_KEY)


def secondary_pod(admin: kubernetes.client.ApiClient, ns: str) -> str:
    create_nad(admin, ns, "blue")
    return create_pod(admin, ns, "web", {"k8s.v1.cni.cncf.io/networks": "blue"})


def file_cluster_network(node: Node) -> str:
    """The cluster network by path: no NAD lookup, so an ADD whose pod annotations come from
    the runtime needs the API server for the status write only."""
    return str(node.root / "net.d" / "kcluster.conflist")


def test_conflicts_are_retried(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    uid = secondary_pod(kube_admin, kube_namespace)
    fault_proxy.respond(409, count=2, match=PATCH_STATUS)
    result, code = node.run("ADD", namespace=kube_namespace, pod="web", uid=uid)
    assert code == 0, result
    assert [r.status for r in fault_proxy.requests(PATCH_STATUS)] == [409, 409, 200]
    assert len(json.loads(status_of(kube_admin, kube_namespace, "web") or "[]")) == 2


def test_too_many_requests_waits_for_retry_after(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    uid = secondary_pod(kube_admin, kube_namespace)
    fault_proxy.respond(429, count=1, match=PATCH_STATUS, retry_after=2)
    start = time.monotonic()
    result, code = node.run("ADD", namespace=kube_namespace, pod="web", uid=uid)
    assert code == 0, result
    assert time.monotonic() - start >= 2.0
    assert [r.status for r in fault_proxy.requests(PATCH_STATUS)] == [429, 200]
    assert status_of(kube_admin, kube_namespace, "web") is not None


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_are_retried(
    status: int,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    uid = secondary_pod(kube_admin, kube_namespace)
    fault_proxy.respond(status, count=2, match=where(method="GET", path="/pods/"))
    fault_proxy.respond(status, count=2, match=PATCH_STATUS)
    result, code = node.run("ADD", namespace=kube_namespace, pod="web", uid=uid)
    assert code == 0, result
    assert [r.status for r in fault_proxy.requests(PATCH_STATUS)] == [status, status, 200]
    pod_reads = fault_proxy.requests(where(method="GET", path="/pods/web"))
    assert [r.status for r in pod_reads] == [status, status, 200]


def test_api_down_during_add_fails_it_under_the_fail_policy(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    uid = create_pod(kube_admin, kube_namespace, "web")
    fault_proxy.stop()
    result, code = node.run(
        "ADD",
        namespace=kube_namespace,
        pod="web",
        uid=uid,
        clusterNetwork=file_cluster_network(node),
        statusWritePolicy="fail",
        runtimeConfig={"io.kubernetes.cri.pod-annotations": None},
    )
    assert code == 1
    assert result["code"] == 11
    assert "network-status not written" in result["msg"]
    assert "no answer" in result["msg"]
    assert node.calls("ADD") == [("fakenet", "eth0")]
    assert node.calls("DEL") == [("fakenet", "eth0")]  # rolled back
    assert not node.record_exists()


def test_api_down_during_add_returns_the_result_under_the_background_policy(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    uid = create_pod(kube_admin, kube_namespace, "web")
    fault_proxy.stop()
    result, code = node.run(
        "ADD",
        namespace=kube_namespace,
        pod="web",
        uid=uid,
        clusterNetwork=file_cluster_network(node),
        runtimeConfig={"io.kubernetes.cri.pod-annotations": None},
    )
    assert code == 0, result
    assert result["interfaces"][0]["name"] == "eth0"
    assert node.calls("DEL") == []
    assert status_of(kube_admin, kube_namespace, "web") is None


def test_api_down_during_del_still_tears_everything_down(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    uid = secondary_pod(kube_admin, kube_namespace)
    result, code = node.run("ADD", namespace=kube_namespace, pod="web", uid=uid)
    assert code == 0, result
    fault_proxy.stop()
    result, code = node.run("DEL", namespace=kube_namespace, pod="web", uid=uid)
    assert code == 0, result
    assert node.calls("DEL") == [("fakesec", "net1"), ("fakenet", "eth0")]
    assert not node.record_exists()


@pytest.mark.parametrize(
    ("keys", "later"),
    [({}, {"mtu": 9000, "gateway": ["10.9.0.1"]}), ({"networkStatusKeys": "v1"}, {})],
)
def test_the_published_status_holds_the_configured_keys(
    keys: dict[str, str],
    later: dict[str, object],
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    """``networkStatusKeys``: by default the annotation carries Multus's ``mtu`` and
    ``gateway`` besides spec v1's keys; with ``v1`` it carries v1's keys alone."""
    config = json.dumps({"cniVersion": "1.1.0", "name": "blue", "type": "fakesec"})
    create_nad(kube_admin, kube_namespace, "blue", config)
    uid = create_pod(kube_admin, kube_namespace, "web", {"k8s.v1.cni.cncf.io/networks": "blue"})
    result = {
        "cniVersion": "1.1.0",
        "interfaces": [
            {"name": "net1", "mac": "02:00:00:00:00:01", "mtu": 9000, "sandbox": node.netns}
        ],
        "ips": [{"address": "10.9.0.5/24", "gateway": "10.9.0.1", "interface": 0}],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dns": {"nameservers": ["10.9.0.53"]},
    }
    (node.state / "fakesec.json").write_text(json.dumps({"ADD": {"stdout": json.dumps(result)}}))

    out, code = node.run("ADD", namespace=kube_namespace, pod="web", uid=uid, **keys)

    assert code == 0, out
    published = json.loads(status_of(kube_admin, kube_namespace, "web") or "[]")
    assert published[1] == {
        "name": f"{kube_namespace}/blue",
        "interface": "net1",
        "ips": ["10.9.0.5"],
        "mac": "02:00:00:00:00:01",
        "default": False,
        "dns": {"nameservers": ["10.9.0.53"]},
        **later,
    }
    v1_keys = {"name", "interface", "ips", "mac", "default", "dns"}
    if not later:
        assert all(set(entry) <= v1_keys for entry in published), published


def test_skip_status_without_networks(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    uid = create_pod(kube_admin, kube_namespace, "plain")
    result, code = node.run(
        "ADD", namespace=kube_namespace, pod="plain", uid=uid, skipStatusWithoutNetworks=True
    )
    assert code == 0, result
    assert fault_proxy.requests(PATCH_STATUS) == []
    assert status_of(kube_admin, kube_namespace, "plain") is None


def wait_until(predicate: object, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def background_writer(
    tmp_path: Path, server: apiserver.ApiServer, proxy: faultproxy.FaultProxy
) -> tuple[StatusWriter, RetryScheduler]:
    kubeconfig = server.kubeconfig("braid", tmp_path / "daemon-kubeconfig", server=proxy.url)
    client = connect(BraidConfig(kubeconfig=str(kubeconfig)), {})
    scheduler = RetryScheduler()
    writer = StatusWriter(client, retry=RetryPolicy(attempts=1), scheduler=scheduler)
    return writer, scheduler


def test_background_retries_until_written(
    tmp_path: Path,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    uid = create_pod(kube_admin, kube_namespace, "web")
    writer, scheduler = background_writer(tmp_path, kube_apiserver, fault_proxy)
    fault_proxy.respond(503, count=3, match=PATCH_STATUS)
    status = b'[{"name":"kcluster","interface":"eth0","default":true}]'
    try:
        writer.publish(PodRef(namespace=kube_namespace, name="web", uid=uid), status)
        assert wait_until(lambda: status_of(kube_admin, kube_namespace, "web") is not None)
        assert wait_until(lambda: scheduler.pending == 0)
    finally:
        scheduler.stop()
    assert [r.status for r in fault_proxy.requests(PATCH_STATUS)] == [503, 503, 503, 200]
    assert json.loads(status_of(kube_admin, kube_namespace, "web") or "") == json.loads(status)


def test_background_retries_end_when_the_pod_is_gone(
    tmp_path: Path,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    uid = create_pod(kube_admin, kube_namespace, "web")
    writer, scheduler = background_writer(tmp_path, kube_apiserver, fault_proxy)
    fault_proxy.respond(503, count=1000, match=PATCH_STATUS)
    try:
        writer.publish(PodRef(namespace=kube_namespace, name="web", uid=uid), b"[]")
        assert len(fault_proxy.wait_for(PATCH_STATUS, at_least=2)) >= 2
        delete_pod(kube_admin, kube_namespace, "web")
        fault_proxy.clear()
        assert wait_until(lambda: scheduler.pending == 0)
    finally:
        scheduler.stop()
    assert fault_proxy.requests(PATCH_STATUS)[-1].status == 404
