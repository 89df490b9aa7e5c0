"""Dynamic Resource Allocation on the real API server (resource.k8s.io/v1): a DeviceClass, a
node's ResourceSlice whose network devices carry `k8s.cni.cncf.io/resourceName` and
`k8s.cni.cncf.io/deviceID`, a ResourceClaim allocated and reserved through its status
subresource as the scheduler does, a pod naming it. braid gives each selection of the NAD of
that resourceName one of the claim's devices, merges the driver's networkData into
network-status, and refuses a claim not allocated yet or shared with another pod (error 11,
nothing attached). Through live reads (braid-thin) and through the daemon's caches."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import apiserver
import faultproxy
import kubernetes.client
import pytest
import yaml
from faultproxy_rules import where
from k8s_engine import STATUS_KEY, Node, create_nad, events, node, read_pod
from kubernetes.client.exceptions import ApiException
from test_k8s_devices import delegate_devices, device_conf
from test_k8s_status import wait_until

from braid.config.schema import BraidConfig
from braid.engine import Engine
from braid.engine.session import store_sessions
from braid.k8s import listing
from braid.k8s.caches import ClusterCaches
from braid.k8s.podresources import read_pod_devices
from braid.k8s.select import connect

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures" / "podresources"))

from fake_kubelet import FakeKubelet

__all__ = ["node"]  # the fixture

DRIVER = "braid-test.example"
RESOURCE = "braid-test.example/dranet"
CLASS = "braid-test-net"
RESOURCE_ATTRIBUTE, DEVICE_ID_ATTRIBUTE = "k8s.cni.cncf.io/resourceName", "k8s.cni.cncf.io/deviceID"
NETWORK_DATA = {
    "interfaceName": "net1",
    "ips": ["10.9.0.5/24"],
    "hardwareAddress": "02:00:00:00:00:05",
}
POD = "dra-pod"


def device(name: str, ident: str | None) -> dict[str, Any]:
    attributes = {}
    if ident is not None:
        attributes = {
            RESOURCE_ATTRIBUTE: {"string": RESOURCE},
            DEVICE_ID_ATTRIBUTE: {"string": ident},
        }
    return {"name": name, "attributes": attributes}


class Dra:
    """One namespace's DRA world: its pool of node-a, its claim, its pod and its NAD."""

    def __init__(self, admin: kubernetes.client.ApiClient, ns: str) -> None:
        self.admin, self.ns = admin, ns
        self.api = kubernetes.client.ResourceV1Api(admin)
        self.pool = f"{ns}-pool"
        try:
            self.api.create_device_class({
                "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": CLASS},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            })  # fmt: skip
        except ApiException as exc:
            if exc.status != 409:  # the session's other tests made it
                raise
        self.api.create_resource_slice({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{ns}-slice"},
            "spec": {
                "driver": DRIVER, "nodeName": "node-a",
                "pool": {"name": self.pool, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    device("nic-0", "dra0"), device("nic-1", "dra1"), device("gpu-0", None)
                ],
            },
        })  # fmt: skip
        caps = {"deviceID": True}
        config = json.dumps(
            {"cniVersion": "1.0.0", "name": "dranet", "type": "fakesec", "capabilities": caps}
        )
        create_nad(admin, ns, "dranet", config)
        kubernetes.client.CustomObjectsApi(admin).patch_namespaced_custom_object(
            "k8s.cni.cncf.io", "v1", ns, "network-attachment-definitions", "dranet",
            {"metadata": {"annotations": {"k8s.v1.cni.cncf.io/resourceName": RESOURCE}}},
        )  # fmt: skip

    def claim(self, name: str = "net-claim") -> None:
        requests = [
            {"name": "nics", "exactly": {"deviceClassName": CLASS,
                                         "allocationMode": "ExactCount", "count": 2}},
            {"name": "gpu", "exactly": {"deviceClassName": CLASS}},
        ]  # fmt: skip
        self.api.create_namespaced_resource_claim(self.ns, {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name}, "spec": {"devices": {"requests": requests}},
        })  # fmt: skip

    def pod(self, claim: dict[str, str] | None = None, networks: str = "dranet, dranet") -> str:
        body = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": POD, "annotations": {"k8s.v1.cni.cncf.io/networks": networks}},
            "spec": {
                "nodeName": "node-a",
                "resourceClaims": [
                    {"name": "net", **(claim or {"resourceClaimName": "net-claim"})}
                ],
                "containers": [
                    {"name": "c", "image": "pause", "resources": {"claims": [{"name": "net"}]}}
                ],
            },
        }  # fmt: skip
        created = kubernetes.client.CoreV1Api(self.admin).create_namespaced_pod(self.ns, body)
        return str(created.metadata.uid)

    def allocate(self, uid: str, *, name: str = "net-claim", also: str = "") -> None:
        """What the scheduler (allocation, reservedFor) and the driver (networkData) write."""
        results = [
            {"request": "nics", "driver": DRIVER, "pool": self.pool, "device": "nic-1"},
            {"request": "nics", "driver": DRIVER, "pool": self.pool, "device": "nic-0"},
            {"request": "gpu", "driver": DRIVER, "pool": self.pool, "device": "gpu-0"},
        ]
        reserved = [{"resource": "pods", "name": POD, "uid": uid}]
        if also:
            reserved.append({"resource": "pods", "name": also, "uid": str(uuid.uuid4())})
        data = {"driver": DRIVER, "pool": self.pool, "device": "nic-0", "networkData": NETWORK_DATA}
        status = {
            "allocation": {"devices": {"results": results}},
            "reservedFor": reserved,
            "devices": [data],
        }
        self.api.patch_namespaced_resource_claim_status(name, self.ns, {"status": status})


