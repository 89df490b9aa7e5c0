"""braid._native's source routing (braid-netns' rules and per-interface tables) against the
kernel, read with pyroute2: idempotent installs and removals, IPv6 metrics, bad input."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import kernel_netns
import kernel_routing as oracle
import pytest

from braid._native import netns as native_netns
from braid.errors import CniError

pytestmark = pytest.mark.kernel

ADDRESSES = ["10.232.5.2/24", "fd00:232:5::2/64"]
ROUTES: list[tuple[str, str | None]] = [
    ("0.0.0.0/0", "10.232.5.1"),
    ("::/0", "fd00:232:5::1"),
    ("10.232.77.0/24", None),
]


def _ip(ns: kernel_netns.Netns, *args: str) -> None:
    subprocess.run(["ip", "-n", ns.name, *args], check=True)


@pytest.fixture
def pod() -> Iterator[kernel_netns.Netns]:
    """A namespace with a veth ``net1`` (its peer beside it) holding both families' addresses."""
    ns = kernel_netns.create("sr", loopback_up=True)
    try:
        _ip(ns, "link", "add", "net1", "type", "veth", "peer", "name", "net1p")
        _ip(ns, "link", "set", "net1p", "up")
        for address in ADDRESSES:
            _ip(ns, "addr", "add", address, "dev", "net1", "nodad")
        _ip(ns, "link", "set", "net1", "up")
        yield ns
    finally:
        kernel_netns.delete(ns)


def _apply(ns: kernel_netns.Netns, metric: int | None = None) -> int:
    return native_netns.apply_source_routing(
        netns=ns.path, ifname="net1", addresses=ADDRESSES, routes=ROUTES, metric=metric
    )


def test_install_twice_check_and_remove_twice(pod: kernel_netns.Netns) -> None:
    table = _apply(pod)
    assert table == oracle.TABLE_BASE + oracle.ifindex(pod.name, "net1")
    assert _apply(pod) == table
    ours = [r for r in oracle.rules(pod.name) if r["table"] == table]
    assert sorted(r["src"] for r in ours) == ["10.232.5.2/32", "fd00:232:5::2/128"]
    index = oracle.ifindex(pod.name, "net1")
    assert oracle.table_routes(pod.name, table) == {
        ("10.232.5.0/24", None, index),
        ("fd00:232:5::/64", None, index),
        ("0.0.0.0/0", "10.232.5.1", index),
        ("::/0", "fd00:232:5::1", index),
        ("10.232.77.0/24", None, index),
    }
    check = {"netns": pod.path, "ifname": "net1", "addresses": ADDRESSES, "routes": ROUTES}
    assert native_netns.check_source_routing(**check) == []  # type: ignore[arg-type]

    native_netns.clear_source_routing(netns=pod.path, ifname="net1")
    assert oracle.braid_tables(pod.name) == set()
    native_netns.clear_source_routing(netns=pod.path, ifname="net1")
    problems = native_netns.check_source_routing(**check)  # type: ignore[arg-type]
    assert len(problems) == 7, problems  # five routes, two rules


def test_metric_applies_to_both_families_gateway_routes(pod: kernel_netns.Netns) -> None:
    _ip(pod, "route", "add", "10.232.90.0/24", "via", "10.232.5.1", "dev", "net1")
    _ip(pod, "-6", "route", "add", "fd00:232:90::/64", "via", "fd00:232:5::1", "dev", "net1")
    native_netns.apply_source_routing(
        netns=pod.path, ifname="net1", addresses=[], routes=[], metric=4242
    )
    out = subprocess.run(
        ["ip", "-n", pod.name, "-d", "route", "show", "dev", "net1"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "10.232.90.0/24 via 10.232.5.1" in out
    assert "metric 4242" in out
    out6 = subprocess.run(
        ["ip", "-n", pod.name, "-6", "route", "show", "fd00:232:90::/64"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert out6.count("fd00:232:90::/64") == 1
    assert "metric 4242" in out6
    assert oracle.braid_tables(pod.name) == set()  # a metric alone makes no table


def test_bad_input_and_missing_interfaces_are_the_delegates_failure(
    pod: kernel_netns.Netns,
) -> None:
    with pytest.raises(CniError) as info:
        native_netns.apply_source_routing(
            netns=pod.path, ifname="net9", addresses=ADDRESSES, routes=[]
        )
    assert info.value.code == 100
    assert "net9" in info.value.msg
    with pytest.raises(CniError) as info:
        native_netns.apply_source_routing(
            netns=pod.path, ifname="net1", addresses=["10.0.0.1/40"], routes=[]
        )
    assert info.value.code == 100
    with pytest.raises(CniError) as info:
        native_netns.clear_source_routing(netns="/nonexistent/netns", ifname="net1")
    assert info.value.code == 4
    assert oracle.braid_tables(pod.name) == set()
