"""The network lists the kernel tier runs, for each version case.

Version cases: the three versions Debian's plugins (1.1.1, spec 1.0.0) support with their result
families, plus "negotiated": a list declaring `cniVersion: 1.1.0` and
`cniVersions: [0.4.0, 1.0.0, 1.1.0]`, which the runtime must run at 1.0.0 after asking the
plugins their versions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VERSION_CASES = ["0.3.1", "0.4.0", "1.0.0", "negotiated"]
NEGOTIATED_DECLARED = "1.1.0"
NEGOTIATED_VERSIONS = ["0.4.0", "1.0.0", "1.1.0"]

BRIDGE = "kbr0"
MACVLAN_PARENT = "kparent0"
MACVLAN_PARENT_PEER = "kpeer0"
PORT_MAPPING = {"hostPort": 18080, "containerPort": 80, "protocol": "tcp"}
BANDWIDTH = {
    "ingressRate": 1_000_000,
    "ingressBurst": 100_000,
    "egressRate": 2_000_000,
    "egressBurst": 200_000,
}
TUNED_MTU = 1400
TUNED_SYSCTL = "net.ipv4.conf.eth0.arp_filter"


def effective_version(case: str) -> str:
    """The version the plugins actually run at for a version case."""
    return "1.0.0" if case == "negotiated" else case


def result_version(case: str) -> str:
    """The version of the result the runtime hands back: the list's own (as selected)."""
    return NEGOTIATED_DECLARED if case == "negotiated" else case


def supports_check(case: str) -> bool:
    return effective_version(case) != "0.3.1"


def network_list(case: str, name: str, plugins: list[dict[str, Any]]) -> dict[str, Any]:
    conf: dict[str, Any] = {"cniVersion": case, "name": name, "plugins": plugins}
    if case == "negotiated":
        conf["cniVersion"] = NEGOTIATED_DECLARED
        conf["cniVersions"] = NEGOTIATED_VERSIONS
    return conf


def encode(conf: dict[str, Any]) -> bytes:
    return json.dumps(conf, indent=2).encode()


def host_local(data_dir: Path, subnet: str, *, default_route: bool = True) -> dict[str, Any]:
    ipam: dict[str, Any] = {
        "type": "host-local",
        "dataDir": str(data_dir),
        "ranges": [[{"subnet": subnet}]],
    }
    if default_route:
        ipam["routes"] = [{"dst": "0.0.0.0/0"}]
    return ipam


def loopback() -> list[dict[str, Any]]:
    return [{"type": "loopback"}]


def bridge(data_dir: Path) -> list[dict[str, Any]]:
    return [
        {
            "type": "bridge",
            "bridge": BRIDGE,
            "isGateway": True,
            "ipam": host_local(data_dir, "10.231.1.0/24"),
        }
    ]


def macvlan(data_dir: Path) -> list[dict[str, Any]]:
    return [
        {
            "type": "macvlan",
            "master": MACVLAN_PARENT,
            "mode": "bridge",
            "ipam": host_local(data_dir, "10.231.2.0/24", default_route=False),
        }
    ]


def ptp(data_dir: Path) -> list[dict[str, Any]]:
    return [{"type": "ptp", "ipam": host_local(data_dir, "10.231.3.0/24")}]


def bridge_chain(data_dir: Path) -> list[dict[str, Any]]:
    """bridge → tuning → portmap → bandwidth; portmap and bandwidth take capability args."""
    return [
        *bridge(data_dir),
        {"type": "tuning", "mtu": TUNED_MTU, "sysctl": {TUNED_SYSCTL: "1"}},
        {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True},
        {"type": "bandwidth", "capabilities": {"bandwidth": True}},
    ]


def chain_capability_args() -> dict[str, Any]:
    return {"portMappings": [PORT_MAPPING], "bandwidth": BANDWIDTH}
