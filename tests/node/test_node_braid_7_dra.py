"""DRA on the node (docs/devices.md): a DRA driver's ResourceClaim allocates the device, braid
hands it to the attachment.

The test DRA driver (`node_dra.py`, `dra-driver/`: the kubeletplugin helper of
k8s.io/dynamic-resource-allocation) runs on the node and offers veths made for the test
(`bdra0`..`bdra3`, peers `bdrap0`..) in a ResourceSlice, each device with the attributes
`k8s.cni.cncf.io/resourceName: braid-test.example/dranet` and `k8s.cni.cncf.io/deviceID: <its
interface>`. Pods get devices through ResourceClaimTemplates of DeviceClass
`braid-test-dranet`; the scheduler allocates them and kubelet has the driver prepare them. The
NAD `dranet` has that resourceName; its delegate, `braid-devid-hostdev` (tests/node/plugins),
runs the reference `host-device` on the interface named by `runtimeConfig.deviceID`. Each test
checks, against the claim's allocation and with pyroute2 in the pod's namespace, that the
device allocated is the interface in the pod (by MAC), and that deleting the pod returns it
under its own name; `clean` checks nothing else is left.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import node_braid as nb
import node_dra
import pytest
import yaml
from node_braid import Braid
from node_cluster import Node
from node_dra import DraDriver
from pyroute2 import IPRoute

pytestmark = pytest.mark.timeout(420)

HERE = Path(__file__).resolve().parent
DEVICES = [f"bdra{n}" for n in range(4)]
DELEGATE = "braid-devid-hostdev"
NAD = "dranet"
CLAIM = "nics"
DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
DOC = HERE.parents[1] / "docs" / "devices.md"


def nad_manifest(namespace: str) -> dict[str, Any]:
    config = (
        '{"cniVersion": "1.0.0", "name": "dranet", "type": "braid-devid-hostdev", '
        '"capabilities": {"deviceID": true, "CNIDeviceInfoFile": true}}'
    )
    return {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": {
            "name": NAD,
            "namespace": namespace,
            "annotations": {"k8s.v1.cni.cncf.io/resourceName": node_dra.RESOURCE},
        },
        "spec": {"config": config},
    }


def claim_pod(node: Node, namespace: str, name: str, selections: int, template: str | None) -> None:
    """A pod selecting the NAD `selections` times, its container using the claim made from
    `template` (no claim at all when None)."""
    networks = ", ".join([NAD] * selections) if selections else None
    spec: dict[str, Any] = {}
    if template is not None:
        spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": template}]
        spec["container"] = {"resources": {"claims": [{"name": CLAIM}]}}
    node.apply(nb.pod_manifest(node, namespace, name, networks, **spec))


class Dra:
    """The test's devices (their MACs), the driver, and the claims' view of them."""

    def __init__(self, braid: Braid, driver: DraDriver, macs: dict[str, str]) -> None:
        self.node = braid.node
        self.driver = driver
        self.macs = macs

    def templates(self, namespace: str) -> None:
        """`one-nic` (1 device) and `two-nics` (2) in `namespace`, and the NAD."""
        self.node.apply([
            node_dra.claim_template(namespace, "one-nic", 1),
            node_dra.claim_template(namespace, "two-nics", 2),
            nad_manifest(namespace),
        ])  # fmt: skip

    def claim(self, namespace: str, pod: str) -> dict[str, Any]:
        """The ResourceClaim made for the pod's claim `nics`."""
        found = self.node.get("pod", pod, namespace) or {}
        names = [
            s.get("resourceClaimName")
            for s in found.get("status", {}).get("resourceClaimStatuses", [])
            if s.get("name") == CLAIM
        ]
        assert names, f"{namespace}/{pod} has no claim: {found.get('status')}"
        assert names[0], f"{namespace}/{pod}: its claim is not made yet"
        claim: dict[str, Any] = self.node.kubectl_json(
            "get", "resourceclaim", names[0], "-n", namespace
        )
        return claim

    def allocated(self, namespace: str, pod: str) -> list[str]:
        """The devices allocated to the pod's claim, sorted (all the driver's, on this node)."""
        claim = self.claim(namespace, pod)
        results = claim["status"]["allocation"]["devices"]["results"]
        assert {(r["driver"], r["pool"]) for r in results} == {
            (node_dra.DRIVER, self.node.node_name)
        }, results
        return sorted(r["device"] for r in results)

    def on_host(self) -> set[str]:
        with IPRoute() as ip:
            return {link.get_attr("IFLA_IFNAME") for link in ip.get_links()} & set(DEVICES)

    def check_network_data(self, namespace: str, pod: str, devices: list[str]) -> None:
        """The driver published each device's host interface and MAC in the claim's status."""
        status = self.claim(namespace, pod)["status"].get("devices", [])
        published = {s["device"]: s.get("networkData") for s in status}
        assert published == {
            d: {"interfaceName": d, "hardwareAddress": self.macs[d]} for d in devices
        }, status

    def check_pod(self, namespace: str, pod: str, count: int) -> list[str]:
        """The pod holds, as net1..netN, the devices allocated to its claim (lowest first),
        and network-status names them; returns the devices."""
        given = self.allocated(namespace, pod)
        self.check_devices(namespace, pod, given, count)
        return given

    def check_devices(self, namespace: str, pod: str, given: list[str], count: int) -> None:
        """The pod holds `given` (`count` of them, lowest first) as net1..netN, network-status
        names them, and none is left on the host."""
        assert len(given) == count, given
        links = nb.PodNetwork(self.node, namespace, pod).links()
        status = {s["interface"]: s for s in nb.wait_status(self.node, namespace, pod, 1 + count)}
        for index, device in enumerate(given, start=1):
            ifname = f"net{index}"
            assert links[ifname]["mac"] == self.macs[device], (ifname, device, links)
            assert status[ifname]["name"] == f"{namespace}/{NAD}"
            assert status[ifname]["mac"] == self.macs[device]
        assert not set(given) & self.on_host()

    def wait_returned(self, *devices: str) -> None:
        def probe() -> bool:
            with IPRoute() as ip:
                found = {
                    link.get_attr("IFLA_IFNAME"): link.get_attr("IFLA_ADDRESS")
                    for link in ip.get_links()
                }
            return all(found.get(d) == self.macs[d] for d in devices)

        self.node.wait_for(f"{devices} back on the node", probe, timeout=60)

    def wait_claims_gone(self, namespace: str) -> None:
        """The pods' claims deleted with them and the driver told so (it holds no device)."""
        self.node.wait_for(
            f"the ResourceClaims of {namespace} deleted",
            lambda: not self.node.kubectl_json("get", "resourceclaims", "-n", namespace)["items"],
            timeout=60,
        )


