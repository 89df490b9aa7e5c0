"""A private "host" for walk-throughs, and what they must leave as they found it there.

`PRIVATE_HOST` starts a command in new network and mount namespaces with empty tmpfs mounts
on /run and /var/lib: a fresh machine's state, which nothing else on this machine changes
while a test runs (the cluster and node tiers add bridges, veths and iptables rules to the
real host), and which a broken walk-through cannot spoil for the machine.

`host_state(pid)` reads the namespaces of process `pid`: forwarding and interface sysctls,
links, routes, iptables rules, mount points, the named network namespaces and `/var/lib/cni`
(every entry with its size and modification time, so a lease file made and removed again still
shows in its directory's time). Read with pyroute2, /proc, `nsenter` and `iptables-save`,
never with braid's own code."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import kernel_oracle

PRIVATE_HOST = [
    "unshare", "--net", "--mount", "--propagation", "private", "--", "sh", "-c",
    'mount -t tmpfs braid-test-run /run && mount -t tmpfs braid-test-lib /var/lib && exec "$@"',
    "sh",
]  # fmt: skip
# Per-namespace sysctls a CNI plugin may set on the side it runs in (bridge's isGateway sets
# ip_forward and the IPv6 `all.forwarding`; tuning and portmap set conf/ keys).
SYSCTLS = ["/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv4/conf/all",
           "/proc/sys/net/ipv4/conf/default", "/proc/sys/net/ipv6/conf/all",
           "/proc/sys/net/ipv6/conf/default"]  # fmt: skip
# iptables-save's counters ("[12:3456]") move with traffic; its comments carry the time.
COUNTERS = re.compile(r"\[\d+:\d+\]")


def _in_netns(pid: int, *command: str) -> str:
    """stdout of `command` run in the network namespace of `pid` (a child process enters it)."""
    argv = ["nsenter", "--target", str(pid), "--net", "--", *command]
    return subprocess.run(argv, check=False, capture_output=True, text=True).stdout


def _sysctls(pid: int) -> list[str]:
    # grep prints "path:value" for every readable file; -s: stable_secret answers EIO.
    return sorted(_in_netns(pid, "grep", "-r", "-s", ".", *SYSCTLS).splitlines())


def _links(netns: str) -> dict[str, tuple[Any, ...]]:
    return {
        name: (link["ifindex"], link["address"], kernel_oracle.link_kind(link), link.get("master"))
        for name, link in kernel_oracle.links(netns).items()
    }


def _routes(netns: str, family: str) -> list[tuple[Any, ...]]:
    routes = kernel_oracle.routes(netns, family)
    return sorted(tuple(str(r[key]) for key in sorted(r)) for r in routes)


def _iptables(pid: int) -> dict[str, list[str]]:
    rules: dict[str, list[str]] = {}
    for tool in ("iptables-save", "ip6tables-save"):
        text = _in_netns(pid, tool)
        rules[tool] = [COUNTERS.sub("", line) for line in text.splitlines() if line[:1] != "#"]
    return rules


def _tree(root: Path) -> list[tuple[str, int, int]] | None:
    if not root.exists():
        return None
    entries = []
    for path in [root, *root.rglob("*")]:
        stat = path.lstat()
        entries.append((str(path.relative_to(root)), stat.st_size, stat.st_mtime_ns))
    return sorted(entries)


def network_state(pid: int) -> dict[str, Any]:
    """The network of `pid`: sysctls, links, routes of both families, iptables rules."""
    netns = f"/proc/{pid}/ns/net"
    return {
        "sysctls": _sysctls(pid),
        "links": _links(netns),
        "routes -4": _routes(netns, "-4"),
        "routes -6": _routes(netns, "-6"),
        "iptables": _iptables(pid),
    }


def host_state(pid: int) -> dict[str, Any]:
    """The network state of `pid`, and in its mount namespace the mount points, the named
    network namespaces (/run/netns) and /var/lib/cni."""
    root = Path(f"/proc/{pid}/root")
    netns_dir = root / "run/netns"
    mounts = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    return {
        **network_state(pid),
        "mount points": sorted(line.split()[4] for line in mounts),
        # `ip netns list`: iproute2 makes /run/netns on first use; empty, it names no netns.
        "netns": sorted(p.name for p in netns_dir.iterdir()) if netns_dir.is_dir() else [],
        "/var/lib/cni": _tree(root / "var/lib/cni"),
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
