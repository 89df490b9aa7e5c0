"""The routing tests' world and oracle: client namespaces off the pod's subnets, reached
through the test's host namespace as their router, and the pod's rules, table routes and
packet counters read with pyroute2 (never with braid-netns)."""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import kernel_netns
from pyroute2 import NetNS

AF = {4: 2, 6: 10}
ANY = {2: str(ipaddress.IPv4Address(0)), 10: "::"}  # the destination of a default route
TABLE_BASE = 10_000  # braid's table of an interface: 10000 + its ifindex (docs/annotations.md)


@dataclass(frozen=True)
class Client:
    """A namespace with one address, its default route through the router's side."""

    ns: kernel_netns.Netns
    address: str

    def ping(self, target: str, count: int) -> int:
        """Echo requests to ``target``; the number of replies received."""
        out = subprocess.run(
            [
                *("ip", "netns", "exec", self.ns.name, "busybox", "ping", "-q", "-c", str(count)),
                *("-i", "0.2", "-W", "2", target),
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
        for line in out.splitlines():
            if "packets received" in line:
                return int(line.split(",")[1].split()[0])
        return 0


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextmanager
def clients(router: kernel_netns.Netns, subnets: list[str]) -> Iterator[list[Client]]:
    """One client per ``subnets`` entry (``10.x.y``): ``.2/24`` in its own namespace, ``.1`` on
    the router's end of their veth; the router forwards. The namespaces go after."""
    made: list[kernel_netns.Netns] = []
    try:
        found = []
        forward = "echo 1 > /proc/sys/net/ipv4/ip_forward"  # the router's own: per namespace
        _ip("netns", "exec", router.name, "sh", "-c", forward)
        for i, subnet in enumerate(subnets):
            ns = kernel_netns.create("c", loopback_up=True)
            made.append(ns)
            outer = f"krc{i}"
            _ip("-n", router.name, "link", "add", outer, "type", "veth", "peer", "eth0")
            _ip("-n", router.name, "link", "set", "eth0", "netns", ns.name)  # peer: the client's
            _ip("-n", router.name, "addr", "add", f"{subnet}.1/24", "dev", outer)
            _ip("-n", router.name, "link", "set", outer, "up")
            _ip("-n", ns.name, "addr", "add", f"{subnet}.2/24", "dev", "eth0")
            _ip("-n", ns.name, "link", "set", "eth0", "up")
            _ip("-n", ns.name, "route", "add", "default", "via", f"{subnet}.1")
            found.append(Client(ns=ns, address=f"{subnet}.2"))
        yield found
    finally:
        for ns in made:
            kernel_netns.delete(ns)


def _with(ns: str) -> NetNS:
    return NetNS(ns, flags=0)


def tx_packets(ns: str) -> dict[str, int]:
    """Each interface's transmitted packets."""
    with _with(ns) as nl:
        return {
            str(link.get_attr("IFLA_IFNAME")): int(link.get_attr("IFLA_STATS64")["tx_packets"])
            for link in nl.get_links()
        }


def ifindex(ns: str, ifname: str) -> int:
    with _with(ns) as nl:
        return int(nl.link_lookup(ifname=ifname)[0])


def rules(ns: str) -> list[dict[str, Any]]:
    """Every rule of both families: ``src`` (``address/len`` or None), ``table``, ``priority``."""
    found = []
    with _with(ns) as nl:
        for family in AF.values():
            for msg in nl.get_rules(family=family):
                src = msg.get_attr("FRA_SRC")
                found.append(
                    {
                        "src": f"{src}/{msg['src_len']}" if src else None,
                        "table": msg.get_attr("FRA_TABLE") or msg["table"],
                        "priority": msg.get_attr("FRA_PRIORITY"),
                    }
                )
    return found


def table_routes(ns: str, table: int) -> set[tuple[str, str | None, int | None]]:
    """``(dst/len, gateway, oif)`` of every route of ``table``, both families."""
    found = set()
    with _with(ns) as nl:
        for family in AF.values():
            for msg in nl.get_routes(family=family, table=table):
                if (msg.get_attr("RTA_TABLE") or msg["table"]) != table:
                    continue
                dst = msg.get_attr("RTA_DST") or (ANY[family])
                found.add(
                    (
                        f"{dst}/{msg['dst_len']}",
                        msg.get_attr("RTA_GATEWAY"),
                        msg.get_attr("RTA_OIF"),
                    )
                )
    return found


def braid_tables(ns: str) -> set[int]:
    """The tables of braid's range that rules point to or routes are in."""
    tables = {r["table"] for r in rules(ns) if r["table"] > TABLE_BASE}
    with _with(ns) as nl:
        for family in AF.values():
            for msg in nl.get_routes(family=family, table=0):
                table = msg.get_attr("RTA_TABLE") or msg["table"]
                if table > TABLE_BASE:
                    tables.add(table)
    return tables


def main_routes(ns: str, ifname: str) -> list[tuple[str, str | None, int | None]]:
    """``(dst/len, gateway, metric)`` of the main table's routes through ``ifname`` (IPv4)."""
    index = ifindex(ns, ifname)
    with _with(ns) as nl:
        return [
            (
                f"{msg.get_attr('RTA_DST') or ANY[2]}/{msg['dst_len']}",
                msg.get_attr("RTA_GATEWAY"),
                msg.get_attr("RTA_PRIORITY"),
            )
            for msg in nl.get_routes(family=2, table=254)
            if msg.get_attr("RTA_OIF") == index and (msg.get_attr("RTA_TABLE") or 254) == 254
        ]