def make_veths() -> dict[str, str]:
    macs = {}
    with IPRoute() as ip:
        for index, name in enumerate(DEVICES):
            for stale in ip.link_lookup(ifname=name) + ip.link_lookup(ifname=f"bdrap{index}"):
                ip.link("del", index=stale)  # a killed run's: the tier's own names
            ip.link("add", ifname=name, kind="veth", peer=f"bdrap{index}")
            (link,) = ip.get_links(ifname=name)
            macs[name] = link.get_attr("IFLA_ADDRESS")
    return macs


def remove_veths() -> None:
    with IPRoute() as ip:
        for index in range(len(DEVICES)):
            for name in (f"bdrap{index}", DEVICES[index]):
                for found in ip.link_lookup(ifname=name):
                    ip.link("del", index=found)


@contextlib.contextmanager
def running(braid: Braid, device_class: dict[str, Any]) -> Iterator[Dra]:
    """The veths, the delegate in /opt/cni/bin, braid pointed at the node's kubelet (it asks
    its PodResources API too), `device_class` and the DRA driver running; all undone
    afterwards."""
    node = braid.node
    macs = make_veths()
    delegate = Path("/opt/cni/bin") / DELEGATE
    shutil.copy2(HERE / "plugins" / DELEGATE, delegate)
    braid.configure(podResourcesSocket=str(node.kubelet_root_dir / "pod-resources/kubelet.sock"))
    node.apply(device_class)
    driver = DraDriver(node, DEVICES)
    try:
        driver.start()
        yield Dra(braid, driver, macs)
    finally:
        try:
            driver.stop()
        finally:
            name = device_class["metadata"]["name"]
            node.kubectl("delete", "deviceclass", name, "--ignore-not-found")
            braid.configure(podResourcesSocket=DEFAULT_SOCKET)
            delegate.unlink()
            remove_veths()


@pytest.fixture(scope="module")
def dra(braid: Braid) -> Iterator[Dra]:
    with running(braid, node_dra.device_class()) as found:
        yield found


def test_the_driver_publishes_its_devices_and_prepares_claims(
    dra: Dra, namespace: str, clean: dict[str, Any]
) -> None:
    """Without braid in the way: the slice, the allocation, kubelet's prepare and unprepare."""
    node = dra.node
    (found,) = dra.driver.slices()
    assert found["spec"]["nodeName"] == node.node_name
    assert found["spec"]["pool"]["name"] == node.node_name
    devices = {d["name"]: d["attributes"] for d in found["spec"]["devices"]}
    assert devices == {
        name: {
            "k8s.cni.cncf.io/resourceName": {"string": node_dra.RESOURCE},
            "k8s.cni.cncf.io/deviceID": {"string": name},
        }
        for name in DEVICES
    }
    dra.templates(namespace)
    claim_pod(node, namespace, "plain", selections=0, template="one-nic")
    node.wait_pod(namespace, "plain")
    (device,) = dra.allocated(namespace, "plain")
    dra.check_network_data(namespace, "plain", [device])
    assert dra.on_host() == set(DEVICES), "no NAD selected: the device stays on the node"
    claim = dra.claim(namespace, "plain")["metadata"]
    logged = f'claim="{namespace}/{claim["name"]}" uid="{claim["uid"]}" devices=["{device}"]'
    assert dra.driver.logged("prepared", logged)
    nb.delete_pods(node, namespace, "plain")
    dra.wait_claims_gone(namespace)
    node.wait_for(
        "the driver unpreparing the claim", lambda: dra.driver.logged("unprepared", logged)
    )


