"""Extended resources backed by DRA (Kubernetes 1.34 alpha `DRAExtendedResource`, enabled on
the test API server) on the real API server, without a scheduler: the objects are written as
kube-scheduler writes them (its dynamicresources plugin) -- the pod's ResourceClaim
`<pod>-extended-resources-<suffix>` owned by the pod, with one request per container and
extended resource (`container-<i>-request-<j>`), allocated and reserved through its status
subresource, and the pod's `status.extendedResourceClaimStatus` through the pod's. braid
gives each selection of the NAD whose resourceName is the extended resource one of the
claim's devices, through live reads (braid-thin) and through the daemon's caches, and refuses
a claim that is not the pod's and a device whose attribute names another resource (code 7,
nothing attached). The node tier runs the real scheduler, kubelet and driver
(tests/node/test_node_braid_d_dra_extended.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import kubernetes.client
import pytest
import test_k8s_dra
import yaml
from k8s_engine import STATUS_KEY, Node, create_nad, events, node, read_pod
from kubernetes.client.exceptions import ApiException
from test_k8s_devices import delegate_devices, device_conf
from test_k8s_dra import DEVICE_ID_ATTRIBUTE, DRIVER, RESOURCE_ATTRIBUTE, caches
from test_k8s_status import wait_until

from braid.k8s.caches import ClusterCaches

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures" / "podresources"))

from fake_kubelet import FakeKubelet

__all__ = ["caches", "node"]  # the fixtures

EXTENDED = "braid-test.example/extnet"
CLASS = "braid-test-extnet"
POD = "ext-pod"


def claim_name(pod: str) -> str:
    """The name the scheduler's claim gets: its generateName, and a suffix."""
    return f"{pod}-extended-resources-q7x2m"


CLAIM = claim_name(POD)
REQUEST = "container-0-request-0"


