"""Devices on the node (docs/devices.md): kubelet allocates them, braid hands them out.

The test device plugin (`node_device_plugin.py`, kubelet's device plugin API v1beta1) runs on
the node and advertises veths made for the test (`bdev0`..`bdev3`, peers `bdevp0`..) as
resource `braid-test.example/nic`, with an NPWG device-information file each. The NAD
`nic-net` has that resourceName; its delegate, `braid-devid-hostdev` (tests/node/plugins),
runs the reference `host-device` on the interface named by `runtimeConfig.deviceID`. Each test
checks, against kubelet's PodResources API and with pyroute2 in the pod's namespace, that the
interface kubelet allocated is the one in the pod (by MAC), that network-status carries its
device-info, and that deleting the pod returns the interface under its own name and removes
braid's device-information files; `clean` checks nothing else is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import node_braid as nb
import node_host
import pytest
import yaml
from node_braid import Braid
from node_cluster import Node
from pyroute2 import IPRoute
from runtime_cri import SANDBOX_READY

from braid.k8s.podresources import api_pb2, api_pb2_grpc

pytestmark = pytest.mark.timeout(420)

HERE = Path(__file__).resolve().parent
DOC = HERE.parents[1] / "docs" / "devices.md"
RESOURCE = "braid-test.example/nic"
DEVICES = [f"bdev{n}" for n in range(4)]
DEVINFO = Path("/run/k8s.cni.cncf.io")  # /var/run/k8s.cni.cncf.io: /var/run is /run
DP_DIR = DEVINFO / "devinfo" / "dp"
CNI_DIR = DEVINFO / "devinfo" / "cni"
DELEGATE = "braid-devid-hostdev"
NAD = "nic-net"
DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"


def documented() -> tuple[dict[str, Any], dict[str, Any]]:
    """The NAD and the pod of docs/devices.md, "Tested setup" (its `yaml node-tier` blocks)."""
    blocks = [b.split("```", 1)[0] for b in DOC.read_text().split("```yaml node-tier\n")[1:]]
    nad, pod = (yaml.safe_load(b) for b in blocks)
    return nad, pod


def nad_manifest(namespace: str) -> dict[str, Any]:
    nad, _ = documented()
    nad["metadata"]["namespace"] = namespace
    return nad


def nic_pod(node: Node, namespace: str, name: str, selections: int, request: int) -> None:
    """The documented pod, named `name`, selecting the NAD `selections` times and requesting
    `request` devices (no `resources` at all for 0)."""
    _, pod = documented()
    pod["metadata"].update(name=name, namespace=namespace)
    pod["metadata"]["annotations"][nb.NETWORKS] = ", ".join([NAD] * selections)
    (container,) = pod["spec"]["containers"]
    if request:
        for kind in ("requests", "limits"):
            container["resources"][kind] = {RESOURCE: str(request)}
    else:
        del container["resources"]
    node.apply(pod)


class Devices:
    """The test's devices: their MACs, the plugin's device-information, kubelet's view."""

    def __init__(self, braid: Braid, macs: dict[str, str], socket: Path, log: Path) -> None:
        self.braid = braid
        self.node = braid.node
        self.macs = macs
        self.socket = socket
        self.log = log

    def registrations(self) -> int:
        """How often kubelet accepted the plugin (its log's `registered` lines)."""
        return self.log.read_text().splitlines().count("registered")

    def wait_registered(self, times: int) -> None:
        self.node.wait_for(
            f"the device plugin registered {times} time(s)",
            lambda: self.registrations() >= times,
            timeout=60,
        )

    def dp_info(self, device: str) -> dict[str, Any]:
        path = DP_DIR / f"{RESOURCE.replace('/', '-')}-{device}-device.json"
        found: dict[str, Any] = json.loads(path.read_text())
        return found

    def allocated(self, namespace: str, pod: str) -> list[str]:
        """The pod's devices of RESOURCE, as kubelet's PodResources List reports them."""
        with grpc.insecure_channel(f"unix:{self.socket}") as channel:
            stub = api_pb2_grpc.PodResourcesListerStub(channel)
            listed = stub.List(api_pb2.ListPodResourcesRequest(), timeout=10)
        found = []
        for entry in listed.pod_resources:
            if (entry.namespace, entry.name) != (namespace, pod):
                continue
            for container in entry.containers:
                for group in container.devices:
                    if group.resource_name == RESOURCE:
                        found.extend(group.device_ids)
        return sorted(found)

    def on_host(self) -> set[str]:
        with IPRoute() as ip:
            return {link.get_attr("IFLA_IFNAME") for link in ip.get_links()} & set(DEVICES)

    def check_pod(self, namespace: str, pod: str, count: int) -> list[str]:
        """The pod holds, as net1..netN, the devices kubelet gave it (lowest ID first), and
        its network-status carries each one's device-information; returns the devices."""
        given = self.allocated(namespace, pod)
        assert len(given) == count, given
        links = nb.PodNetwork(self.node, namespace, pod).links()
        status = {s["interface"]: s for s in nb.wait_status(self.node, namespace, pod, 1 + count)}
        for index, device in enumerate(given, start=1):
            ifname = f"net{index}"
            assert links[ifname]["mac"] == self.macs[device], (ifname, device, links)
            assert status[ifname]["name"] == f"{namespace}/{NAD}"
            assert status[ifname]["device-info"] == self.dp_info(device)
        assert not set(given) & self.on_host()
        return given

    def container_files(self, namespace: str, pod: str) -> list[str]:
        """braid's device-information files of the pod's running sandbox."""
        (sandbox,) = [s for s in self.node.sandboxes(namespace, pod) if s.state == SANDBOX_READY]
        directory = CNI_DIR / sandbox.id
        return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []

    def wait_returned(self, *devices: str) -> None:
        self.node.wait_for(
            f"{devices} back on the node", lambda: set(devices) <= self.on_host(), timeout=60
        )

    def wait_allocatable(self, count: int) -> None:
        def probe() -> bool:
            found = self.node.get("node", self.node.node_name) or {}
            allocatable = found.get("status", {}).get("allocatable", {})
            return bool(allocatable.get(RESOURCE) == str(count))

        self.node.wait_for(f"{count} {RESOURCE} allocatable on the node", probe, timeout=90)


