"""The engine's device steps over fake plugins (no namespaces: an ADD that gets past them
stops at the interface check): refusals before any delegate runs and before kubelet is asked
when they can, kubelet's failures as error 11, the device-information files of a failed ADD
removed, and grpc imported only by a call that needs devices."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "fixtures" / "podresources"))

from fake_kubelet import FakeKubelet

from braid.engine import Engine, run_cni
from braid.k8s.select import open_call_session

NIC = "vendor.example/nic"
ANNOTATIONS = "io.kubernetes.cri.pod-annotations"
NO_NETNS = "/nonexistent"  # an ADD past the device steps stops at the interface check
PODS = {("default", "web-0"): [[(NIC, ["d2", "d1"])]]}


def write_nad(dirs: Any, name: str, resource: str | None) -> None:
    config = {"cniVersion": "1.0.0", "type": "fakesec", "capabilities": {"deviceID": True}}
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if resource is not None:
        metadata["annotations"] = {"k8s.v1.cni.cncf.io/resourceName": resource}
    manifest = {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": metadata,
        "spec": {"config": json.dumps(config)},
    }
    (dirs.root / "nads" / f"{name}.json").write_text(json.dumps(manifest))


@pytest.fixture
def devices(dirs: Any) -> Any:
    write_nad(dirs, "sriov", NIC)
    write_nad(dirs, "plain", None)
    (dirs.root / "devinfo" / "dp").mkdir(parents=True)
    return dirs


def stdin(dirs: Any, networks: Any, **extra: Any) -> bytes:
    value = networks if isinstance(networks, str) else json.dumps(networks)
    return dirs.stdin(
        runtimeConfig={ANNOTATIONS: {"k8s.v1.cni.cncf.io/networks": value}},
        podResourcesSocket=str(dirs.root / "kubelet.sock"),
        deviceInfoDir=str(dirs.root / "devinfo"),
        podResourcesTimeout=1,
        **extra,
    )


def add(dirs: Any, networks: Any, **extra: Any) -> dict[str, Any]:
    out, code = Engine(session=open_call_session).run(
        dirs.env("ADD", CNI_NETNS=NO_NETNS), stdin(dirs, networks, **extra)
    )
    assert code == 1
    error: dict[str, Any] = json.loads(out)
    return error


def braid_files(dirs: Any) -> list[Path]:
    cni = dirs.root / "devinfo" / "cni"
    return sorted(cni.rglob("*")) if cni.exists() else []


def test_a_pod_without_the_resource_is_refused_before_any_delegate(devices: Any) -> None:
    with FakeKubelet(str(devices.root / "kubelet.sock"), {}) as kubelet:
        error = add(devices, "sriov")
    assert error["code"] == 7
    assert "vendor.example/nic" in error["msg"]
    assert kubelet.calls == ["Get", "List"]  # not found by Get: List tells the same
    assert devices.calls("ADD") == []
    assert braid_files(devices) == []


def test_the_device_id_request_is_refused_without_asking_kubelet(devices: Any) -> None:
    with FakeKubelet(str(devices.root / "kubelet.sock"), PODS) as kubelet:
        error = add(devices, [{"name": "sriov", "deviceID": "d9"}])
    assert error["code"] == 7
    assert kubelet.calls == []
    assert devices.calls("ADD") == []


def test_an_allowed_device_id_request_goes_through(devices: Any) -> None:
    with FakeKubelet(str(devices.root / "kubelet.sock"), PODS):
        error = add(devices, [{"name": "sriov", "deviceID": "d9"}], allowDeviceIDRequests=True)
    assert error["msg"].startswith("listing interfaces"), error  # past the device steps


@pytest.mark.parametrize("device", ["d\x009", "", "d 9", "d\n9", "d" * 257])
def test_an_allowed_request_of_no_device_id_is_code_7(devices: Any, device: str) -> None:
    with FakeKubelet(str(devices.root / "kubelet.sock"), PODS):
        error = add(devices, [{"name": "sriov", "deviceID": device}], allowDeviceIDRequests=True)
    assert error["code"] == 7, error
    assert "is not a device ID" in error["msg"]
    assert devices.calls("ADD") == []
    assert braid_files(devices) == []


def test_no_device_nad_no_kubelet(devices: Any) -> None:
    error = add(devices, "plain")  # no socket at all: it is never asked
    assert error["msg"].startswith("listing interfaces"), error


@pytest.mark.parametrize("garbage", [False, True])
def test_kubelet_missing_or_garbled_is_error_11(devices: Any, garbage: bool) -> None:
    if garbage:
        with FakeKubelet(str(devices.root / "kubelet.sock"), PODS, garbage=True):
            error = add(devices, "sriov")
    else:
        error = add(devices, "sriov")
    assert error["code"] == 11
    assert devices.calls("ADD") == []


def test_a_device_plugin_file_not_json_fails_before_any_delegate(devices: Any) -> None:
    (devices.root / "devinfo" / "dp" / "vendor.example-nic-d1-device.json").write_text("{")
    with FakeKubelet(str(devices.root / "kubelet.sock"), PODS):
        error = add(devices, "sriov")
    assert error["code"] == 6
    assert devices.calls("ADD") == []
    assert braid_files(devices) == []


def test_a_failed_add_removes_the_device_info_files_it_wrote(devices: Any) -> None:
    dp = devices.root / "devinfo" / "dp" / "vendor.example-nic-d1-device.json"
    dp.write_text(json.dumps({"type": "pci", "version": "1.1.0"}))
    with FakeKubelet(str(devices.root / "kubelet.sock"), PODS):
        error = add(devices, "sriov")
    assert error["msg"].startswith("listing interfaces"), error
    assert braid_files(devices) == []
    assert dp.exists(), "the device plugin's own file stays"


PROBE = """
import json, sys
from braid.engine import Engine, run_cni
from braid.k8s.select import open_call_session
from braid.k8s.select import open_call_session
Engine(session=open_call_session).run(json.loads(sys.argv[1]), sys.stdin.buffer.read())
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("grpc", "google"))))
"""


@pytest.mark.parametrize(("network", "imports"), [("plain", False), ("sriov", True)])
def test_grpc_is_imported_only_for_devices(devices: Any, network: str, imports: bool) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(devices.env("ADD", CNI_NETNS=NO_NETNS))],
        input=stdin(devices, network),
        capture_output=True,
        check=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "FAKE_CNI_STATE": str(devices.state)},
    )
    loaded = json.loads(proc.stdout.splitlines()[-1])
    assert bool(loaded) is imports, loaded


def test_del_removes_the_containers_device_info_files(devices: Any) -> None:
    own = devices.root / "devinfo" / "cni" / "ctr1"
    own.mkdir(parents=True)
    (own / "net1-device.json").write_text("{}")
    other = devices.root / "devinfo" / "cni" / "ctr2"
    other.mkdir()
    (other / "net1-device.json").write_text("{}")
    assert run_cni(devices.env("DEL"), stdin(devices, "plain")) == (b"", 0)
    assert not own.exists()
    assert (other / "net1-device.json").exists(), "another container's files stay"


def test_a_failed_del_keeps_them_for_its_retry(devices: Any) -> None:
    own = devices.root / "devinfo" / "cni" / "ctr1"
    own.mkdir(parents=True)
    (own / "net1-device.json").write_text("{}")
    devices.behave("fakesec", "DEL", exit=1, stdout='{"code": 100, "msg": "busy"}')
    out, code = run_cni(devices.env("DEL"), stdin(devices, "plain"))
    assert code == 1, out
    assert (own / "net1-device.json").exists()


def test_gc_removes_the_device_info_files_of_containers_it_deletes(devices: Any) -> None:
    records = devices.cni_dir / "records"
    records.mkdir(parents=True)
    for cid in ("gone", "alive"):
        (devices.root / "devinfo" / "cni" / cid).mkdir(parents=True)
        (devices.root / "devinfo" / "cni" / cid / "net1-device.json").write_text("{}")
        record = {"containerId": cid, "netns": "", "kind": "braidAttachmentRecord", "version": 1}
        (records / f"{cid}.json").write_text(json.dumps(record))
    valid = [{"containerID": "alive", "ifname": "eth0"}]
    gc = stdin(devices, "plain", cniVersion="1.1.0", **{"cni.dev/valid-attachments": valid})
    assert run_cni(devices.env("GC"), gc) == (b"", 0)
    assert not (devices.root / "devinfo" / "cni" / "gone").exists()
    assert (devices.root / "devinfo" / "cni" / "alive" / "net1-device.json").exists()


NO_GRPC = """
import json, sys

class NoGrpc:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("grpc", "google"):
            raise ImportError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoGrpc())
from braid.engine import Engine, run_cni
from braid.k8s.select import open_call_session
from braid.k8s.select import open_call_session
out, code = Engine(session=open_call_session).run(json.loads(sys.argv[1]), sys.stdin.buffer.read())
sys.stdout.buffer.write(out)
"""


def test_without_grpc_a_resource_nad_is_refused_naming_the_extra(devices: Any) -> None:
    """grpcio and protobuf are the `devices` extra: without them a NAD with a resourceName is
    a clear configuration error, not a traceback, and nothing is attached."""
    with FakeKubelet(str(devices.root / "kubelet.sock"), PODS):
        proc = subprocess.run(
            [sys.executable, "-c", NO_GRPC, json.dumps(devices.env("ADD", CNI_NETNS=NO_NETNS))],
            input=stdin(devices, "sriov"),
            capture_output=True,
            check=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "FAKE_CNI_STATE": str(devices.state)},
        )
    error = json.loads(proc.stdout)
    assert error["code"] == 7, error
    assert "braid-cni[devices]" in error["msg"], error
    assert braid_files(devices) == []
