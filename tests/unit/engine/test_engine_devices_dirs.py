"""The device-information directories braid makes and walks: every level it creates is 0700
under umask 0, and a level that is a link (planted at `deviceInfoDir`, `cni` or
`cni/<container>`), not a directory, or not root's is refused at ADD, at DEL and when the
files are read back, never followed: the link's target is left as it was."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from braid.config.schema import BraidConfig
from braid.engine.context import EngineContext
from braid.engine.devices import device_infos, remove_device_info, write_device_info
from braid.engine.record import RECORD_KIND, RECORD_VERSION, AttachmentEntry, AttachmentRecord
from braid.engine.request import CniRequest, read_request
from braid.errors import IO_FAILURE, CniError
from braid.nad.devices import DEVICE_INFO_FILE, Assignment, DeviceAssignments
from braid.nad.plan import Attachment, AttachmentPlan

NIC = "vendor.example/nic"
INFO = {"type": "pci", "version": "1.1.0"}
LEVELS = ["devinfo", "devinfo/cni", "devinfo/cni/ctr1"]


@pytest.fixture
def umask_0() -> Iterator[None]:
    before = os.umask(0)
    yield
    os.umask(before)


def plan(devinfo: Path) -> DeviceAssignments:
    target = f"{devinfo}/cni/ctr1/net1-device.json"
    attachment = Attachment(
        position=1,
        ifname="net1",
        status_name="default/sriov",
        network_name="sriov",
        config=b"{}",
        is_list=False,
        source="test",
        label="entry 0 (default/sriov)",
        capability_args={DEVICE_INFO_FILE: target},
    )
    dp_file = f"{devinfo}/dp/vendor.example-nic-d1-device.json"
    return DeviceAssignments(
        plan=AttachmentPlan("default", "web-0", "", (attachment,)),
        assignments=(Assignment(1, NIC, "d1", dp_file),),
    )


def record_of(devices: DeviceAssignments) -> AttachmentRecord:
    """The record of `devices`' plan: its entries name the device-information files."""
    entries = [AttachmentEntry.of(a, dict(a.capability_args)) for a in devices.plan.attachments]
    return AttachmentRecord(
        container_id="ctr1", netns="", kind=RECORD_KIND, version=RECORD_VERSION, attachments=entries
    )


def request() -> CniRequest:
    env = {
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": "ctr1",
        "CNI_NETNS": "/var/run/netns/x",
        "CNI_IFNAME": "eth0",
        "CNI_PATH": "",
    }
    return read_request(env, b"{}")


def context(devinfo: Path) -> EngineContext:
    return EngineContext(config=BraidConfig(device_info_dir=str(devinfo)))


def write_dp(dp: Path) -> None:
    dp.mkdir(parents=True, exist_ok=True)
    (dp / "vendor.example-nic-d1-device.json").write_text(json.dumps(INFO))


def test_every_level_braid_creates_is_0700_under_umask_0(tmp_path: Path, umask_0: None) -> None:
    devinfo = tmp_path / "a" / "b" / "devinfo"
    write_dp(tmp_path / "dp-elsewhere")  # no dp file under devinfo: braid creates it all
    devices = plan(devinfo)
    dp_file = str(tmp_path / "dp-elsewhere" / "vendor.example-nic-d1-device.json")
    devices = DeviceAssignments(plan=devices.plan, assignments=(Assignment(1, NIC, "d1", dp_file),))

    write_device_info(context(devinfo), request(), devices)

    written = devinfo / "cni" / "ctr1" / "net1-device.json"
    assert json.loads(written.read_text()) == INFO
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    for level in [tmp_path / "a", tmp_path / "a" / "b", devinfo, devinfo / "cni", written.parent]:
        assert stat.S_IMODE(level.stat().st_mode) == 0o700, level

    remove_device_info(context(devinfo), record_of(plan(devinfo)))
    assert not written.parent.exists()
    assert (devinfo / "cni").is_dir()


def plant_link(tmp_path: Path, level: str) -> tuple[Path, Path]:
    """The devinfo tree with a link at `level` to a directory holding the same tree and a
    `net1-device.json` of its own; returns the devinfo directory and that file."""
    devinfo = tmp_path / "devinfo"
    target = tmp_path / "target"
    for root in (devinfo, target / "devinfo"):
        write_dp(root / "dp")
        (root / "cni" / "ctr1").mkdir(parents=True)
        (root / "cni" / "ctr1" / "net1-device.json").write_text('{"target": true}')
    link = tmp_path / level
    real = target / level
    if link.exists():
        link.rename(tmp_path / "moved")
    link.symlink_to(real, target_is_directory=True)
    return devinfo, real


@pytest.mark.parametrize("level", LEVELS)
def test_a_link_at_any_level_is_refused_at_add(tmp_path: Path, level: str) -> None:
    devinfo, real = plant_link(tmp_path, level)
    before = snapshot(tmp_path / "target")

    with pytest.raises(CniError) as caught:
        write_device_info(context(devinfo), request(), plan(devinfo))

    assert caught.value.code == IO_FAILURE
    assert "is a link or not a directory" in caught.value.details, caught.value
    assert snapshot(tmp_path / "target") == before, "the link's target is untouched"
    assert (tmp_path / level).is_symlink()
    assert real.is_dir()


@pytest.mark.parametrize("level", LEVELS)
def test_a_link_at_any_level_is_not_followed_at_del(tmp_path: Path, level: str) -> None:
    devinfo, _ = plant_link(tmp_path, level)
    before = snapshot(tmp_path / "target")

    remove_device_info(context(devinfo), record_of(plan(devinfo)))  # logged, never raised

    assert snapshot(tmp_path / "target") == before, "the link's target is untouched"
    assert (tmp_path / level).is_symlink()


@pytest.mark.parametrize("level", LEVELS)
def test_a_link_at_any_level_is_not_read_through(tmp_path: Path, level: str) -> None:
    devinfo, _ = plant_link(tmp_path, level)
    entry = AttachmentEntry(
        status_name="default/sriov",
        network_name="sriov",
        ifname="net1",
        config="{}",
        position=1,
        capability_args={DEVICE_INFO_FILE: f"{devinfo}/cni/ctr1/net1-device.json"},
    )
    record = AttachmentRecord(
        container_id="ctr1", netns="", kind="k", version=1, attachments=[entry]
    )
    assert device_infos(context(devinfo), record) == {}
    (tmp_path / level).unlink()
    (tmp_path / "moved").rename(tmp_path / level)
    assert device_infos(context(devinfo), record) == {1: {"target": True}}


def test_a_level_that_is_a_file_or_not_roots_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    devinfo = tmp_path / "devinfo"
    write_dp(devinfo / "dp")
    (devinfo / "cni").write_text("")
    with pytest.raises(CniError, match="written in"):
        write_device_info(context(devinfo), request(), plan(devinfo))
    (devinfo / "cni").unlink()
    (devinfo / "cni" / "ctr1").mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(devinfo / "cni" / "ctr1", 65534, 65534)
    else:
        monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)
    with pytest.raises(CniError) as caught:
        write_device_info(context(devinfo), request(), plan(devinfo))
    assert "not a directory of braid's user" in caught.value.details
    assert list((devinfo / "cni" / "ctr1").iterdir()) == []


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` (links not followed) with its content or kind."""
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path)] = f"-> {path.readlink()}"
        elif path.is_file():
            found[str(path)] = path.read_text()
        else:
            found[str(path)] = "dir"
    return found