@pytest.fixture
def dra(kube_admin: kubernetes.client.ApiClient, kube_namespace: str) -> Dra:
    return Dra(kube_admin, kube_namespace)


@pytest.fixture
def caches(
    tmp_path: Path, kube_apiserver: apiserver.ApiServer, fault_proxy: faultproxy.FaultProxy
) -> Iterator[ClusterCaches]:
    kubeconfig = kube_apiserver.kubeconfig("braid", tmp_path / "kc", server=fault_proxy.url)
    client = connect(BraidConfig(kubeconfig=str(kubeconfig)), {})
    started = ClusterCaches(client, node_name="node-a", watch_timeout=3, claims=True)
    started.start()
    try:
        yield started
    finally:
        started.stop()
        client.close()


def add(
    node: Node, dra: Dra, uid: str, caches: ClusterCaches | None = None
) -> tuple[dict[str, Any], int]:
    """An ADD of the pod, braid-thin's way (live reads) or the daemon's (``caches``)."""
    return add_pod(node, dra.ns, POD, uid, caches)


def add_pod(
    node: Node, ns: str, pod: str, uid: str, caches: ClusterCaches | None = None
) -> tuple[dict[str, Any], int]:
    """An ADD of ``ns/pod``, braid-thin's way (live reads) or the daemon's (``caches``); kubelet
    reports the pod without device-plugin devices."""
    conf = device_conf(node)
    with FakeKubelet(conf["podResourcesSocket"], {(ns, pod): [[]]}):
        if caches is None:
            return node.run("ADD", namespace=ns, pod=pod, uid=uid, **conf)
        args = f"K8S_POD_NAMESPACE={ns};K8S_POD_NAME={pod};K8S_POD_UID={uid}"
        env = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "ctr1", "CNI_NETNS": node.netns,
               "CNI_IFNAME": "eth0", "CNI_PATH": "", "CNI_ARGS": args}  # fmt: skip
        out, code = Engine(session=store_sessions(caches.store, read_pod_devices)).run(
            env, json.dumps(node.conf(**conf)).encode()
        )
        return (json.loads(out) if out.strip() else {}), code


def bare_results(node: Node) -> None:
    """fakesec answers a result with no interface and no IP: what a driver's networkData fills."""
    (node.state / "fakesec.json").write_text(
        json.dumps({"ADD": {"stdout": '{"cniVersion": "1.0.0"}'}})
    )