def braid_files() -> list[str]:
    """What braid's device-information directory holds (the per-container directories)."""
    return sorted(p.name for p in CNI_DIR.iterdir()) if CNI_DIR.is_dir() else []


def make_veths() -> dict[str, str]:
    remove_veths()  # a killed run's: the tier's own names
    macs = {}
    with IPRoute() as ip:
        for index, name in enumerate(DEVICES):
            ip.link("add", ifname=name, kind="veth", peer=f"bdevp{index}")
            (link,) = ip.link("get", ifname=name)
            macs[name] = link.get_attr("IFLA_ADDRESS")
    return macs


def remove_veths() -> None:
    """Deletes the pairs (either end takes the other with it)."""
    with IPRoute() as ip:
        for index, device in enumerate(DEVICES):
            for name in (f"bdevp{index}", device):
                found = ip.link_lookup(ifname=name)
                if found:
                    ip.link("del", index=found[0])


@pytest.fixture(scope="module")
def devinfo_dir() -> Iterator[None]:
    """The NPWG directory, the node's own tmpfs (hack/node/tier.sh; the daemon mounts it
    read-write), emptied afterwards."""
    assert node_host.mounts_under(DEVINFO, itself=True), f"{DEVINFO} is not the node's tmpfs"
    try:
        yield
    finally:
        node_host.empty_directory(DEVINFO)


