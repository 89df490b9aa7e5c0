"""DRA extended resources on the node (docs/devices.md, "A device as an extended resource"):
a pod asks for the test DRA driver's device as the extended resource
`braid-test.example/dranet` in its container's `resources.limits`, with no ResourceClaim of
its own; a DeviceClass with that `extendedResourceName` (DRAExtendedResource, alpha in
Kubernetes 1.34, turned on in the node's control plane and kubelet) makes the real scheduler
create the pod's claim, allocate it and record it in the pod's
`status.extendedResourceClaimStatus`; kubelet has the driver prepare it; braid gives the
device to the NAD whose resourceName is that extended resource.

The world is test_node_braid_7_dra.py's (veths `bdra0`..`bdra3`, the driver, the NAD `dranet`,
its delegate `braid-devid-hostdev`) with the DeviceClass `braid-test-dranet-extended`. Checked
against the scheduler's claim and with pyroute2 in the pod's namespace: the devices allocated
are the interfaces in the pod (by MAC), network-status names them, and deleting the pod
returns them under their own names; `clean` checks nothing else is left.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import node_braid as nb
import node_dra
import pytest
import yaml
from node_braid import Braid
from node_cluster import Node
from test_node_braid_7_dra import DOC, NAD, Dra, nad_manifest, running

pytestmark = pytest.mark.timeout(420)

REQUEST = "container-0-request-0"  # the scheduler's: container 0, its request 0 (sorted names)


def extended_pod(node: Node, namespace: str, name: str, count: int) -> dict[str, Any]:
    """A pod selecting the NAD `count` times, its container asking for `count` devices as
    the extended resource."""
    limits = {"resources": {"limits": {node_dra.RESOURCE: str(count)}}}
    networks = ", ".join([NAD] * count)
    return nb.pod_manifest(node, namespace, name, networks, container=limits)


@pytest.fixture(scope="module")
def dra(braid: Braid) -> Iterator[Dra]:
    with running(braid, node_dra.extended_device_class()) as found:
        yield found


def extended_claim(dra: Dra, namespace: str, pod: str) -> dict[str, Any]:
    """The claim the scheduler made for the pod, as the pod's status names it; checks the
    status is the scheduler's."""
    found = dra.node.get("pod", pod, namespace) or {}
    status = found.get("status", {}).get("extendedResourceClaimStatus")
    assert status, f"{namespace}/{pod}: no extendedResourceClaimStatus: {found.get('status')}"
    assert status["requestMappings"] == [
        {"containerName": "main", "resourceName": node_dra.RESOURCE, "requestName": REQUEST}
    ]
    name = status["resourceClaimName"]
    assert name.startswith(f"{pod}-extended-resources-"), name
    claim: dict[str, Any] = dra.node.kubectl_json("get", "resourceclaim", name, "-n", namespace)
    annotations = claim["metadata"].get("annotations", {})
    assert annotations.get("resource.kubernetes.io/extended-resource-claim") == "true"
    (owner,) = claim["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Pod",
        pod,
        found["metadata"]["uid"],
        True,
    )
    return claim


def check_pod(dra: Dra, namespace: str, pod: str, count: int) -> list[str]:
    """The pod holds, as net1..netN, the devices allocated to its extended-resource claim
    (lowest first), and network-status names them; returns the devices."""
    claim = extended_claim(dra, namespace, pod)
    results = claim["status"]["allocation"]["devices"]["results"]
    assert {(r["driver"], r["pool"], r["request"]) for r in results} == {
        (node_dra.DRIVER, dra.node.node_name, REQUEST)
    }, results
    given = sorted(r["device"] for r in results)
    dra.check_devices(namespace, pod, given, count)
    meta = claim["metadata"]
    prepared = f'claim="{namespace}/{meta["name"]}" uid="{meta["uid"]}"'
    assert any(
        '] "prepared" ' in line and prepared in line for line in dra.driver.log().splitlines()
    ), "the driver prepared the scheduler's claim"
    return given


def test_a_pod_asking_for_the_extended_resource_gets_the_devices(
    dra: Dra, namespace: str, clean: dict[str, Any]
) -> None:
    node = dra.node
    node.apply(nad_manifest(namespace))
    node.apply(extended_pod(node, namespace, "pair", 2))
    node.apply(extended_pod(node, namespace, "single", 1))
    node.wait_pod(namespace, "pair")
    node.wait_pod(namespace, "single")
    pair = check_pod(dra, namespace, "pair", 2)
    (single,) = check_pod(dra, namespace, "single", 1)
    assert single not in pair
    nb.delete_pods(node, namespace, "pair", "single")
    dra.wait_returned(*pair, single)
    dra.wait_claims_gone(namespace)


def documented() -> list[dict[str, Any]]:
    """docs/devices.md's `yaml node-tier-dra-extended` blocks."""
    blocks = DOC.read_text().split("```yaml node-tier-dra-extended\n")[1:]
    return [yaml.safe_load(b.split("```", 1)[0]) for b in blocks]


def test_the_documented_manifests_are_the_ones_applied() -> None:
    """What docs/devices.md shows is what this file applies (no cluster needed)."""
    device_class, pod = documented()
    assert device_class == node_dra.extended_device_class()
    image = pod["spec"]["containers"][0]["image"]
    assert image == Node.busybox_image
    applied = extended_pod(cast("Node", Node), "ns", "single", 1)
    del applied["metadata"]["namespace"]
    assert pod == applied
