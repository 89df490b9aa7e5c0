"""The engine on the real kernel: per-attachment requests of the selection annotation.

`ips` and `mac` reach the delegates (capability and `args.cni`) and are enforced against what
was really assigned; `default-route` makes a gateway the only default of its family.
"""

from __future__ import annotations

import json
from pathlib import Path

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import (
    CLUSTER,
    CLUSTER_BRIDGE,
    CLUSTER_V4,
    CLUSTER_V6,
    NETWORKS,
    EngineSetup,
    bridge_nad,
    default_routes,
    make_engine,
)

pytestmark = pytest.mark.kernel

MAC = "c2:b0:57:49:47:f1"
STATIC_IPS = ["10.231.32.5/24", "fd00:231:32::5/64"]
IGNORING_IPAM = "kfixedip"
# An IPAM plugin that answers every ADD with one fixed address, whatever was requested.
_IGNORING_IPAM_SCRIPT = """#!/bin/sh
cat >/dev/null
case "$CNI_COMMAND" in
VERSION) echo '{"cniVersion":"1.0.0","supportedVersions":["0.3.1","0.4.0","1.0.0"]}' ;;
ADD) echo '{"cniVersion":"1.0.0","ips":[{"address":"10.231.34.7/24"}]}' ;;
esac
exit 0
"""


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    static = {
        "cniVersion": "1.0.0",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "kbr2",
                "ipam": {"type": "static"},
                "capabilities": {"ips": True},
            },
            {"type": "tuning", "capabilities": {"mac": True}},
        ],
    }
    setup.nad("static-net", static)
    setup.nad("bridge-net", bridge_nad(setup, "kbr3", "10.231.33.0/24"))
    setup.nad(
        "ptp-net",
        {"cniVersion": "1.0.0", "type": "ptp", "ipam": setup.host_local("10.231.35.0/24")},
    )
    ignoring = bridge_nad(setup, "kbr4", "10.231.34.0/24")
    ignoring["ipam"] = {"type": IGNORING_IPAM}
    setup.nad("ignoring-net", ignoring)
    script = setup.plugin_dir / IGNORING_IPAM
    script.write_text(_IGNORING_IPAM_SCRIPT)
    script.chmod(0o755)
    setup.nad("dual", bridge_nad(setup, "kbr1", "10.231.31.0/24", "fd00:231:31::/64"))
    return setup


def test_static_ips_and_mac_through_capabilities(engine: EngineSetup) -> None:
    selection = [{"name": "static-net", "ips": STATIC_IPS, "mac": MAC}]
    engine.add(selection)

    net1 = kernel.links(engine.pod.name)["net1"]
    assert net1["address"] == MAC
    assert kernel.addresses(engine.pod.name, "net1") == set(STATIC_IPS)
    status = engine.record()["networkStatus"][1]
    assert status["mac"] == MAC
    assert sorted(status["ips"]) == ["10.231.32.5", "fd00:231:32::5"]

    engine.delete(selection)
    engine.assert_nothing_left()


def test_bridge_and_host_local_honour_args_cni(engine: EngineSetup) -> None:
    selection = [{"name": "bridge-net", "ips": ["10.231.33.77/24"], "mac": MAC}]
    engine.add(selection)

    assert kernel.links(engine.pod.name)["net1"]["address"] == MAC
    assert kernel.addresses(engine.pod.name, "net1") == {"10.231.33.77/24"}
    assert engine.leases("bridge-net") == {"10.231.33.77"}

    engine.delete(selection)
    engine.assert_nothing_left()
    assert engine.leases("bridge-net") == set()


@pytest.mark.parametrize(
    ("selection", "ignored"),
    [
        ({"name": "ptp-net", "mac": MAC}, f"requested MAC {MAC}"),
        ({"name": "ignoring-net", "ips": ["10.231.34.9/24"]}, "requested IP 10.231.34.9/24"),
    ],
    ids=["ptp-ignores-mac", "ipam-ignores-ips"],
)
def test_ignored_request_fails_the_add_and_leaves_nothing(
    engine: EngineSetup, selection: dict[str, object], ignored: str
) -> None:
    error, code = engine.run("ADD", {NETWORKS: json.dumps([selection])})

    assert code == 1
    assert error["code"] == 100
    assert ignored in error["msg"]
    assert "not assigned" in error["msg"]
    engine.assert_nothing_left()
    assert engine.leases(CLUSTER) == set()
    assert engine.leases("ptp-net") == set()
    ptp_host_side = [n for n in kernel.links(engine.host.name) if n.startswith("veth")]
    assert ptp_host_side == []


@pytest.mark.parametrize(
    ("gateway", "family", "other", "other_default"),
    [
        ("10.231.31.1", "-4", "-6", (CLUSTER_V6[1], "eth0")),
        ("fd00:231:31::1", "-6", "-4", (CLUSTER_V4[1], "eth0")),
    ],
    ids=["ipv4", "ipv6"],
)
def test_default_route_replaces_only_its_family(
    engine: EngineSetup,
    gateway: str,
    family: str,
    other: str,
    other_default: tuple[str, str],
) -> None:
    selection = [{"name": "dual", "default-route": [gateway]}]
    engine.add(selection)

    assert default_routes(engine.pod.name, family) == [(gateway, "net1")]
    assert default_routes(engine.pod.name, other) == [other_default]
    status = engine.record()["networkStatus"]
    assert [s.get("default", False) for s in status] == [True, False]

    engine.delete(selection)
    engine.assert_nothing_left()
    assert engine.leases("dual") == set()


def test_cluster_network_holds_both_defaults_without_a_request(engine: EngineSetup) -> None:
    engine.add("dual")

    assert default_routes(engine.pod.name, "-4") == [(CLUSTER_V4[1], "eth0")]
    assert default_routes(engine.pod.name, "-6") == [(CLUSTER_V6[1], "eth0")]
    assert CLUSTER_BRIDGE in kernel.links(engine.host.name)
    # host-local's default routes carry no gw: the status names what the pod routes through.
    status = engine.record()["networkStatus"]
    assert status[0]["gateway"] == [CLUSTER_V4[1], CLUSTER_V6[1]]
    assert "gateway" not in status[1]

    engine.delete("dual")
    engine.assert_nothing_left()
