"""A hot-plug change rewrites the pod's network-status: what an attachment's device gave it at
ADD (its device-information file, the network data a DRA driver published) stays in it."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from braid.config import load_braid_config
from braid.engine.context import EngineContext
from braid.engine.hotplug import _write_outcome
from braid.engine.record import RECORD_KIND, RECORD_VERSION, AttachmentEntry, AttachmentRecord
from braid.nad.devices import DEVICE_INFO_FILE, cni_info_path

BARE = msgspec.Raw(b'{"cniVersion":"1.0.0"}')  # a device delegate's result: no ips, no mac
ADDRESSED = msgspec.Raw(
    b'{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/run/netns/p"}],'
    b'"ips":[{"address":"10.0.0.2/24","interface":0}]}'
)
DEVICE_INFO = {"type": "pci", "version": "1.1.0", "pci": {"pci-address": "0000:03:00.1"}}
NETWORK_DATA = {"ips": ["10.9.0.5"], "mac": "02:00:00:00:00:05"}


def entry(position: int, result: msgspec.Raw, **fields: object) -> AttachmentEntry:
    name = "kcluster" if position == 0 else f"default/net-{position}"
    return AttachmentEntry(
        status_name=name,
        network_name=name.rpartition("/")[2],
        ifname="eth0" if position == 0 else f"net{position}",
        config='{"cniVersion":"1.0.0","name":"n","plugins":[{"type":"fakenet"}]}',
        position=position,
        is_default=position == 0,
        state="added",
        result=result,
        **fields,  # type: ignore[arg-type]
    )


def test_a_hot_plug_status_keeps_device_info_and_network_data(tmp_path: Path) -> None:
    devinfo = tmp_path / "devinfo"
    conf = {"cniVersion": "1.0.0", "name": "braid", "type": "braid",
            "cniDir": str(tmp_path / "cni"), "deviceInfoDir": str(devinfo),
            "clusterNetwork": ""}  # fmt: skip
    config = load_braid_config(json.dumps(conf).encode()).config
    ctx = EngineContext(config=config)
    info_path = cni_info_path(str(devinfo), "ctr1", "net1")
    Path(info_path).parent.mkdir(parents=True)
    Path(info_path).write_text(json.dumps(DEVICE_INFO))
    record = AttachmentRecord(
        container_id="ctr1",
        netns="/run/netns/p",
        kind=RECORD_KIND,
        version=RECORD_VERSION,
        attachments=[
            entry(0, ADDRESSED),
            entry(
                1, BARE, capability_args={DEVICE_INFO_FILE: info_path}, network_data=NETWORK_DATA
            ),
            entry(2, ADDRESSED),  # the network the hot-plug added
        ],
    )

    status = json.loads(_write_outcome(ctx, record))

    assert [s["name"] for s in status] == ["kcluster", "default/net-1", "default/net-2"]
    assert status[1]["device-info"] == DEVICE_INFO
    assert (status[1]["ips"], status[1]["mac"]) == (NETWORK_DATA["ips"], NETWORK_DATA["mac"])
    assert "device-info" not in status[2]
    written = json.loads((tmp_path / "cni" / "records" / "ctr1.json").read_bytes())
    assert written["networkStatus"] == status
    assert written["attachments"][1]["networkData"] == NETWORK_DATA
    assert "networkData" not in written["attachments"][2]  # absent, not null
