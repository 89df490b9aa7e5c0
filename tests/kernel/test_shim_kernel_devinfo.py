"""The compiled `braid` shim's DEL replay, daemon away, removes the device-information files
braid wrote for the container (`docs/devices.md`): the ADD is a real engine ADD of a NAD with a
resourceName (kubelet's PodResources API served by grpcio), the DEL the shim alone replaying the
attachment record, under `ip netns exec` in the test's private host namespace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kernel_netns
import pytest
from engine_fixtures import make_engine
from test_engine_kernel_devices import DEVICES, Devices, pods

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures" / "podresources"))

from fake_kubelet import FakeKubelet

pytestmark = pytest.mark.kernel

DEL_ARGS = "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0;K8S_POD_UID=del-uid"


@pytest.fixture
def devices(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> Devices:
    return Devices(make_engine(host_netns, pod_netns, tmp_path))


def attach(devices: Devices) -> Path:
    """An ADD of two attachments with devices; the container's device-information directory."""
    info = {"type": "pci", "version": "1.1.0", "pci": {"pci-address": DEVICES[1]}}
    devices.dp_file(DEVICES[1]).write_text(json.dumps(info))
    with FakeKubelet(devices.socket, pods(*DEVICES)):
        result, code = devices.run("ADD", "sriov-a, sriov-b")
    assert code == 0, result
    own = devices.devinfo / "cni" / devices.engine.container_id
    assert sorted(p.name for p in own.iterdir()) == ["net1-device.json", "net2-device.json"]
    return own


def shim_del(devices: Devices, shim: Path, socket_dir: Path) -> tuple[int, bytes, bytes]:
    engine = devices.engine
    stdin = engine.braid_conf(None, daemonSocketDir=str(socket_dir), **devices.conf())
    env = {**os.environ, **engine.env("DEL"), "CNI_ARGS": DEL_ARGS}
    argv = ["ip", "netns", "exec", engine.host.name, str(shim)]
    proc = subprocess.run(argv, env=env, input=stdin, capture_output=True, timeout=90, check=False)
    assert b"Traceback" not in proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def test_the_replayed_del_removes_the_files_and_a_planted_link_not_its_target(
    devices: Devices, shim: Path, no_daemon_dir: Path
) -> None:
    own = attach(devices)
    target = devices.engine.root / "elsewhere.json"
    target.write_text("{}")
    (own / "planted").symlink_to(target)
    (own / "up").symlink_to(devices.devinfo)
    other = devices.devinfo / "cni" / "another-container"
    other.mkdir()
    (other / "net1-device.json").write_text("{}")

    code, stdout, stderr = shim_del(devices, shim, no_daemon_dir)

    assert (code, stdout) == (0, b""), stderr
    assert not own.exists()
    assert not own.is_symlink()
    assert target.read_text() == "{}", "the link was removed, not followed"
    assert devices.devinfo.is_dir()
    assert (other / "net1-device.json").read_text() == "{}"
    assert sorted(p.name for p in devices.devinfo.iterdir()) == ["cni", "dp"]
    devices.engine.assert_nothing_left()


@pytest.mark.parametrize("level", ["", "cni", "cni/CTR"])
def test_a_link_planted_at_any_level_is_not_followed(
    devices: Devices, shim: Path, no_daemon_dir: Path, level: str
) -> None:
    """`deviceInfoDir`, its `cni` or the container's directory moved away and a link put in
    its place: the replay tears the attachments down and leaves the link's target whole."""
    own = attach(devices)
    relative = level.replace("CTR", own.name)
    link = devices.devinfo / relative if relative else devices.devinfo
    moved = devices.engine.root / "moved"
    link.rename(moved)
    link.symlink_to(moved, target_is_directory=True)
    kept = moved / own.relative_to(link) if relative != f"cni/{own.name}" else moved
    before = sorted(p.name for p in kept.iterdir())

    code, stdout, stderr = shim_del(devices, shim, no_daemon_dir)

    assert (code, stdout) == (0, b""), stderr
    assert b"is a link or not a directory" in stderr, stderr
    assert before == ["net1-device.json", "net2-device.json"]
    assert sorted(p.name for p in kept.iterdir()) == before
    assert link.is_symlink()
    assert not devices.engine.record_path.exists()


def test_a_directory_not_named_by_the_container_is_left(
    devices: Devices, shim: Path, no_daemon_dir: Path
) -> None:
    """The record names a device-information file outside the container's directory: the
    replay tears the attachments down and leaves that directory (and the container's)."""
    own = attach(devices)
    stranger = devices.devinfo / "cni" / "another-container"
    stranger.mkdir()
    (stranger / "net1-device.json").write_text("{}")
    record = devices.engine.record_path
    text = record.read_text()
    assert text.count(str(own) + "/") == 2
    record.write_text(text.replace(str(own) + "/", str(stranger) + "/"))

    code, stdout, stderr = shim_del(devices, shim, no_daemon_dir)

    assert (code, stdout) == (0, b""), stderr
    assert not record.exists()
    assert (stranger / "net1-device.json").read_text() == "{}"
    assert sorted(p.name for p in own.iterdir()) == ["net1-device.json", "net2-device.json"]


def test_a_failure_to_remove_is_logged_and_the_del_succeeds(
    devices: Devices, shim: Path, no_daemon_dir: Path
) -> None:
    own = attach(devices)
    (own / "sub").mkdir()
    (own / "sub" / "keep.json").write_text("{}")

    code, stdout, stderr = shim_del(devices, shim, no_daemon_dir)

    assert (code, stdout) == (0, b""), stderr
    assert b"device-information files in" in stderr
    assert b"sub is a directory" in stderr
    assert sorted(p.name for p in own.iterdir()) == ["sub"]
    assert (own / "sub" / "keep.json").read_text() == "{}"
    assert not devices.engine.record_path.exists()
