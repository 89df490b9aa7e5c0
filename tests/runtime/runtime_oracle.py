"""The runtime tier's oracle: kernel state through pyroute2, braid's network-status through
`braidctl status`, and the files a container may leave behind. Never braid's own netlink code.

pyroute2 opens its netlink socket inside a namespace from a forked child, so no thread of the
test process changes namespace. Links and routes keep iproute2's JSON key names (`ip -j`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pyroute2 import NetNS
from runtime_node import UPLINK, UPLINK_PEER, VENV_BIN, Node

# libcni's result cache (containerd and podman) and the tuning plugin's saved state: machine
# paths the runtimes use whatever their configuration says.
LIBCNI_CACHE = Path("/var/lib/cni/results")
TUNING_STATE = Path("/run/cni/tuning")
AF_INET, MAIN_TABLE, SCOPE_GLOBAL = 2, 254, 0


def netns_name(path: str) -> str:
    """The name of a namespace bind-mounted in /run/netns, as the oracle's readers take it."""
    name = Path(path).name
    if not path or not (Path("/run/netns") / name).exists():
        raise AssertionError(f"no network namespace at {path!r}")
    return name


def _names(ipr: NetNS) -> dict[int, str]:
    return {link["index"]: str(link.get_attr("IFLA_IFNAME")) for link in ipr.get_links()}


def links(ns: str) -> dict[str, dict[str, Any]]:
    """Every link of `ns` by name: `ifname`, `address`, `linkinfo.info_kind`."""
    found: dict[str, dict[str, Any]] = {}
    with NetNS(ns, flags=0) as ipr:  # flags=0: never creates a missing namespace
        for msg in ipr.get_links():
            name = str(msg.get_attr("IFLA_IFNAME"))
            info = msg.get_attr("IFLA_LINKINFO")
            kind = info.get_attr("IFLA_INFO_KIND") if info is not None else None
            found[name] = {
                "ifname": name,
                "address": msg.get_attr("IFLA_ADDRESS"),
                "linkinfo": {"info_kind": str(kind or "")},
            }
    return found


def link_kind(link: dict[str, Any]) -> str:
    return str(link.get("linkinfo", {}).get("info_kind", ""))


def addresses(ns: str, ifname: str) -> set[str]:
    """`addr/prefix` of every global IPv4/IPv6 address of `ifname`."""
    with NetNS(ns, flags=0) as ipr:
        index = ipr.link_lookup(ifname=ifname)
        if not index:
            raise AssertionError(f"no link {ifname!r} in namespace {ns}")
        found = list(ipr.get_addr(index=index[0]))
    return {
        f"{a.get_attr('IFA_LOCAL') or a.get_attr('IFA_ADDRESS')}/{a['prefixlen']}"
        for a in found
        if a["index"] == index[0] and a["scope"] == SCOPE_GLOBAL
    }


def routes(ns: str) -> list[dict[str, Any]]:
    """The IPv4 main table: `dst` ("default", else `addr/prefix`), `gateway`, `dev`."""
    with NetNS(ns, flags=0) as ipr:
        names = _names(ipr)
        raw = list(ipr.get_routes(family=AF_INET, table=MAIN_TABLE))
    return [
        {
            "dst": "default" if r["dst_len"] == 0 else f"{r.get_attr('RTA_DST')}/{r['dst_len']}",
            "gateway": r.get_attr("RTA_GATEWAY"),
            "dev": names.get(r.get_attr("RTA_OIF") or 0),
        }
        for r in raw
    ]


def default_routes(ns: str) -> list[tuple[str, str]]:
    """(gateway, device) of every IPv4 default route of `ns`."""
    return [(r["gateway"], r["dev"]) for r in routes(ns) if r.get("dst") == "default"]


def port_forwards(node: Node) -> set[tuple[int, str]]:
    """(host port, destination) of every DNAT rule portmap put in the node's nat table."""
    argv = node.in_netns("iptables-save", "-t", "nat")
    rules = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    found = set()
    for line in rules.splitlines():
        if "-j DNAT" in line and "--dport" in line:
            words = line.split()
            port = int(words[words.index("--dport") + 1])
            found.add((port, words[words.index("--to-destination") + 1]))
    return found


def network_status(node: Node, container_id: str) -> list[dict[str, Any]]:
    """What `braidctl status` prints for the container (braid's network-status)."""
    cni_dir = node.path("/var/lib/cni/braid")
    argv = [str(VENV_BIN / "braidctl"), "status", "--cni-dir", str(cni_dir), container_id]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"braidctl status {container_id} failed: {done.stderr}")
    value = json.loads(done.stdout)
    assert isinstance(value, list)
    return value


def has_status(node: Node, container_id: str) -> bool:
    cni_dir = node.path("/var/lib/cni/braid")
    argv = [str(VENV_BIN / "braidctl"), "status", "--cni-dir", str(cni_dir), container_id]
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


def files_naming(root: Path, container_id: str) -> list[Path]:
    """Files under `root` whose name or content names the container (records, cache entries,
    host-local leases, tuning state)."""
    if not root.exists():
        return []
    return [path for path in root.rglob("*") if _file_names(path, container_id)]


def _file_names(path: Path, container_id: str) -> bool:
    """A file whose name or content names the container; one removed since the listing (a
    daemon's, after its answer) names nothing."""
    try:
        if not path.is_file():
            return False
        return container_id in path.name or container_id.encode() in path.read_bytes()
    except FileNotFoundError:
        return False


def leftovers(node: Node, container_id: str) -> list[Path]:
    """Everything of the container still on the node's disk after its removal."""
    roots = [
        node.path("/var/lib/cni/braid"),
        node.path("/var/lib/cni/networks"),
        LIBCNI_CACHE,
        TUNING_STATE,
    ]
    return [path for root in roots for path in files_naming(root, container_id)]


def host_pod_links(node: Node) -> list[str]:
    """Links of the node's namespace that belong to pods: veths (other than the uplink pair)
    and macvlans. Bridges stay, as they do on any node."""
    return sorted(
        name
        for name, link in links(node.netns).items()
        if link_kind(link) in {"veth", "macvlan"} and name not in {UPLINK, UPLINK_PEER}
    )
