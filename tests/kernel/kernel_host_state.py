"""What a walk-through must leave as it found it on the test's host: forwarding and interface
sysctls, links, routes, iptables rules, mount points, the named network namespaces and
`/var/lib/cni` (every entry with its size and modification time, so a lease file made and
removed again still shows in its directory's time). Read with pyroute2, /proc and
`iptables-save`, never with braid's own code."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import kernel_oracle

CNI_STATE = Path("/var/lib/cni")
NETNS_DIR = Path("/run/netns")
# Per-namespace sysctls a CNI plugin may set on the side it runs in (bridge's isGateway sets
# ip_forward and the IPv6 `all.forwarding`; tuning and portmap set conf/ keys).
SYSCTL_GLOBS = ("ipv4/ip_forward", "ipv4/conf/all/*", "ipv4/conf/default/*",
                "ipv6/conf/all/*", "ipv6/conf/default/*")  # fmt: skip
# iptables-save's counters ("[12:3456]") move with traffic; its comments carry the time.
COUNTERS = re.compile(r"\[\d+:\d+\]")


def _sysctls() -> dict[str, str]:
    found: dict[str, str] = {}
    for pattern in SYSCTL_GLOBS:
        for path in sorted(Path("/proc/sys/net").glob(pattern)):
            try:
                found[str(path)] = path.read_text().strip()
            except OSError as err:  # e.g. stable_secret answers EIO until it is set
                found[str(path)] = f"<{err.strerror}>"
    return found


def _links(netns: str) -> dict[str, tuple[Any, ...]]:
    return {
        name: (link["ifindex"], link["address"], kernel_oracle.link_kind(link), link.get("master"))
        for name, link in kernel_oracle.links(netns).items()
    }


def _routes(netns: str, family: str) -> list[tuple[Any, ...]]:
    routes = kernel_oracle.routes(netns, family)
    return sorted(tuple(str(r[key]) for key in sorted(r)) for r in routes)


def _iptables() -> dict[str, list[str]]:
    rules: dict[str, list[str]] = {}
    for tool in ("iptables-save", "ip6tables-save"):
        text = subprocess.run([tool], check=True, capture_output=True, text=True).stdout
        rules[tool] = [COUNTERS.sub("", line) for line in text.splitlines() if line[:1] != "#"]
    return rules


def _mount_points() -> list[str]:
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return sorted(line.split()[4] for line in lines)


def _tree(root: Path) -> list[tuple[str, int, int]] | None:
    if not root.exists():
        return None
    entries = []
    for path in [root, *root.rglob("*")]:
        stat = path.lstat()
        entries.append((str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns))
    return sorted(entries)


def host_netns_path() -> str:
    """This process's network namespace as a path pyroute2 can open from its child."""
    return f"/proc/{os.getpid()}/ns/net"


def network_state() -> dict[str, Any]:
    """The host's network: sysctls, links, routes of both families, iptables rules."""
    netns = host_netns_path()
    return {
        "sysctls": _sysctls(),
        "links": _links(netns),
        "routes -4": _routes(netns, "-4"),
        "routes -6": _routes(netns, "-6"),
        "iptables": _iptables(),
    }


def host_state() -> dict[str, Any]:
    """The host's network state, its mount points, named network namespaces and CNI state."""
    return {
        **network_state(),
        "mount points": _mount_points(),
        "netns": sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else None,
        str(CNI_STATE): _tree(CNI_STATE),
    }


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """One line per part of the state that changed, naming what appeared and disappeared."""
    changed = []
    for key, old in before.items():
        new = after[key]
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            moved = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
            changed.append(f"{key}: {[(k, old.get(k), new.get(k)) for k in moved]}")
        elif isinstance(old, list) and isinstance(new, list):
            gone = [x for x in old if x not in new]
            came = [x for x in new if x not in old]
            changed.append(f"{key}: gone {gone}, new {came}")
        else:
            changed.append(f"{key}: {old!r} -> {new!r}")
    return changed
