"""Devices through the Kubernetes store on the real API server: the NAD and the pod of
docs/devices.md (the NAD's delegate swapped for the fake plugin `fakesec`), kubelet's
PodResources API served for real (grpcio) on a unix socket. A pod with the resource gets its
devices and `device-info` in the published network-status; a pod without it, or naming its
own `deviceID`, is refused with error 7 and a `NoDeviceFound` event, nothing attached."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
import yaml
from k8s_engine import (
    NAD_GROUP,
    NAD_PLURAL,
    NAD_VERSION,
    STATUS_KEY,
    Node,
    events,
    node,
    read_pod,
)

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures" / "podresources"))

from fake_kubelet import FakeKubelet

__all__ = ["node"]  # the fixture

DOC = Path(__file__).parents[2] / "docs" / "devices.md"
NIC = "vendor.example/nic"
DEVICES = ["0000:03:00.2", "0000:03:00.1"]
INFO = {"type": "pci", "version": "1.1.0", "pci": {"pci-address": "0000:03:00.1"}}


def documented() -> tuple[dict[str, Any], dict[str, Any]]:
    """The NAD and the pod of docs/devices.md."""
    blocks = [b.split("```", 1)[0] for b in DOC.read_text().split("```yaml\n")[1:]]
    nad, pod = (yaml.safe_load(b) for b in blocks)
    return nad, pod


def create(admin: kubernetes.client.ApiClient, ns: str, *, resources: bool = True,
           networks: str | None = None) -> str:  # fmt: skip
    """The documented NAD (delegate: fakesec) and pod (bound to the node); the pod's UID."""
    nad, pod = (copy.deepcopy(o) for o in documented())
    config = json.loads(nad["spec"]["config"])
    assert config["type"] == "sriov"
    config["type"] = "fakesec"
    nad["spec"]["config"] = json.dumps(config)
    nad["metadata"]["namespace"] = ns
    kubernetes.client.CustomObjectsApi(admin).create_namespaced_custom_object(
        NAD_GROUP, NAD_VERSION, ns, NAD_PLURAL, nad
    )
    pod["metadata"]["namespace"] = ns
    pod["spec"]["nodeName"] = "node-a"
    if not resources:
        del pod["spec"]["containers"][0]["resources"]
    if networks is not None:
        pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = networks
    created = kubernetes.client.CoreV1Api(admin).create_namespaced_pod(ns, pod)
    return str(created.metadata.uid)


def device_conf(node: Node) -> dict[str, Any]:
    (node.root / "devinfo" / "dp").mkdir(parents=True, exist_ok=True)
    return {
        "podResourcesSocket": str(node.root / "kubelet.sock"),
        "deviceInfoDir": str(node.root / "devinfo"),
        "podResourcesTimeout": 2,
    }


def delegate_devices(node: Node) -> list[tuple[str, Any]]:
    """(CNI_IFNAME, runtimeConfig.deviceID) of every ADD of fakesec."""
    lines = (node.state / "calls.jsonl").read_text().splitlines()
    calls = [json.loads(line) for line in lines]
    return [
        (c["env"]["CNI_IFNAME"], c["stdin"].get("runtimeConfig", {}).get("deviceID"))
        for c in calls
        if c["env"]["CNI_COMMAND"] == "ADD" and c["plugin"] == "fakesec"
    ]


def test_the_documented_pod_gets_two_devices_and_device_info(
    node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns = kube_namespace
    uid = create(kube_admin, ns)
    conf = device_conf(node)
    (node.root / "devinfo" / "dp" / f"vendor.example-nic-{DEVICES[1]}-device.json").write_text(
        json.dumps(INFO)
    )
    pods = {(ns, "dpdk-app"): [[(NIC, DEVICES)]]}
    with FakeKubelet(conf["podResourcesSocket"], pods):
        result, code = node.run("ADD", namespace=ns, pod="dpdk-app", uid=uid, **conf)
    assert code == 0, result
    assert delegate_devices(node) == [("net1", "0000:03:00.1"), ("net2", "0000:03:00.2")]
    status = json.loads(read_pod(kube_admin, ns, "dpdk-app").metadata.annotations[STATUS_KEY])
    assert [s["interface"] for s in status] == ["eth0", "net1", "net2"]
    assert [s.get("device-info") for s in status] == [None, INFO, None]

    result, code = node.run("DEL", namespace=ns, pod="dpdk-app", uid=uid, **conf)
    assert (result, code) == ({}, 0)
    assert not (node.root / "devinfo" / "cni" / "ctr1").exists()


REFUSALS = {
    "no-resource": (False, None, "reports none for the pod"),
    "own-device-id": (True, json.dumps([{"name": "sriov-net", "deviceID": "0:99"}]), "deviceID"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refused_pod_gets_a_no_device_found_event_and_nothing_attached(
    node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str, case: str
) -> None:
    resources, networks, said = REFUSALS[case]
    ns = kube_namespace
    uid = create(kube_admin, ns, resources=resources, networks=networks)
    conf = device_conf(node)
    pods = {(ns, "dpdk-app"): [[(NIC, DEVICES)]]} if resources else {}
    with FakeKubelet(conf["podResourcesSocket"], pods):
        result, code = node.run("ADD", namespace=ns, pod="dpdk-app", uid=uid, **conf)
    assert (code, result["code"]) == (1, 7)
    assert said in result["msg"]
    warnings = [e for e in events(kube_admin, ns) if e[0] == "NoDeviceFound"]
    assert [(reason, pod) for reason, pod, _ in warnings] == [("NoDeviceFound", "dpdk-app")]
    assert said in warnings[0][2]
    assert node.calls("ADD") == []
    assert STATUS_KEY not in (read_pod(kube_admin, ns, "dpdk-app").metadata.annotations or {})
