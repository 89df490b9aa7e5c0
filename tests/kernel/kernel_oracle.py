"""The kernel tier's oracle: reads kernel state with pyroute2 (links, addresses, routes,
qdiscs) and `iptables-save`, never with braid's own netlink code (braid-netns).

pyroute2 opens its netlink socket inside a namespace from a forked child, so no thread of the
test process ever changes namespace. The dictionaries keep iproute2's JSON key names
(`ip -j`): `ifname`, `address`, `mtu`, `flags`, `master`, `linkinfo`; `dst`, `gateway`, `dev`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from pyroute2 import NetNS

# net/if.h's interface flags, named as `ip link` names them (IFF_RUNNING it never shows).
IFF_NAMES = {
    0x1: "UP", 0x2: "BROADCAST", 0x8: "LOOPBACK", 0x10: "POINTOPOINT", 0x80: "NOARP",
    0x100: "PROMISC", 0x1000: "MULTICAST", 0x10000: "LOWER_UP",
}  # fmt: skip
# linux/if_link.h's MACVLAN_MODE_*.
MACVLAN_MODES = {1: "private", 2: "vepa", 4: "bridge", 8: "passthru", 16: "source"}
FAMILIES = {"-4": 2, "-6": 10}  # AF_INET, AF_INET6
SCOPE_GLOBAL, SCOPE_HOST = 0, 254
MAIN_TABLE = 254


def _netns(ns: str) -> NetNS:
    """A netlink socket inside the namespace named `ns`; flags=0: never creates a missing one."""
    return NetNS(ns, flags=0)


def _names(raw_links: list[Any]) -> dict[int, str]:
    return {link["index"]: str(link.get_attr("IFLA_IFNAME")) for link in raw_links}


def _link(msg: Any, names: dict[int, str]) -> dict[str, Any]:
    link: dict[str, Any] = {
        "ifindex": msg["index"],
        "ifname": names[msg["index"]],
        "address": msg.get_attr("IFLA_ADDRESS"),
        "mtu": msg.get_attr("IFLA_MTU"),
        "flags": [name for bit, name in IFF_NAMES.items() if msg["flags"] & bit],
    }
    master = msg.get_attr("IFLA_MASTER")
    if master:
        link["master"] = names.get(master, str(master))
    info = msg.get_attr("IFLA_LINKINFO")
    if info is not None:
        kind = str(info.get_attr("IFLA_INFO_KIND") or "")
        link["linkinfo"] = {"info_kind": kind}
        data = info.get_attr("IFLA_INFO_DATA")
        if kind == "macvlan" and data is not None:
            mode = data.get_attr("IFLA_MACVLAN_MODE")
            link["linkinfo"]["info_data"] = {"mode": MACVLAN_MODES.get(mode, str(mode))}
    return link


def links(ns: str) -> dict[str, dict[str, Any]]:
    """Every link of `ns` by name: `ifindex`, `address`, `mtu`, `flags`, `master` (a name),
    `linkinfo` (`info_kind`; `info_data.mode` for macvlan)."""
    with _netns(ns) as ipr:
        raw = list(ipr.get_links())
    names = _names(raw)
    return {names[msg["index"]]: _link(msg, names) for msg in raw}


def link_kind(link: dict[str, Any]) -> str:
    return str(link.get("linkinfo", {}).get("info_kind", ""))


def addresses(ns: str, ifname: str) -> set[str]:
    """`addr/prefix` of every global-scope address of `ifname` (link-local ones left out)."""
    with _netns(ns) as ipr:
        index = ipr.link_lookup(ifname=ifname)
        if not index:
            raise AssertionError(f"no link {ifname!r} in namespace {ns}")
        found = list(ipr.get_addr(index=index[0]))
    return {
        f"{a.get_attr('IFA_LOCAL') or a.get_attr('IFA_ADDRESS')}/{a['prefixlen']}"
        for a in found
        if a["index"] == index[0] and a["scope"] in (SCOPE_GLOBAL, SCOPE_HOST)
    }


def _route(msg: Any, names: dict[int, str]) -> dict[str, Any]:
    dst_len = msg["dst_len"]
    oif = msg.get_attr("RTA_OIF")
    return {
        "dst": "default" if dst_len == 0 else f"{msg.get_attr('RTA_DST')}/{dst_len}",
        "gateway": msg.get_attr("RTA_GATEWAY"),
        "dev": names.get(oif) if oif is not None else None,
        "metric": msg.get_attr("RTA_PRIORITY"),
        "scope": msg["scope"],
        "protocol": msg["proto"],
    }


def routes(ns: str, family: str = "-4") -> list[dict[str, Any]]:
    """The main table of one family ("-4" or "-6"): `dst` ("default", else `addr/prefix`, host
    routes too), `gateway`, `dev` (None for a multipath route), `metric`, `scope` and
    `protocol` (the kernel's numbers)."""
    with _netns(ns) as ipr:
        names = _names(list(ipr.get_links()))
        raw = list(ipr.get_routes(family=FAMILIES[family], table=MAIN_TABLE))
    return [_route(msg, names) for msg in raw]


def default_gateway(ns: str) -> str | None:
    for route in routes(ns):
        if route["dst"] == "default":
            return str(route["gateway"])
    return None


def qdiscs(ns: str) -> list[dict[str, Any]]:
    """Every qdisc of `ns`: `kind` and `dev`."""
    with _netns(ns) as ipr:
        names = _names(list(ipr.get_links()))
        raw = list(ipr.get_qdiscs())
    return [{"kind": q.get_attr("TCA_KIND"), "dev": names.get(q["index"])} for q in raw]


def qdisc_kinds(ns: str, dev: str) -> set[str]:
    return {q["kind"] for q in qdiscs(ns) if q["dev"] == dev}


def nat_rules(ns: str, family: str = "ip") -> str:
    """`iptables-save -t nat` (or ip6tables) of namespace `ns`, as text."""
    tool = "iptables-save" if family == "ip" else "ip6tables-save"
    cmd = ["ip", "netns", "exec", ns, tool, "-t", "nat"]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def cni_container_chains(ns: str) -> set[str]:
    """Per-container portmap chains (`CNI-DN-*`) in the nat table of `ns`."""
    return {
        line[1:].split()[0] for line in nat_rules(ns).splitlines() if line.startswith(":CNI-DN-")
    }


def sysctl(ns: str, key: str) -> str:
    path = "/proc/sys/" + key.replace(".", "/")
    cmd = ["ip", "netns", "exec", ns, "cat", path]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def leases(data_dir: Path, network: str) -> set[str]:
    """host-local's lease files (one per allocated IP) for `network` under `data_dir`."""
    net_dir = data_dir / network
    if not net_dir.is_dir():
        return set()
    bookkeeping = {"lock"}
    return {
        p.name
        for p in net_dir.iterdir()
        if p.name not in bookkeeping and not p.name.startswith("last_reserved_ip")
    }


def files_naming(root: Path, container_id: str) -> list[Path]:
    """Files under `root` whose name or content names the container (cache entries, leases)."""
    found: list[Path] = []
    if not root.exists():
        return found
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        try:
            named = container_id in path.name or container_id.encode() in path.read_bytes()
        except FileNotFoundError:  # removed since the listing (a daemon's after its answer)
            continue
        if named:
            found.append(path)
    return found


def process_alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] != "Z"
