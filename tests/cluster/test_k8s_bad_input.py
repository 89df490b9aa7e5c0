"""Bad input from the API server: a NAD whose spec.config is not JSON or not a string, an
annotation that is not a string, answers that are not Kubernetes objects. Each is a clear CNI
error; no delegate runs and nothing is left behind."""

from __future__ import annotations

import json

import faultproxy
import kubernetes.client
import pytest
from faultproxy import where
from k8s_engine import Node, create_nad, create_pod, node

__all__ = ["node"]  # the fixture
NAD_GET = where(method="GET", path="/network-attachment-definitions/blue")
POD_GET = where(method="GET", path="/pods/web")


def nad_answer(ns: str, config: object) -> bytes:
    return json.dumps(
        {
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {"name": "blue", "namespace": ns},
            "spec": {"config": config},
        }
    ).encode()


def assert_nothing_attached(node: Node) -> None:
    assert node.calls("ADD") == []
    assert not node.record_exists()


def test_a_nad_whose_config_is_not_json(
    node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns = kube_namespace
    create_nad(kube_admin, ns, "blue", config="{not json")
    uid = create_pod(kube_admin, ns, "web", {"k8s.v1.cni.cncf.io/networks": "blue"})
    result, code = node.run("ADD", namespace=ns, pod="web", uid=uid)
    assert code == 1
    assert result["code"] == 7
    assert f"{ns}/blue" in result["msg"]
    assert_nothing_attached(node)


def test_a_nad_whose_config_is_not_a_string(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    uid = create_pod(kube_admin, ns, "web", {"k8s.v1.cni.cncf.io/networks": "blue"})
    fault_proxy.respond(200, match=NAD_GET, body=nad_answer(ns, {"type": "fakesec"}))
    result, code = node.run("ADD", namespace=ns, pod="web", uid=uid)
    assert code == 1
    assert result["code"] == 7
    assert result["msg"] == (
        f"NetworkAttachmentDefinition {ns}/blue: field spec.config: expected a string, found dict"
    )
    assert_nothing_attached(node)


def test_an_annotation_that_is_not_a_string(
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    uid = create_pod(kube_admin, ns, "web")
    pod = {"kind": "Pod", "metadata": {"name": "web", "namespace": ns, "uid": uid,
           "annotations": {"k8s.v1.cni.cncf.io/networks": ["blue"]}}}  # fmt: skip
    fault_proxy.respond(200, match=POD_GET, body=json.dumps(pod).encode())
    result, code = node.run("ADD", namespace=ns, pod="web", uid=uid)
    assert code == 1
    assert result["code"] == 7
    assert "annotation 'k8s.v1.cni.cncf.io/networks': expected a string" in result["msg"]
    assert_nothing_attached(node)


@pytest.mark.parametrize(
    "answer",
    [
        (b"<html>proxy error</html>", "not JSON"),
        (b"[1, 2, 3]", "expected a JSON object"),
        (b'{"metadata": "nope"}', "field metadata"),
    ],
)
def test_garbage_answers(
    answer: tuple[bytes, str],
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    body, why = answer
    ns = kube_namespace
    uid = create_pod(kube_admin, ns, "web")
    fault_proxy.respond(200, match=POD_GET, body=body, content_type="text/html")
    result, code = node.run("ADD", namespace=ns, pod="web", uid=uid)
    assert code == 1
    assert result["code"] in (7, 11)
    assert why in f"{result['msg']} {result.get('details', '')}"
    assert_nothing_attached(node)
