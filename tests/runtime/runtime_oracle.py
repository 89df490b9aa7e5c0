"""The runtime tier's oracle: kernel state through iproute2's JSON output (`ip -j -n`), braid's
network-status through `braidctl status`, and the files a container may leave behind.
Never braid's own netlink code.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from runtime_node import UPLINK, UPLINK_PEER, VENV_BIN, Node

# libcni's result cache (containerd and podman) and the tuning plugin's saved state: machine
# paths the runtimes use whatever their configuration says.
LIBCNI_CACHE = Path("/var/lib/cni/results")
TUNING_STATE = Path("/run/cni/tuning")


def _json(argv: list[str]) -> list[dict[str, Any]]:
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def netns_name(path: str) -> str:
    """`ip -n` takes the name of a namespace bind-mounted in /run/netns (or /var/run/netns)."""
    name = Path(path).name
    if not path or not (Path("/run/netns") / name).exists():
        raise AssertionError(f"no network namespace at {path!r}")
    return name


def links(ns: str) -> dict[str, dict[str, Any]]:
    """Every link of `ns` by name, with details (`linkinfo`, `address`, `operstate`)."""
    return {link["ifname"]: link for link in _json(["ip", "-j", "-d", "-n", ns, "link", "show"])}


def link_kind(link: dict[str, Any]) -> str:
    return str(link.get("linkinfo", {}).get("info_kind", ""))


def addresses(ns: str, ifname: str) -> set[str]:
    """`addr/prefix` of every global IPv4/IPv6 address of `ifname`."""
    found = _json(["ip", "-j", "-n", ns, "addr", "show", "dev", ifname])
    return {
        f"{a['local']}/{a['prefixlen']}"
        for entry in found
        for a in entry.get("addr_info", [])
        if a.get("scope") == "global"
    }


def routes(ns: str) -> list[dict[str, Any]]:
    return _json(["ip", "-j", "-4", "-n", ns, "route", "show"])


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
    return [
        path
        for path in root.rglob("*")
        if path.is_file()
        and (container_id in path.name or container_id.encode() in path.read_bytes())
    ]


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
