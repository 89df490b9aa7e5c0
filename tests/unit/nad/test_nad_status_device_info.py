"""network-status `device-info` (NAD spec v1.2, section 5.3.7): the attachment's
device-information object, after `dns` as Multus writes it, and not with the v1 key set."""

from __future__ import annotations

import json
from pathlib import Path

from braid.nad import Attachment, network_status, status_entry

RESULT = Path(__file__).parents[2] / "fixtures" / "nad" / "results" / "bridge-1.0.0.json"
INFO = {"type": "pci", "version": "1.1.0", "pci": {"pci-address": "0000:03:00.1"}}


def attachment(position: int) -> Attachment:
    return Attachment(
        position=position,
        ifname=f"net{position}",
        status_name=f"ns/net-{position}",
        network_name=f"net-{position}",
        config=b"{}",
        is_list=False,
        source="test",
        label=f"test {position}",
    )


def test_device_info_is_written_for_its_attachment_only() -> None:
    data = RESULT.read_bytes()
    status = json.loads(
        network_status([(attachment(1), data), (attachment(2), data)], device_info={2: INFO})
    )
    assert "device-info" not in status[0]
    assert status[1]["device-info"] == INFO
    keys = list(status[1])
    assert keys.index("device-info") == keys.index("dns") + 1


def test_device_info_without_a_result() -> None:
    entry = status_entry(attachment(1), None, device_info=INFO)
    assert entry == {"name": "ns/net-1", "interface": "net1", "default": False,
                     "device-info": INFO}  # fmt: skip


def test_the_v1_key_set_leaves_device_info_out() -> None:
    status = json.loads(
        network_status([(attachment(1), RESULT.read_bytes())], keys="v1", device_info={1: INFO})
    )
    assert "device-info" not in status[0]