@pytest.fixture(scope="module")
def devices(braid: Braid, devinfo_dir: None) -> Iterator[Devices]:
    """The veths, the delegate in /opt/cni/bin, braid pointed at the node's kubelet, and the
    device plugin running; all undone afterwards."""
    node = braid.node
    macs = make_veths()
    shutil.copy2(HERE / "plugins" / DELEGATE, Path("/opt/cni/bin") / DELEGATE)
    socket = node.kubelet_root_dir / "pod-resources" / "kubelet.sock"
    braid.configure(podResourcesSocket=str(socket))
    log_path = node.log_dir / "device-plugin.log"
    log_path.unlink(missing_ok=True)
    log = log_path.open("ab")
    plugin = subprocess.Popen(
        [sys.executable, str(HERE / "node_device_plugin.py"),
         "--plugin-dir", str(node.device_plugin_dir),
         "--resource", RESOURCE, "--devinfo-dir", str(DP_DIR), *DEVICES],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    found = Devices(braid, macs, socket, log_path)
    try:
        found.wait_registered(1)
        found.wait_allocatable(len(DEVICES))
        yield found
    finally:
        plugin.send_signal(signal.SIGTERM)
        stopped = plugin.wait(20)
        log.close()
        braid.configure(podResourcesSocket=DEFAULT_SOCKET)
        (Path("/opt/cni/bin") / DELEGATE).unlink()
        remove_veths()
        assert stopped == 0, f"the device plugin exited with {stopped}"
        assert not list(DP_DIR.iterdir()), "the device plugin left its files"


def test_one_device(devices: Devices, namespace: str, clean: dict[str, Any]) -> None:
    node = devices.node
    node.apply(nad_manifest(namespace))
    nic_pod(node, namespace, "one", selections=1, request=1)
    node.wait_pod(namespace, "one")
    (device,) = devices.check_pod(namespace, "one", 1)
    assert devices.container_files(namespace, "one") == ["net1-device.json"]
    nb.delete_pods(node, namespace, "one")
    devices.wait_returned(device)
    assert braid_files() == []


def test_two_selections_two_devices(devices: Devices, namespace: str,
                                    clean: dict[str, Any]) -> None:  # fmt: skip
    node = devices.node
    node.apply(nad_manifest(namespace))
    _, pod = documented()  # as the page shows it: two selections, two devices
    node.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(pod))
    node.wait_pod(namespace, "nic-pod")
    first, second = devices.check_pod(namespace, "nic-pod", 2)
    assert first != second
    files = devices.container_files(namespace, "nic-pod")
    assert files == ["net1-device.json", "net2-device.json"]
    nb.delete_pods(node, namespace, "nic-pod")
    devices.wait_returned(first, second)
    assert braid_files() == []


def test_pod_without_the_resource_is_refused(devices: Devices, namespace: str,
                                             clean: dict[str, Any]) -> None:  # fmt: skip
    node = devices.node
    node.apply(nad_manifest(namespace))
    nic_pod(node, namespace, "none", selections=1, request=0)
    wanted = "reports none for the pod; request it in the pod's containers"
    refused = node.wait_for(
        "braid refusing the pod's sandbox",
        lambda: [m for m in nb.events_of(node, namespace, "FailedCreatePodSandBox") if wanted in m],
        timeout=90,
        namespace=namespace,
    )
    assert f"{namespace}/{NAD}" in refused[0], refused[0]
    assert RESOURCE in refused[0], refused[0]
    devices_events = nb.events_of(node, namespace, "NoDeviceFound")
    assert any(wanted in m for m in devices_events), devices_events
    assert devices.on_host() == set(DEVICES)
    pod = node.get("pod", "none", namespace)
    assert pod is not None
    assert pod["status"]["phase"] == "Pending"
    nb.delete_pods(node, namespace, "none")


def test_kubelet_restart_keeps_the_mapping(devices: Devices, namespace: str,
                                           clean: dict[str, Any]) -> None:  # fmt: skip
    node = devices.node
    node.apply(nad_manifest(namespace))
    nic_pod(node, namespace, "kept", selections=2, request=2)
    node.wait_pod(namespace, "kept")
    before = devices.check_pod(namespace, "kept", 2)
    registered = devices.registrations()
    node.restart_kubelet()
    # kubelet empties its device plugin directory when it starts: the plugin registers again.
    devices.wait_registered(registered + 1)
    devices.wait_allocatable(len(DEVICES))
    # kubelet lists a pod's resources once its pod sources delivered the pod again.
    node.wait_for(
        "kubelet reporting the pod's devices again",
        lambda: devices.allocated(namespace, "kept"),
        timeout=60,
    )
    assert devices.check_pod(namespace, "kept", 2) == before
    nic_pod(node, namespace, "after", selections=1, request=1)
    node.wait_pod(namespace, "after")
    (other,) = devices.check_pod(namespace, "after", 1)
    assert other not in before
    nb.delete_pods(node, namespace, "kept", "after")
    devices.wait_returned(*before, other)
    assert braid_files() == []


def test_delegate_refuses_a_config_without_device_id(devices: Devices) -> None:
    """braid-devid-hostdev's own contract: without runtimeConfig.deviceID it answers error 7
    and never runs host-device."""
    config = {"cniVersion": "1.0.0", "name": "x", "type": DELEGATE}
    env = {**os.environ, "CNI_COMMAND": "ADD", "CNI_CONTAINERID": "c", "CNI_NETNS": "/x",
           "CNI_IFNAME": "net1", "CNI_PATH": "/opt/cni/bin"}  # fmt: skip
    done = subprocess.run([str(Path("/opt/cni/bin") / DELEGATE)], input=json.dumps(config),
                          capture_output=True, text=True, env=env, check=False)  # fmt: skip
    assert done.returncode == 1
    assert json.loads(done.stdout)["code"] == 7
