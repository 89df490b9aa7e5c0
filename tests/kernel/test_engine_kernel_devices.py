"""Devices on the real kernel: NADs annotated `k8s.v1.cni.cncf.io/resourceName`, kubelet's
PodResources API served for real by grpcio on a unix socket, a real bridge delegate chained
with a plugin that records the `deviceID` and device-information file it got.

Each attachment gets its own device, in selection order; the device plugin's file reaches the
delegate and the delegate's own device-information reaches network-status; DEL removes the
files braid wrote. A pod without the resource, a kubelet that is missing, slow or garbled, a
device-plugin file that is not JSON: the ADD fails before anything is attached. The same
through a real `braidctl daemon` process.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_daemon import Daemon, call

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures" / "podresources"))

import device_recorder
from fake_kubelet import FakeKubelet

pytestmark = pytest.mark.kernel

NIC = "vendor.example/nic"
NET_D = "10.231.41.0/24"
DEVICES = ["0000:03:00.2", "0000:03:00.1"]  # kubelet's order; braid sorts them
OWN_INFO = {"type": "pci", "version": "1.1.0", "pci": {"pci-address": "set-by-delegate"}}


class Devices:
    """One pod's device world: the engine, the kubelet socket, the devinfo directory."""

    def __init__(self, engine: EngineSetup) -> None:
        self.engine = engine
        self.socket = str(engine.root / "kubelet.sock")
        self.devinfo = engine.root / "devinfo"
        self.log = engine.root / "devrec.jsonl"
        (self.devinfo / "dp").mkdir(parents=True)
        recorder = device_recorder.install(engine.plugin_dir)
        self.write_nad("sriov-a", recorder, own_info=None)
        self.write_nad("sriov-b", recorder, own_info=OWN_INFO)

    def write_nad(self, name: str, recorder: str, own_info: dict[str, Any] | None) -> None:
        bridge = bridge_nad(self.engine, "kbr4", NET_D)
        step: dict[str, Any] = {
            "type": recorder,
            "log": str(self.log),
            "capabilities": {"deviceID": True, "CNIDeviceInfoFile": True},
        }
        if own_info is not None:
            step["ownInfo"] = own_info
        config = {"cniVersion": "1.0.0", "plugins": [bridge, step]}
        manifest = {
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": {
                "name": name,
                "namespace": "default",
                "annotations": {"k8s.v1.cni.cncf.io/resourceName": NIC},
            },
            "spec": {"config": json.dumps(config)},
        }
        (self.engine.nad_dir / f"{name}.json").write_text(json.dumps(manifest))

    def dp_file(self, device: str) -> Path:
        return self.devinfo / "dp" / f"vendor.example-nic-{device}-device.json"

    def conf(self) -> dict[str, Any]:
        return {
            "podResourcesSocket": self.socket,
            "deviceInfoDir": str(self.devinfo),
            "podResourcesTimeout": 1,
        }

    def run(self, command: str, networks: str) -> tuple[Any, int]:
        return self.engine.run(command, {NETWORKS: networks}, **self.conf())

    def recorded(self, command: str) -> list[dict[str, Any]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [e for e in map(json.loads, lines) if e["command"] == command]

    def braid_files(self) -> list[Path]:
        cni = self.devinfo / "cni"
        return sorted(cni.rglob("*")) if cni.exists() else []

    def assert_nothing_attached(self) -> None:
        assert self.recorded("ADD") == []
        assert set(kernel.links(self.engine.pod.name)) == {"lo"}
        assert self.braid_files() == []
        assert not self.engine.record_path.exists()


@pytest.fixture
def devices(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> Devices:
    return Devices(make_engine(host_netns, pod_netns, tmp_path))


def pods(*devices: str) -> dict[tuple[str, str], Any]:
    return {("default", "web-0"): [[(NIC, list(devices))]]}


@pytest.mark.parametrize("get", ["serve", "unimplemented"])
def test_two_attachments_of_a_resource_get_two_devices_and_their_info(
    devices: Devices, get: str
) -> None:
    info = {"type": "pci", "version": "1.1.0", "pci": {"pci-address": DEVICES[1]}}
    devices.dp_file(DEVICES[1]).write_text(json.dumps(info))
    with FakeKubelet(devices.socket, pods(*DEVICES), get=get) as kubelet:
        result, code = devices.run("ADD", "sriov-a, sriov-b")
    assert code == 0, result
    assert kubelet.calls == (["Get"] if get == "serve" else ["Get", "List"])

    added = devices.recorded("ADD")
    assert [(e["ifname"], e["deviceID"]) for e in added] == [
        ("net1", "0000:03:00.1"),
        ("net2", "0000:03:00.2"),
    ]
    assert added[0]["held"] == info, "the device plugin's file reached the delegate"
    assert added[1]["held"] is None, "no device-plugin file: none is made up"
    links = kernel.links(devices.engine.pod.name)
    assert {"eth0", "net1", "net2"} <= set(links)

    status = devices.engine.record()["networkStatus"]
    assert [s.get("device-info") for s in status] == [None, info, OWN_INFO]
    assert len(devices.braid_files()) == 3  # the container's directory and two files

    devices.engine.delete("sriov-a, sriov-b", **devices.conf())
    deleted = devices.recorded("DEL")
    assert sorted(e["deviceID"] for e in deleted) == sorted(DEVICES)
    assert devices.braid_files() == []
    devices.engine.assert_nothing_left()


def test_a_pod_without_the_resource_is_refused_nothing_attached(devices: Devices) -> None:
    with FakeKubelet(devices.socket, {("default", "web-0"): [[("other.example/gpu", ["g"])]]}):
        error, code = devices.run("ADD", "sriov-a")
    assert (code, error["code"]) == (1, 7)
    assert "reports none for the pod" in error["msg"]
    devices.assert_nothing_attached()


def test_more_selections_than_devices_is_refused(devices: Devices) -> None:
    with FakeKubelet(devices.socket, pods(DEVICES[0])):
        error, code = devices.run("ADD", "sriov-a, sriov-b")
    assert (code, error["code"]) == (1, 7)
    devices.assert_nothing_attached()


def test_the_selections_own_device_id_is_refused(devices: Devices) -> None:
    networks = json.dumps([{"name": "sriov-a", "deviceID": "0000:99:00.0"}])
    with FakeKubelet(devices.socket, pods(*DEVICES)) as kubelet:
        error, code = devices.run("ADD", networks)
    assert (code, error["code"]) == (1, 7)
    assert "allowDeviceIDRequests" in error["msg"]
    assert kubelet.calls == []
    devices.assert_nothing_attached()


@pytest.mark.parametrize("how", ["missing", "slow", "garbage"])
def test_a_kubelet_that_does_not_answer_is_error_11_nothing_attached(
    devices: Devices, how: str
) -> None:
    if how == "missing":
        error, code = devices.run("ADD", "sriov-a")
    else:
        kubelet = FakeKubelet(
            devices.socket,
            pods(*DEVICES),
            delay=3.0 if how == "slow" else 0.0,
            garbage=how == "garbage",
        )
        with kubelet:
            error, code = devices.run("ADD", "sriov-a")
    assert (code, error["code"]) == (1, 11), error
    devices.assert_nothing_attached()


def test_the_same_device_for_two_pods_is_error_11(devices: Devices) -> None:
    both = {**pods(DEVICES[0]), ("default", "web-9"): [[(NIC, [DEVICES[0]])]]}
    with FakeKubelet(devices.socket, both, get="unimplemented"):
        error, code = devices.run("ADD", "sriov-a")
    assert (code, error["code"]) == (1, 11)
    assert "default/web-9" in error["msg"]
    devices.assert_nothing_attached()


@pytest.mark.parametrize("content", [b"not json", b"{" * 70000, b"[]"])
def test_a_device_plugin_file_that_is_not_json_or_huge_fails_the_add(
    devices: Devices, content: bytes
) -> None:
    devices.dp_file(DEVICES[1]).write_bytes(content)
    with FakeKubelet(devices.socket, pods(*DEVICES)):
        error, code = devices.run("ADD", "sriov-a")
    assert (code, error["code"]) == (1, 6)
    assert str(devices.dp_file(DEVICES[1])) in error["msg"]
    devices.assert_nothing_attached()


@pytest.fixture
def daemon(devices: Devices, tmp_path: Path) -> Iterator[Daemon]:
    running = Daemon(devices.engine.host, tmp_path / "run", tmp_path / "daemon.log").start()
    yield running
    running.stop()
    assert running.wait() == 0


def test_the_daemon_attaches_devices_and_refuses_a_pod_without_them(
    devices: Devices, daemon: Daemon
) -> None:
    engine = devices.engine
    stdin = engine.braid_conf({NETWORKS: "sriov-a, sriov-b"}, **devices.conf())
    with FakeKubelet(devices.socket, {}):
        error, code = call(daemon, engine, "ADD", stdin)
    assert (code, error["code"]) == (1, 7)
    devices.assert_nothing_attached()

    with FakeKubelet(devices.socket, pods(*DEVICES)):
        result, code = call(daemon, engine, "ADD", stdin)
    assert code == 0, result
    added = devices.recorded("ADD")
    assert [(e["ifname"], e["deviceID"]) for e in added] == [
        ("net1", "0000:03:00.1"),
        ("net2", "0000:03:00.2"),
    ]
    assert engine.settled_record()["networkStatus"][2]["device-info"] == OWN_INFO

    assert call(daemon, engine, "DEL", stdin) == (None, 0)
    assert devices.braid_files() == []
    engine.assert_nothing_left()