class Extended:
    """One namespace's objects: the DeviceClass, node-a's pool, the NAD and the pod."""

    def __init__(self, admin: kubernetes.client.ApiClient, ns: str) -> None:
        self.admin, self.ns, self.pool = admin, ns, f"{ns}-pool"
        self.api = kubernetes.client.ResourceV1Api(admin)
        self.core = kubernetes.client.CoreV1Api(admin)
        try:
            self.api.create_device_class({
                "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": CLASS},
                "spec": {"extendedResourceName": EXTENDED, "selectors": [
                    {"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            })  # fmt: skip
        except ApiException as exc:
            if exc.status != 409:  # the session's other tests made it
                raise
        devices = [self.device("nic-0", "ext0"), self.device("nic-1", "ext1"),
                   self.device("odd-0", "odd0", "other.example/net"),
                   {"name": "gpu-0", "attributes": {}}]  # fmt: skip
        self.api.create_resource_slice({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{ns}-ext-slice"},
            "spec": {"driver": DRIVER, "nodeName": "node-a", "devices": devices,
                     "pool": {"name": self.pool, "generation": 1, "resourceSliceCount": 1}},
        })  # fmt: skip
        config = {"cniVersion": "1.0.0", "name": "extnet", "type": "fakesec",
                  "capabilities": {"deviceID": True}}  # fmt: skip
        create_nad(admin, ns, "extnet", json.dumps(config))
        kubernetes.client.CustomObjectsApi(admin).patch_namespaced_custom_object(
            "k8s.cni.cncf.io", "v1", ns, "network-attachment-definitions", "extnet",
            {"metadata": {"annotations": {"k8s.v1.cni.cncf.io/resourceName": EXTENDED}}},
        )  # fmt: skip

    @staticmethod
    def device(name: str, ident: str, resource: str = EXTENDED) -> dict[str, Any]:
        attributes = {
            RESOURCE_ATTRIBUTE: {"string": resource},
            DEVICE_ID_ATTRIBUTE: {"string": ident},
        }
        return {"name": name, "attributes": attributes}

    def pod(self, count: int = 2) -> str:
        body = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": POD,
                         "annotations": {"k8s.v1.cni.cncf.io/networks": "extnet, extnet"}},
            "spec": {"nodeName": "node-a", "containers": [
                {"name": "c", "image": "pause", "resources": {"limits": {EXTENDED: str(count)}}}]},
        }  # fmt: skip
        return str(self.core.create_namespaced_pod(self.ns, body).metadata.uid)

    def claim(self, owner: str, uid: str, devices: tuple[str, ...] = ("nic-1", "nic-0")) -> None:
        """The scheduler's claim for the pod, owned by pod `owner` of `uid`, allocated
        `devices` and gpu-0 for its one request."""
        results = [{"driver": DRIVER, "pool": self.pool, "device": d} for d in (*devices, "gpu-0")]
        scheduler_claim(
            self.admin, self.ns, POD, owner=(owner, uid), device_class=CLASS, results=results
        )

    def name_in_status(self) -> None:
        scheduler_status(self.admin, self.ns, POD, "c", EXTENDED)


def scheduler_claim(
    admin: kubernetes.client.ApiClient,
    ns: str,
    pod: str,
    *,
    owner: tuple[str, str],
    device_class: str,
    results: list[dict[str, str]],
) -> None:
    """What kube-scheduler writes for `pod`'s extended resources: the claim
    `<pod>-extended-resources-q7x2m` with one request, its controller pod `owner` (name, UID),
    then its allocation (`results` for that request) and its reservation for the pod."""
    name = claim_name(pod)
    exactly = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": 2}
    reference = {"apiVersion": "v1", "kind": "Pod", "name": owner[0], "uid": owner[1],
                 "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    meta = {"name": name, "ownerReferences": [reference],
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"}}  # fmt: skip
    api = kubernetes.client.ResourceV1Api(admin)
    api.create_namespaced_resource_claim(ns, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
        "spec": {"devices": {"requests": [{"name": REQUEST, "exactly": exactly}]}},
    })  # fmt: skip
    uid = str(read_pod(admin, ns, pod).metadata.uid)
    status = {
        "allocation": {"devices": {"results": [{"request": REQUEST, **r} for r in results]}},
        "reservedFor": [{"resource": "pods", "name": pod, "uid": uid}],
    }
    api.patch_namespaced_resource_claim_status(name, ns, {"status": status})


def scheduler_status(
    admin: kubernetes.client.ApiClient, ns: str, pod: str, container: str, resource: str
) -> None:
    """The scheduler's patch of the pod's status, naming the claim of `scheduler_claim`."""
    mapping = {"containerName": container, "resourceName": resource, "requestName": REQUEST}
    named = {"resourceClaimName": claim_name(pod), "requestMappings": [mapping]}
    status = {"extendedResourceClaimStatus": named}
    kubernetes.client.CoreV1Api(admin).patch_namespaced_pod_status(pod, ns, {"status": status})


@pytest.fixture
def ext(kube_admin: kubernetes.client.ApiClient, kube_namespace: str) -> Extended:
    return Extended(kube_admin, kube_namespace)


def add(
    node: Node, ext: Extended, uid: str, caches: ClusterCaches | None = None
) -> tuple[dict[str, Any], int]:
    """An ADD of the pod, braid-thin's way or the daemon's; kubelet's PodResources API
    reports no device-plugin device."""
    return test_k8s_dra.add_pod(node, ext.ns, POD, uid, caches)


def test_the_api_server_keeps_the_status_and_the_class_name(ext: Extended) -> None:
    """The feature gate is on: without it the API server drops both fields silently."""
    ext.pod()
    ext.name_in_status()
    status = ext.core.read_namespaced_pod_status(POD, ext.ns).status
    assert status.extended_resource_claim_status.resource_claim_name == CLAIM
    assert ext.api.read_device_class(CLASS).spec.extended_resource_name == EXTENDED


@pytest.mark.parametrize("cached", [False, True], ids=["live", "cached"])
def test_the_extended_resource_claims_devices_reach_the_nads_selections(
    node: Node, ext: Extended, caches: ClusterCaches, cached: bool
) -> None:
    uid = ext.pod()
    ext.claim(POD, uid)
    ext.name_in_status()
    if cached:
        assert wait_until(lambda: (caches.pods.get(ext.ns, POD) or {}).get("status"))
        assert caches.claims is not None
        claims = caches.claims
        assert wait_until(lambda: claims.get(ext.ns, CLAIM) is not None)
    result, code = add(node, ext, uid, caches if cached else None)
    assert code == 0, result
    # Sorted device IDs, one per selection; gpu-0 has no braid attributes and is left out.
    assert delegate_devices(node) == [("net1", "ext0"), ("net2", "ext1")]


def test_a_claim_of_another_pod_is_refused_nothing_attached(
    node: Node, ext: Extended, kube_admin: kubernetes.client.ApiClient
) -> None:
    uid = ext.pod()
    ext.claim("other-pod", "0d6f0a52-3b39-4bbf-9d5e-1b1b2f7d4c11")
    ext.name_in_status()
    error, code = add(node, ext, uid)
    assert (code, error["code"]) == (1, 7), error
    assert f"ResourceClaim {ext.ns}/{CLAIM}, which the pod's status.extended" in error["msg"]
    assert "belongs to Pod other-pod, not to pod ext-pod" in error["msg"]
    assert node.calls("ADD") == []
    assert [e[0] for e in events(kube_admin, ext.ns)] == ["NoDeviceFound"]
    assert STATUS_KEY not in (read_pod(kube_admin, ext.ns, POD).metadata.annotations or {})


def test_a_device_attributed_to_another_resource_is_refused(node: Node, ext: Extended) -> None:
    uid = ext.pod()
    ext.claim(POD, uid, devices=("nic-0", "odd-0"))
    ext.name_in_status()
    error, code = add(node, ext, uid)
    assert (code, error["code"]) == (1, 7), error
    assert "k8s.cni.cncf.io/resourceName other.example/net, but the request" in error["msg"]
    assert node.calls("ADD") == []


def test_without_the_status_the_pod_has_no_device(node: Node, ext: Extended) -> None:
    """The claim exists but the pod's status does not name it (no scheduler wrote it):
    braid does not guess, and says how to give the pod the device."""
    uid = ext.pod()
    ext.claim(POD, uid)
    error, code = add(node, ext, uid)
    assert (code, error["code"]) == (1, 7), error
    assert f"needs a device of resource {EXTENDED}" in error["msg"]
    assert node.calls("ADD") == []


def test_another_pods_extended_claim_holds_its_device(node: Node, ext: Extended) -> None:
    """Another pod of the node got nic-0 through its own extended-resource claim: braid-thin
    finds it among the claims the node's pods name and refuses (11, naming that pod)."""
    uid = ext.pod()
    ext.claim(POD, uid)
    ext.name_in_status()
    container = {"name": "t", "image": "pause", "resources": {"limits": {EXTENDED: "1"}}}
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "thief"},
            "spec": {"nodeName": "node-a", "containers": [container]}}  # fmt: skip
    thief = str(ext.core.create_namespaced_pod(ext.ns, body).metadata.uid)
    results = [{"driver": DRIVER, "pool": ext.pool, "device": "nic-0"}]
    scheduler_claim(
        ext.admin, ext.ns, "thief", owner=("thief", thief), device_class=CLASS, results=results
    )
    scheduler_status(ext.admin, ext.ns, "thief", "t", EXTENDED)
    error, code = add(node, ext, uid)
    assert (code, error["code"]) == (1, 11), error
    assert f"{ext.ns}/thief" in error["msg"]
    assert node.calls("ADD") == []