def test_the_claims_devices_reach_the_delegates_and_network_data_the_status(
    node: Node, dra: Dra, kube_admin: kubernetes.client.ApiClient
) -> None:
    dra.claim()
    uid = dra.pod()
    dra.allocate(uid)
    bare_results(node)
    result, code = add(node, dra, uid)
    assert code == 0, result
    # Sorted device IDs, one per selection; gpu-0 carries no attributes and is left out.
    assert delegate_devices(node) == [("net1", "dra0"), ("net2", "dra1")]
    status = json.loads(read_pod(kube_admin, dra.ns, POD).metadata.annotations[STATUS_KEY])
    # The result names no interface: the status names none either (braid reports what ran).
    assert status[1] == {"name": f"{dra.ns}/dranet", "ips": ["10.9.0.5"],
                         "mac": "02:00:00:00:00:05", "default": False}  # fmt: skip
    assert "ips" not in status[2]
    assert "mac" not in status[2]


def test_the_delegates_own_result_wins_over_network_data(
    node: Node, dra: Dra, kube_admin: kubernetes.client.ApiClient
) -> None:
    dra.claim()
    uid = dra.pod()
    dra.allocate(uid)
    result, code = add(node, dra, uid)
    assert code == 0, result
    status = json.loads(read_pod(kube_admin, dra.ns, POD).metadata.annotations[STATUS_KEY])
    assert (status[1]["ips"], status[1]["mac"]) == (["10.0.0.2"], "02:00:00:00:00:05")


def test_the_daemon_caches_serve_the_claim_without_api_reads(
    node: Node, dra: Dra, caches: ClusterCaches, fault_proxy: faultproxy.FaultProxy
) -> None:
    dra.claim()
    uid = dra.pod()
    dra.allocate(uid)
    assert caches.claims is not None
    assert caches.slices is not None
    claims, slices = caches.claims, caches.slices
    assert wait_until(
        lambda: bool(
            ((claims.get(dra.ns, "net-claim") or {}).get("status") or {}).get("reservedFor")
        )
    )
    assert wait_until(lambda: caches.pods.get(dra.ns, POD) is not None)
    assert wait_until(
        lambda: any(s["metadata"]["name"] == f"{dra.ns}-slice" for s in slices.values())
    )
    # The cache's own read of the claim (one GET, never a LIST of every claim) is done.
    own = where(method="GET", path="/resourceclaims/")
    assert wait_until(lambda: len(fault_proxy.requests(own)) == claims.gets)
    assert fault_proxy.requests(where(path="/resourceclaims", watch=True)) == []
    before = len(fault_proxy.log)
    result, code = add(node, dra, uid, caches)
    assert code == 0, result
    assert delegate_devices(node) == [("net1", "dra0"), ("net2", "dra1")]
    # The one-object reads a miss makes (the watches' own LISTs are not a miss).
    misses = (f"/pods/{POD}", "/resourceclaims/net-claim", "spec.driver=")
    gets = fault_proxy.requests(where(method="GET", watch=False))[before:]
    assert [r for r in gets if any(m in r.path + str(r.query) for m in misses)] == []


@pytest.mark.parametrize("cached", [False, True], ids=["live", "cached"])
def test_a_claim_not_allocated_yet_is_error_11_then_the_retry_attaches(
    node: Node,
    dra: Dra,
    caches: ClusterCaches,
    cached: bool,
    kube_admin: kubernetes.client.ApiClient,
) -> None:
    dra.claim()
    uid = dra.pod()
    error, code = add(node, dra, uid, caches if cached else None)
    assert (code, error["code"]) == (1, 11)
    assert f"ResourceClaim {dra.ns}/net-claim is not allocated yet" in error["msg"]
    assert node.calls("ADD") == []
    assert STATUS_KEY not in (read_pod(kube_admin, dra.ns, POD).metadata.annotations or {})

    dra.allocate(uid)  # the cache may not have seen it yet: braid reads the claim live
    result, code = add(node, dra, uid, caches if cached else None)
    assert code == 0, result
    assert delegate_devices(node) == [("net1", "dra0"), ("net2", "dra1")]


def test_a_claim_shared_with_another_pod_is_error_11_nothing_attached(node: Node, dra: Dra) -> None:
    dra.claim()
    uid = dra.pod()
    dra.allocate(uid, also="other-pod")
    error, code = add(node, dra, uid)
    assert (code, error["code"]) == (1, 11)
    assert f"{dra.ns}/other-pod" in error["msg"]
    assert node.calls("ADD") == []


