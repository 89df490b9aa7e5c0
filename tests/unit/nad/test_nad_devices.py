"""Which device each attachment of a NAD with a resourceName gets, the refusals, and the
device-information files (naming, bounds, what is not JSON)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from braid.errors import DECODE_FAILURE, INVALID_CONFIG, IO_FAILURE, TRY_AGAIN_LATER, CniError
from braid.nad.devices import (
    DEVICE_ID,
    DEVICE_INFO_FILE,
    MAX_DEVICE_INFO_BYTES,
    RESOURCE_NAME_ANNOTATION,
    DeviceRefused,
    assign_devices,
    check_requests,
    cni_info_path,
    dp_info_path,
    needs_devices,
    read_device_info,
)
from braid.nad.plan import Attachment, AttachmentPlan

NIC = "vendor.example/nic"
SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"


def attachment(position: int, resource: str | None = None, **caps: Any) -> Attachment:
    return Attachment(
        position=position,
        ifname="eth0" if position == 0 else f"net{position}",
        status_name=f"default/n{position}",
        network_name=f"n{position}",
        config=b"{}",
        is_list=False,
        source="test",
        label=f"entry {position}",
        is_default=position == 0,
        capability_args=dict(caps),
        nad_annotations={RESOURCE_NAME_ANNOTATION: resource} if resource is not None else {},
    )


def plan(*attachments: Attachment) -> AttachmentPlan:
    return AttachmentPlan("default", "web-0", "uid", tuple(attachments))


def assign(p: AttachmentPlan, devices: dict[str, list[str]], **kw: Any) -> Any:
    return assign_devices(
        p,
        devices,
        info_path=lambda a: cni_info_path("/run/devinfo", "ctr1", a.ifname),
        dp_dir="/run/devinfo",
        socket=SOCKET,
        **kw,
    )


def test_each_attachment_gets_a_distinct_device_in_plan_order_ids_sorted() -> None:
    p = plan(attachment(0), attachment(1, NIC), attachment(2, NIC), attachment(3))
    done = assign(p, {NIC: ["0000:03:00.3", "0000:03:00.1", "0000:03:00.2"]})
    caps = [a.capability_args for a in done.plan.attachments]
    assert caps[0] == {}
    assert caps[3] == {}
    assert caps[1] == {
        DEVICE_ID: "0000:03:00.1",
        DEVICE_INFO_FILE: "/run/devinfo/cni/ctr1/net1-device.json",
    }
    assert caps[2][DEVICE_ID] == "0000:03:00.2"
    assert [(a.position, a.device) for a in done.assignments] == [
        (1, "0000:03:00.1"),
        (2, "0000:03:00.2"),
    ]
    assert done.assignments[0].dp_file == (
        "/run/devinfo/dp/vendor.example-nic-0000:03:00.1-device.json"
    )


def test_the_same_device_reported_twice_for_the_pod_is_given_once() -> None:
    # kubelet reports a device an init container handed on in both containers.
    p = plan(attachment(0), attachment(1, NIC), attachment(2, NIC))
    with pytest.raises(DeviceRefused) as caught:
        assign(p, {NIC: ["d1", "d1"]})
    assert caught.value.code == INVALID_CONFIG
    assert "more networks of resource vendor.example/nic than the 1 device" in caught.value.msg


def test_a_pod_without_the_resource_is_refused_with_code_7() -> None:
    p = plan(attachment(0), attachment(1, NIC))
    with pytest.raises(DeviceRefused) as caught:
        assign(p, {"other.example/gpu": ["g0"]})
    assert caught.value.code == INVALID_CONFIG
    assert "reports none for the pod" in caught.value.msg
    assert f"resources.limits: {{{NIC}: 1}}" in caught.value.msg


def test_a_device_kubelet_reports_for_another_pod_too_is_error_11() -> None:
    p = plan(attachment(0), attachment(1, NIC))
    with pytest.raises(CniError) as caught:
        assign(p, {NIC: ["d1"]}, elsewhere=lambda r, d: ["default/web-1"] if d == "d1" else [])
    assert caught.value.code == TRY_AGAIN_LATER
    assert "default/web-1" in caught.value.msg


@pytest.mark.parametrize("device", ["", "a b", "x\0y", "d" * 300, "line\n"])
def test_a_device_id_braid_cannot_use_is_error_11(device: str) -> None:
    with pytest.raises(CniError) as caught:
        assign(plan(attachment(0), attachment(1, NIC)), {NIC: [device]})
    assert caught.value.code == TRY_AGAIN_LATER


def test_the_annotations_device_id_is_refused_for_a_resource_nad() -> None:
    p = plan(attachment(0), attachment(1, NIC, deviceID="0000:99:00.0"))
    with pytest.raises(DeviceRefused) as caught:
        check_requests(p, allow=False)
    assert caught.value.code == INVALID_CONFIG
    assert "allowDeviceIDRequests" in caught.value.msg
    check_requests(plan(attachment(0), attachment(1, None, deviceID="x")), allow=False)


def test_an_allowed_device_id_request_is_kept_and_takes_no_device() -> None:
    p = plan(attachment(0), attachment(1, NIC, deviceid="mine"), attachment(2, NIC))
    check_requests(p, allow=True)
    done = assign(p, {NIC: ["d1"]})
    caps = [a.capability_args for a in done.plan.attachments]
    assert caps[1][DEVICE_ID] == "mine"
    assert "deviceid" not in caps[1]
    assert caps[2][DEVICE_ID] == "d1"


@pytest.mark.parametrize("bad", ["", " ", "a/../b", "has space/x", "x" * 400])
def test_a_resource_name_that_is_none_is_code_7(bad: str) -> None:
    with pytest.raises(CniError) as caught:
        needs_devices(plan(attachment(0), attachment(1, bad)))
    assert caught.value.code == INVALID_CONFIG


def test_dp_file_name_follows_the_npwg_naming() -> None:
    assert dp_info_path("/d/", "intel.com/sriov", "0000:af:06.0") == (
        "/d/dp/intel.com-sriov-0000:af:06.0-device.json"
    )
    assert dp_info_path("/d", "r/x", "a/b") == "/d/dp/r-x-a-b-device.json"


def test_read_device_info(tmp_path: Path) -> None:
    info = {"type": "pci", "version": "1.1.0", "pci": {"pci-address": "0000:03:00.1"}}
    path = tmp_path / "i.json"
    path.write_text(json.dumps(info))
    assert read_device_info(str(path), what="f") == info
    assert read_device_info(str(tmp_path / "none.json"), what="f") is None


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"not json", DECODE_FAILURE),
        (b"[1, 2]", DECODE_FAILURE),
        (b"\xff\xfe", DECODE_FAILURE),
        (b"[" * 100000, DECODE_FAILURE),
        (b'{"x": "' + b"a" * MAX_DEVICE_INFO_BYTES + b'"}', DECODE_FAILURE),
    ],
)
def test_a_device_info_file_not_json_or_huge_is_refused(
    tmp_path: Path, content: bytes, code: int
) -> None:
    path = tmp_path / "i.json"
    path.write_bytes(content)
    with pytest.raises(CniError) as caught:
        read_device_info(str(path), what="the device plugin's file")
    assert caught.value.code == code
    assert str(path) in caught.value.msg


def test_a_device_info_file_that_is_a_link_or_fifo_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "t.json"
    target.write_text("{}")
    link = tmp_path / "l.json"
    link.symlink_to(target)
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    for path in (link, fifo, tmp_path):
        with pytest.raises(CniError) as caught:
            read_device_info(str(path), what="f")
        assert caught.value.code == IO_FAILURE
