"""The kernel tier's oracle: reads kernel state with iproute2's JSON output (`ip -j -n`, `tc -j`)
and `iptables-save`, never with braid's own netlink code.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any


def _json(argv: list[str]) -> list[dict[str, Any]]:
    out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else []


def links(ns: str) -> dict[str, dict[str, Any]]:
    """Every link of `ns` by name, with details (`linkinfo`, `master`, `operstate`, `mtu`)."""
    return {link["ifname"]: link for link in _json(["ip", "-j", "-d", "-n", ns, "link", "show"])}


def link_kind(link: dict[str, Any]) -> str:
    return str(link.get("linkinfo", {}).get("info_kind", ""))


def addresses(ns: str, ifname: str) -> set[str]:
    """`addr/prefix` of every global-scope address of `ifname` (link-local ones left out)."""
    found = _json(["ip", "-j", "-n", ns, "addr", "show", "dev", ifname])
    return {
        f"{a['local']}/{a['prefixlen']}"
        for entry in found
        for a in entry.get("addr_info", [])
        if a.get("scope") in ("global", "host")
    }


def routes(ns: str, family: str = "-4") -> list[dict[str, Any]]:
    return _json(["ip", "-j", family, "-n", ns, "route", "show"])


def default_gateway(ns: str) -> str | None:
    for route in routes(ns):
        if route.get("dst") == "default":
            return str(route["gateway"])
    return None


def qdiscs(ns: str) -> list[dict[str, Any]]:
    return _json(["tc", "-j", "-n", ns, "qdisc", "show"])


def qdisc_kinds(ns: str, dev: str) -> set[str]:
    return {q["kind"] for q in qdiscs(ns) if q.get("dev") == dev}


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
        if container_id in path.name or container_id.encode() in path.read_bytes():
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