def test_a_claim_made_from_a_template_is_found_through_the_pod_status(
    node: Node, dra: Dra, kube_admin: kubernetes.client.ApiClient
) -> None:
    dra.claim("dra-pod-net-x7k2")  # the name the resourceclaim controller generates
    uid = dra.pod({"resourceClaimTemplateName": "net-template"})
    error, code = add(node, dra, uid)
    assert (code, error["code"]) == (1, 11), "the claim is not named in the pod's status yet"
    assert "not named in the pod's status.resourceClaimStatuses yet" in error["msg"]

    named = {"resourceClaimStatuses": [{"name": "net", "resourceClaimName": "dra-pod-net-x7k2"}]}
    kubernetes.client.CoreV1Api(kube_admin).patch_namespaced_pod_status(
        POD, dra.ns, {"status": named}
    )
    dra.allocate(uid, name="dra-pod-net-x7k2")
    result, code = add(node, dra, uid)
    assert code == 0, result
    assert delegate_devices(node) == [("net1", "dra0"), ("net2", "dra1")]


def test_a_claim_without_the_resources_devices_is_refused_with_an_event(
    node: Node, dra: Dra, kube_admin: kubernetes.client.ApiClient
) -> None:
    dra.claim()
    uid = dra.pod()
    # Allocated the attribute-less device alone: no device of the resource.
    results = [{"request": "gpu", "driver": DRIVER, "pool": dra.pool, "device": "gpu-0"}]
    status = {"allocation": {"devices": {"results": results}},
              "reservedFor": [{"resource": "pods", "name": POD, "uid": uid}]}  # fmt: skip
    dra.api.patch_namespaced_resource_claim_status("net-claim", dra.ns, {"status": status})
    error, code = add(node, dra, uid)
    assert (code, error["code"]) == (1, 7)
    assert "reports none for the pod" in error["msg"]
    assert [e[0] for e in events(kube_admin, dra.ns)] == ["NoDeviceFound"]
    assert node.calls("ADD") == []


DOC = Path(__file__).parents[2] / "docs" / "devices.md"


def documented() -> dict[str, dict[str, Any]]:
    """The DeviceClass, ResourceSlice, NAD, ResourceClaim and Pod of docs/devices.md, by kind."""
    blocks = [b.split("```", 1)[0] for b in DOC.read_text().split("```yaml dra\n")[1:]]
    objects = [yaml.safe_load(b) for b in blocks]
    return {o["kind"]: o for o in objects}


def create_documented_devices(
    api: kubernetes.client.ResourceV1Api,
    device_class: dict[str, Any],
    slice_: dict[str, Any],
    name: str,
    pool: str,
) -> None:
    """Creates the documented DeviceClass (one already there is fine) and the documented
    ResourceSlice as `name` in `pool`: one pool per test, the node's slices are shared."""
    try:
        api.create_device_class(device_class)
    except ApiException as exc:
        if exc.status != 409:
            raise
    slice_["metadata"]["name"] = name
    slice_["spec"]["pool"]["name"] = pool
    api.create_resource_slice(slice_)


def test_the_documented_objects_give_the_documented_devices(
    node: Node, kube_admin: kubernetes.client.ApiClient, kube_namespace: str
) -> None:
    ns, docs = kube_namespace, documented()
    assert sorted(docs) == sorted(
        ["DeviceClass", "ResourceSlice", "NetworkAttachmentDefinition", "ResourceClaim", "Pod"]
    )
    api = kubernetes.client.ResourceV1Api(kube_admin)
    slice_, pool = docs["ResourceSlice"], f"{ns}-node-a"
    create_documented_devices(api, docs["DeviceClass"], slice_, f"{ns}-vf", pool)
    nad = docs["NetworkAttachmentDefinition"]
    config = json.loads(nad["spec"]["config"])
    assert config["type"] == "sriov"
    nad["spec"]["config"] = json.dumps({**config, "type": "fakesec"})
    kubernetes.client.CustomObjectsApi(kube_admin).create_namespaced_custom_object(
        "k8s.cni.cncf.io", "v1", ns, "network-attachment-definitions", nad
    )
    api.create_namespaced_resource_claim(ns, docs["ResourceClaim"])
    pod = docs["Pod"]
    pod["spec"]["nodeName"] = "node-a"
    uid = str(kubernetes.client.CoreV1Api(kube_admin).create_namespaced_pod(ns, pod).metadata.uid)
    driver = slice_["spec"]["driver"]
    results = [
        {"request": "vfs", "driver": driver, "pool": pool, "device": d} for d in ("vf-2", "vf-1")
    ]
    status = {
        "allocation": {"devices": {"results": results}},
        "reservedFor": [{"resource": "pods", "name": "vf-app", "uid": uid}],
    }
    api.patch_namespaced_resource_claim_status("two-vfs", ns, {"status": status})
    conf = device_conf(node)
    with FakeKubelet(conf["podResourcesSocket"], {(ns, "vf-app"): [[]]}):
        result, code = node.run("ADD", namespace=ns, pod="vf-app", uid=uid, **conf)
    assert code == 0, result
    assert delegate_devices(node) == [("net1", "0000:03:00.1"), ("net2", "0000:03:00.2")]