def test_each_pod_gets_its_claimed_device(dra: Dra, namespace: str, clean: dict[str, Any]) -> None:
    node = dra.node
    dra.templates(namespace)
    for pod in ("first", "second"):
        claim_pod(node, namespace, pod, selections=1, template="one-nic")
    for pod in ("first", "second"):
        node.wait_pod(namespace, pod)
    (first,) = dra.check_pod(namespace, "first", 1)
    (second,) = dra.check_pod(namespace, "second", 1)
    assert first != second
    nb.delete_pods(node, namespace, "first", "second")
    dra.wait_returned(first, second)
    dra.wait_claims_gone(namespace)


def test_two_selections_two_devices(dra: Dra, namespace: str, clean: dict[str, Any]) -> None:
    node = dra.node
    dra.templates(namespace)
    claim_pod(node, namespace, "pair", selections=2, template="two-nics")
    node.wait_pod(namespace, "pair")
    first, second = dra.check_pod(namespace, "pair", 2)
    assert first != second
    dra.check_network_data(namespace, "pair", [first, second])
    nb.delete_pods(node, namespace, "pair")
    dra.wait_returned(first, second)
    dra.wait_claims_gone(namespace)


def test_kubelet_restart_keeps_the_mapping(dra: Dra, namespace: str, clean: dict[str, Any]) -> None:
    node = dra.node
    dra.templates(namespace)
    claim_pod(node, namespace, "kept", selections=2, template="two-nics")
    node.wait_pod(namespace, "kept")
    before = dra.check_pod(namespace, "kept", 2)
    registered = dra.driver.registrations()
    node.restart_kubelet()
    node.wait_for(
        "kubelet registering the DRA driver again",
        lambda: dra.driver.registrations() > registered,
        timeout=60,
    )
    assert dra.check_pod(namespace, "kept", 2) == before
    claim_pod(node, namespace, "after", selections=1, template="one-nic")
    node.wait_pod(namespace, "after")
    (other,) = dra.check_pod(namespace, "after", 1)
    assert other not in before
    nb.delete_pods(node, namespace, "kept", "after")
    dra.wait_returned(*before, other)
    dra.wait_claims_gone(namespace)


def test_a_pod_without_a_claim_is_refused(dra: Dra, namespace: str, clean: dict[str, Any]) -> None:
    node = dra.node
    dra.templates(namespace)
    claim_pod(node, namespace, "none", selections=1, template=None)
    refused = node.wait_for(
        "braid refusing the pod's sandbox",
        lambda: [
            m
            for m in nb.events_of(node, namespace, "FailedCreatePodSandBox")
            if f"{namespace}/{NAD}" in m
        ],
        timeout=90,
        namespace=namespace,
    )
    assert node_dra.RESOURCE in refused[0], refused[0]
    assert nb.events_of(node, namespace, "NoDeviceFound")
    assert dra.on_host() == set(DEVICES)
    pod = node.get("pod", "none", namespace)
    assert pod is not None
    assert pod["status"]["phase"] == "Pending"
    nb.delete_pods(node, namespace, "none")


def documented() -> list[dict[str, Any]]:
    """docs/devices.md, "Tested setup: DRA" (its `yaml node-tier-dra` blocks)."""
    blocks = DOC.read_text().split("```yaml node-tier-dra\n")[1:]
    return [yaml.safe_load(b.split("```", 1)[0]) for b in blocks]


def test_the_documented_manifests_are_the_ones_applied() -> None:
    """What docs/devices.md shows is what this file applies (no cluster needed)."""
    device_class, template, nad, pod = documented()
    assert device_class == node_dra.device_class()
    assert template == node_dra.claim_template("ns", "one-nic", 1) | {
        "metadata": {"name": "one-nic"}
    }
    applied = nad_manifest("ns")
    del applied["metadata"]["namespace"]
    assert nad == applied

    class Recorder:
        busybox_image = pod["spec"]["containers"][0]["image"]

        def apply(self, manifest: dict[str, Any]) -> None:
            self.manifest = manifest

    recorder = Recorder()
    claim_pod(recorder, "ns", "first", selections=1, template="one-nic")  # type: ignore[arg-type]
    made = recorder.manifest
    assert made["metadata"]["annotations"] == pod["metadata"]["annotations"]
    assert made["spec"]["resourceClaims"] == pod["spec"]["resourceClaims"]
    ((container,), (shown,)) = made["spec"]["containers"], pod["spec"]["containers"]
    assert container == shown