DOC = Path(__file__).parents[2] / "docs" / "devices.md"


def documented() -> dict[str, dict[str, Any]]:
    """docs/devices.md's `yaml dra-extended` blocks (the DeviceClass and the Pod), by kind."""
    blocks = [b.split("```", 1)[0] for b in DOC.read_text().split("```yaml dra-extended\n")[1:]]
    return {o["kind"]: o for o in map(yaml.safe_load, blocks)}


def test_the_documented_pod_gets_the_documented_devices(
    node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    """The DeviceClass and the Pod of "A device as an extended resource", with the slice and
    the NAD of the DRA section before it."""
    ns, docs, before = kube_namespace, documented(), test_k8s_dra.documented()
    assert sorted(docs) == ["DeviceClass", "Pod"]
    api = kubernetes.client.ResourceV1Api(kube_admin)
    slice_, pool = before["ResourceSlice"], f"{ns}-node-a"
    test_k8s_dra.create_documented_devices(
        api, docs["DeviceClass"], slice_, f"{ns}-vf-extended", pool
    )
    nad = before["NetworkAttachmentDefinition"]
    nad["spec"]["config"] = json.dumps({**json.loads(nad["spec"]["config"]), "type": "fakesec"})
    kubernetes.client.CustomObjectsApi(kube_admin).create_namespaced_custom_object(
        "k8s.cni.cncf.io", "v1", ns, "network-attachment-definitions", nad
    )
    pod = docs["Pod"]
    pod["spec"]["nodeName"] = "node-a"
    uid = str(kubernetes.client.CoreV1Api(kube_admin).create_namespaced_pod(ns, pod).metadata.uid)
    (container,) = pod["spec"]["containers"]
    (resource,) = container["resources"]["limits"]
    assert resource == docs["DeviceClass"]["spec"]["extendedResourceName"]
    driver = slice_["spec"]["driver"]
    results = [{"driver": driver, "pool": pool, "device": d} for d in ("vf-2", "vf-1")]
    scheduler_claim(
        kube_admin,
        ns,
        "vf-app",
        owner=("vf-app", uid),
        device_class="vf.example-net",
        results=results,
    )
    scheduler_status(kube_admin, ns, "vf-app", container["name"], resource)
    conf = device_conf(node)
    with FakeKubelet(conf["podResourcesSocket"], {(ns, "vf-app"): [[]]}):
        result, code = node.run("ADD", namespace=ns, pod="vf-app", uid=uid, **conf)
    assert code == 0, result
    assert delegate_devices(node) == [("net1", "0000:03:00.1"), ("net2", "0000:03:00.2")]
