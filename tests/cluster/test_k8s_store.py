"""The engine with braid's Kubernetes store on a real API server: annotations and NADs read
from it, the exact status patch, UID checks, RBAC refusals and answers that are garbage."""

from __future__ import annotations

import json
from pathlib import Path

import apiserver
import faultproxy
import k8s_engine
import kubernetes.client
from faultproxy import where
from k8s_engine import STATUS_KEY, Node, create_nad, create_pod, events, node, read_pod

__all__ = ["node"]  # the fixture


def test_add_reads_pod_and_nads_and_patches_the_status_once(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    create_nad(kube_admin, ns, "blue")
    uid = create_pod(kube_admin, ns, "web", {"k8s.v1.cni.cncf.io/networks": "blue"})

    result, code = node.run("ADD", namespace=ns, pod="web", uid=uid)

    assert code == 0, result
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")]
    status = json.loads(read_pod(kube_admin, ns, "web").metadata.annotations[STATUS_KEY])
    assert [(s["name"], s["interface"]) for s in status] == [
        (k8s_engine.CLUSTER, "eth0"),
        (f"{ns}/blue", "net1"),
    ]
    assert [s.get("default", False) for s in status] == [True, False]
    writes = [r for r in fault_proxy.requests() if r.method != "GET"]
    patches = [r for r in writes if r.method == "PATCH"]
    assert [r.path for r in patches] == [f"/api/v1/namespaces/{ns}/pods/web/status"]
    assert [r.status for r in patches] == [200]
    reads = {r.path for r in fault_proxy.requests(where(method="GET"))}
    # clusterNetwork is looked up as a NAD of kube-system first, then in confDir (Multus).
    assert reads == {
        "/apis/k8s.cni.cncf.io/v1/namespaces/kube-system/network-attachment-definitions/kcluster",
        f"/api/v1/namespaces/{ns}/pods/web",
        f"/apis/k8s.cni.cncf.io/v1/namespaces/{ns}/network-attachment-definitions/blue",
    }
    added = [e for e in events(kube_admin, ns) if e[0] == "AddedInterface"]
    assert sorted(m for _, pod, m in added if pod == "web") == sorted(
        [f"Add eth0 [10.0.0.2] from {k8s_engine.CLUSTER}", f"Add net1 [10.0.0.2] from {ns}/blue"]
    )


def test_pod_annotations_from_the_runtime_spare_the_pod_get(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    create_nad(kube_admin, ns, "blue")
    uid = create_pod(kube_admin, ns, "web")
    annotations = {"k8s.v1.cni.cncf.io/networks": "blue"}
    result, code = node.run(
        "ADD",
        namespace=ns,
        pod="web",
        uid=uid,
        runtimeConfig={"io.kubernetes.cri.pod-annotations": annotations},
    )
    assert code == 0, result
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")]
    assert not fault_proxy.requests(where(method="GET", path="/pods/"))


def test_a_pod_recreated_with_the_same_name_fails_add_and_not_del(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    ns = kube_namespace
    old_uid = create_pod(kube_admin, ns, "web")
    k8s_engine.delete_pod(kube_admin, ns, "web")
    new_uid = create_pod(kube_admin, ns, "web")
    assert new_uid != old_uid

    result, code = node.run("ADD", namespace=ns, pod="web", uid=old_uid)

    assert code == 1
    assert result["code"] == 4
    assert "recreated" in result["details"]
    assert old_uid in result["msg"]
    assert node.calls("ADD") == []
    result, code = node.run("DEL", namespace=ns, pod="web", uid=old_uid)
    assert code == 0, result
    assert node.calls("DEL") == [("fakenet", "eth0")]
    assert STATUS_KEY not in (read_pod(kube_admin, ns, "web").metadata.annotations or {})


def test_a_static_pods_mirror_is_exempt_from_the_uid_check(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    ns = kube_namespace
    create_pod(kube_admin, ns, "static", {"kubernetes.io/config.mirror": "hash-of-static-pod"})
    result, code = node.run("ADD", namespace=ns, pod="static", uid="static-pod-uid-from-kubelet")
    assert code == 0, result
    status = read_pod(kube_admin, ns, "static").metadata.annotations[STATUS_KEY]
    assert json.loads(status)[0]["interface"] == "eth0"


def test_forbidden_is_a_clear_error(
    node: Node,
    tmp_path: Path,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    ns = kube_namespace
    uid = create_pod(kube_admin, ns, "web")
    nobody = kube_apiserver.kubeconfig("nobody", tmp_path / "nobody")
    result, code = node.run("ADD", namespace=ns, pod="web", uid=uid, kubeconfig=str(nobody))
    assert code == 1
    assert result["code"] == 7
    assert "HTTP 403 Forbidden" in result["msg"]
    assert "is not allowed" in result["details"]
    assert "RBAC" in result["details"]
    assert node.calls("ADD") == []


def test_a_missing_nad_fails_add_with_a_no_network_found_event(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    ns = kube_namespace
    uid = create_pod(kube_admin, ns, "web", {"k8s.v1.cni.cncf.io/networks": "nowhere"})
    result, code = node.run("ADD", namespace=ns, pod="web", uid=uid)
    assert code == 1
    assert result["code"] == 7
    assert f"{ns}/nowhere not found" in result["msg"]
    warnings = [e for e in events(kube_admin, ns) if e[0] == "NoNetworkFound"]
    message = f"cannot find a network-attachment-definition (nowhere) in namespace ({ns})"
    assert warnings == [("NoNetworkFound", "web", message)]
