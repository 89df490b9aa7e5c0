"""The engine's device steps one by one: through the node's root (the daemon in its
container: kubelet's socket and the device-information files opened through the root, the
delegate given the node's paths), and the device-information read back after the delegates."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "fixtures" / "podresources"))

from fake_kubelet import FakeKubelet

from braid.cni.hostroot import HostRoot
from braid.config.schema import BraidConfig
from braid.engine.context import EngineContext
from braid.engine.devices import (
    device_infos,
    plan_devices,
    remove_device_info,
    write_device_info,
)
from braid.engine.record import RECORD_KIND, RECORD_VERSION, AttachmentEntry, AttachmentRecord
from braid.engine.request import CniRequest, read_request
from braid.errors import INVALID_CONFIG, TRY_AGAIN_LATER, CniError
from braid.k8s.podresources import read_pod_devices
from braid.nad.devices import DEVICE_ID, DEVICE_INFO_FILE, RESOURCE_NAME_ANNOTATION
from braid.nad.plan import Attachment, AttachmentPlan, PodRef

NIC = "vendor.example/nic"
SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
DEVINFO = "/var/run/k8s.cni.cncf.io/devinfo"


def device_plan() -> AttachmentPlan:
    """A pod's plan with one attachment of a NAD that has a resourceName."""
    attachment = Attachment(
        position=1,
        ifname="net1",
        status_name="default/sriov",
        network_name="sriov",
        config=b"{}",
        is_list=False,
        source="test",
        label="entry 0 (default/sriov)",
        nad_annotations={RESOURCE_NAME_ANNOTATION: NIC},
    )
    return AttachmentPlan("default", "web-0", "", (attachment,))


@pytest.fixture
def root() -> Iterator[Path]:
    # Short: the socket's whole path must fit a unix socket address (108 bytes).
    path = Path(tempfile.mkdtemp(prefix="hr", dir="/tmp"))
    (path / "var" / "lib" / "kubelet" / "pod-resources").mkdir(parents=True)
    (path / "run" / "k8s.cni.cncf.io" / "devinfo" / "dp").mkdir(parents=True)
    (path / "var" / "run").symlink_to("/run")  # as on Debian: absolute, inside the root
    yield path
    shutil.rmtree(path)


def test_socket_and_files_are_reached_through_the_nodes_root(root: Path) -> None:
    info = {"type": "pci", "version": "1.1.0"}
    dp = root / "run" / "k8s.cni.cncf.io" / "devinfo" / "dp" / "vendor.example-nic-d1-device.json"
    dp.write_text(json.dumps(info))
    ctx = EngineContext(config=BraidConfig(), root=HostRoot(str(root)), kubelet=read_pod_devices)
    plan = device_plan()
    pods = {("default", "web-0"): [[(NIC, ["d1"])]]}
    with FakeKubelet(str(root / SOCKET.lstrip("/")), pods):
        devices = plan_devices(ctx, PodRef("default", "web-0"), "ctr1", plan)
    caps = devices.plan.attachments[0].capability_args
    node_path = f"{DEVINFO}/cni/ctr1/net1-device.json"
    assert caps == {DEVICE_ID: "d1", DEVICE_INFO_FILE: node_path}

    write_device_info(ctx, _request("ctr1"), devices)
    written = root / "run" / "k8s.cni.cncf.io" / "devinfo" / "cni" / "ctr1" / "net1-device.json"
    assert json.loads(written.read_text()) == info
    assert not (root / "var" / "run" / "k8s.cni.cncf.io").is_symlink()

    entries = [AttachmentEntry.of(a, dict(a.capability_args)) for a in devices.plan.attachments]
    record = AttachmentRecord(
        container_id="ctr1", netns="", kind=RECORD_KIND, version=RECORD_VERSION, attachments=entries
    )
    remove_device_info(ctx, record)
    assert not written.parent.exists()
    assert dp.exists()


def _request(container_id: str) -> CniRequest:
    env = {
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": container_id,
        "CNI_NETNS": "/var/run/netns/x",
        "CNI_IFNAME": "eth0",
        "CNI_PATH": "",
    }
    return read_request(env, b"{}")


def test_a_looping_link_to_the_socket_is_error_11(root: Path) -> None:
    shutil.rmtree(root / "var" / "lib")
    (root / "var" / "lib").symlink_to("/var/lib")  # resolves to itself inside the root
    ctx = EngineContext(config=BraidConfig(), root=HostRoot(str(root)), kubelet=read_pod_devices)
    plan = device_plan()
    with pytest.raises(CniError) as caught:
        plan_devices(ctx, PodRef("default", "web-0"), "ctr1", plan)
    assert caught.value.code == TRY_AGAIN_LATER


def test_without_a_kubelet_reader_a_resource_nad_is_refused() -> None:
    """The engine asks kubelet only through its caller's reader: without one, a NAD with a
    resourceName is a configuration error (code 7), before anything is attached."""
    ctx = EngineContext(config=BraidConfig())
    with pytest.raises(CniError) as caught:
        plan_devices(ctx, PodRef("default", "web-0"), "ctr1", device_plan())
    assert caught.value.code == INVALID_CONFIG
    assert "no way to ask kubelet" in caught.value.msg


def test_device_info_is_read_only_from_braids_own_files(tmp_path: Path) -> None:
    """What a delegate left that is not JSON or is huge is left out (logged); a path braid did
    not make (a runtime's own `CNIDeviceInfoFile`) is never read."""
    devinfo = tmp_path / "devinfo"
    own = devinfo / "cni" / "ctr1"
    own.mkdir(parents=True)
    (own / "net1-device.json").write_text('{"type": "pci"}')
    (own / "net2-device.json").write_text("{" * 70000)
    (own / "net3-device.json").write_text("not json")
    secret = tmp_path / "secret.json"
    secret.write_text('{"token": "x"}')
    files = {1: own / "net1-device.json", 2: own / "net2-device.json",
             3: own / "net3-device.json", 4: secret}  # fmt: skip
    entries = [
        AttachmentEntry(
            status_name=f"default/n{p}",
            network_name=f"n{p}",
            ifname=f"net{p}",
            config="{}",
            position=p,
            capability_args={DEVICE_INFO_FILE: str(path)},
        )
        for p, path in files.items()
    ]
    record = AttachmentRecord(
        container_id="ctr1", netns="", kind="k", version=1, attachments=entries
    )
    ctx = EngineContext(config=BraidConfig(device_info_dir=str(devinfo)))
    assert device_infos(ctx, record) == {1: {"type": "pci"}}