def thief(dra: Dra, claim: str = "other-claim", *, node: str = "node-a") -> str:
    """Another pod of ``node`` whose own claim allocates nic-0 and is reserved for it."""
    dra.claim(claim)
    body = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "thief"},
        "spec": {
            "nodeName": node,
            "resourceClaims": [{"name": "net", "resourceClaimName": claim}],
            "containers": [{"name": "c", "image": "pause"}],
        },
    }  # fmt: skip
    created = kubernetes.client.CoreV1Api(dra.admin).create_namespaced_pod(dra.ns, body)
    results = [{"request": "nics", "driver": DRIVER, "pool": dra.pool, "device": "nic-0"}]
    reserved = [{"resource": "pods", "name": "thief", "uid": str(created.metadata.uid)}]
    status = {"allocation": {"devices": {"results": results}}, "reservedFor": reserved}
    dra.api.patch_namespaced_resource_claim_status(claim, dra.ns, {"status": status})
    return str(created.metadata.uid)


def test_the_daemon_refuses_a_device_another_claim_holds_for_another_pod(
    node: Node, dra: Dra, caches: ClusterCaches
) -> None:
    dra.claim()
    uid = dra.pod()
    dra.allocate(uid)
    thief(dra)  # a second allocation of nic-0, to another pod of the node
    assert caches.claims is not None
    other = caches.claims
    assert wait_until(
        lambda: "reservedFor" in (other.get(dra.ns, "other-claim") or {}).get("status", {})
    )
    assert wait_until(lambda: caches.pods.get(dra.ns, "thief") is not None)
    error, code = add(node, dra, uid, caches)
    assert (code, error["code"]) == (1, 11)
    assert f"{dra.ns}/thief" in error["msg"]
    assert node.calls("ADD") == []


def test_braid_thin_refuses_a_device_another_claim_holds_for_another_pod(
    node: Node, dra: Dra, fault_proxy: faultproxy.FaultProxy
) -> None:
    """Without the daemon's caches, the other claims are those the node's pods name: one
    paginated LIST of the node's pods, a GET of each claim, never a LIST of every claim."""
    dra.claim()
    uid = dra.pod()
    dra.allocate(uid)
    thief(dra)
    with mock.patch.object(listing, "PAGE_ITEMS", 1):  # every page is read
        error, code = add(node, dra, uid)
    assert (code, error["code"]) == (1, 11)
    assert f"{dra.ns}/thief" in error["msg"]
    assert node.calls("ADD") == []
    claim_lists = fault_proxy.requests(where(method="GET", path="resourceclaims"))
    assert all(not r.path.endswith("/resourceclaims") for r in claim_lists), claim_lists
    pod_lists = fault_proxy.requests(where(method="GET", path="/api/v1/pods"))
    assert {r.query.get("fieldSelector") for r in pod_lists} == {"spec.nodeName=node-a"}
    assert len(pod_lists) >= 2
    assert all(r.query.get("limit") == "1" for r in pod_lists)
    # The other claim gone: the same ADD goes through.
    dra.api.delete_namespaced_resource_claim("other-claim", dra.ns)
    result, code = add(node, dra, uid)
    assert code == 0, result


def test_a_claim_of_a_pod_of_another_node_holds_nothing_here(node: Node, dra: Dra) -> None:
    """A device is a node's: a claim allocating the same name to a pod elsewhere (a broken
    allocation) is not looked at."""
    dra.claim()
    uid = dra.pod()
    dra.allocate(uid)
    thief(dra, node="node-b")
    result, code = add(node, dra, uid)
    assert code == 0, result
