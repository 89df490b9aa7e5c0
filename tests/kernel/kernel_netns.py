"""Network namespaces for the kernel tier, made and removed with iproute2 (`ip netns`) and
listed with pyroute2.

Independent of braid's own netns code on purpose: the tier checks braid against the kernel, so
the fixtures must not rely on what they test.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pyroute2 import netns

NETNS_DIR = Path("/run/netns")


@dataclass(frozen=True)
class Netns:
    """A named network namespace: `name` for `ip -n`, `path` for `CNI_NETNS`."""

    name: str

    @property
    def path(self) -> str:
        return str(NETNS_DIR / self.name)


def unique_name(role: str) -> str:
    """A name no other test (or concurrent run) uses: `braidk-<role>-<8 hex>`."""
    return f"braidk-{role}-{uuid.uuid4().hex[:8]}"


def create(role: str, *, loopback_up: bool) -> Netns:
    """Creates a namespace; `lo` is brought up only when asked (a fresh sandbox has it down)."""
    ns = Netns(unique_name(role))
    subprocess.run(["ip", "netns", "add", ns.name], check=True)
    if loopback_up:
        subprocess.run(["ip", "-n", ns.name, "link", "set", "lo", "up"], check=True)
    return ns


def delete(ns: Netns) -> None:
    """Deletes a namespace; everything inside it (links, qdiscs, iptables rules) goes with it."""
    subprocess.run(["ip", "netns", "del", ns.name], check=True)


def exists(ns: Netns) -> bool:
    """Whether the namespace is still named in /run/netns, per pyroute2."""
    return ns.name in netns.listnetns()


@contextmanager
def several(role: str, count: int) -> Iterator[list[Netns]]:
    """``count`` fresh namespaces (``lo`` down, as a pod sandbox's), deleted after, whatever
    happened (those made so far, when making one fails)."""
    made: list[Netns] = []
    try:
        for _ in range(count):
            made.append(create(role, loopback_up=False))
        yield made
    finally:
        for ns in made:
            delete(ns)
