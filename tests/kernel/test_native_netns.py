"""braid._native's namespace primitives (braid-netns) against the kernel, checked with the
tier's pyroute2 oracle.

Two namespaces joined by two veth pairs, both families addressed, several default routes per
family (same metric twice, multipath too); the "pod" side is where braid works.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kernel_netns  # the tier's own modules; conftest puts them on the path
import kernel_oracle
import pytest

from braid._native import netns as native_netns
from braid.cni import ProcessExecutor
from braid.cni.execution import Execution, ExecutionState
from braid.errors import CniError


@dataclass(frozen=True)
class Pair:
    pod: kernel_netns.Netns
    peer: kernel_netns.Netns


def ip(ns: kernel_netns.Netns, *args: str) -> None:
    subprocess.run(["ip", "-n", ns.name, *args], check=True)


def _address_both(pair: Pair, pod_if: str, peer_if: str, v4: str, v6: str) -> None:
    ip(
        pair.pod,
        "link",
        "add",
        pod_if,
        "type",
        "veth",
        "peer",
        "name",
        peer_if,
        "netns",
        pair.peer.name,
    )
    for ns, ifname, host in ((pair.pod, pod_if, "1"), (pair.peer, peer_if, "2")):
        ip(ns, "addr", "add", f"{v4}.{host}/24", "dev", ifname)
        ip(ns, "addr", "add", f"{v6}::{host}/64", "dev", ifname, "nodad")
        ip(ns, "link", "set", ifname, "up")


def _add_defaults(pod: kernel_netns.Netns) -> None:
    for args in (
        ["route", "add", "default", "via", "198.51.100.2", "dev", "va", "metric", "100"],
        ["route", "append", "default", "via", "198.51.100.3", "dev", "va", "metric", "100"],
        ["route", "add", "default", "via", "203.0.113.2", "dev", "vb", "metric", "200"],
        ["route", "add", "default", "metric", "400", "nexthop", "via", "198.51.100.4", "dev", "va",
         "nexthop", "via", "203.0.113.4", "dev", "vb"],
        ["-6", "route", "add", "default", "via", "2001:db8:71::2", "dev", "va", "metric", "100"],
        ["-6", "route", "add", "default", "via", "2001:db8:72::2", "dev", "vb", "metric", "200"],
        ["-6", "route", "add", "default", "metric", "300", "nexthop", "via", "2001:db8:71::3",
         "dev", "va", "nexthop", "via", "2001:db8:72::3", "dev", "vb"],
    ):  # fmt: skip
        ip(pod, *args)


@pytest.fixture
def pair() -> Iterator[Pair]:
    if os.geteuid() != 0:
        pytest.fail("the netns primitives need root (ip netns, setns)", pytrace=False)
    made = Pair(
        kernel_netns.create("np", loopback_up=True), kernel_netns.create("nq", loopback_up=True)
    )
    try:
        _address_both(made, "va", "pa", "198.51.100", "2001:db8:71")
        _address_both(made, "vb", "pb", "203.0.113", "2001:db8:72")
        _add_defaults(made.pod)
        yield made
    finally:
        for ns in (made.pod, made.peer):
            kernel_netns.delete(ns)


def oracle_routes(ns: kernel_netns.Netns, family: int) -> set[tuple[Any, ...]]:
    """The main table of one family per the oracle, normalised to list_routes' fields."""
    default = "0.0.0.0/0" if family == 4 else "::/0"
    return {
        (family, default if r["dst"] == "default" else r["dst"], r["gateway"], r["dev"],
         r["metric"], r["scope"], r["protocol"])
        for r in kernel_oracle.routes(ns.name, f"-{family}")
    }  # fmt: skip


def native_routes(ns: kernel_netns.Netns, family: int) -> set[tuple[Any, ...]]:
    routes = json.loads(native_netns.list_routes(netns=ns.path))
    assert all(r["table"] == 254 for r in routes)
    return {
        (r["family"], r["dst"], r["gateway"], r["ifname"], r["metric"], r["scope"], r["protocol"])
        for r in routes
        if r["family"] == family
    }


def defaults(ns: kernel_netns.Netns, family: int) -> list[dict[str, Any]]:
    return [r for r in kernel_oracle.routes(ns.name, f"-{family}") if r["dst"] == "default"]


def test_list_routes_matches_ip_for_both_families(pair: Pair) -> None:
    for family in (4, 6):
        assert native_routes(pair.pod, family) == oracle_routes(pair.pod, family)
    assert len(defaults(pair.pod, 4)) == 4
    assert len(defaults(pair.pod, 6)) == 3


def test_replacing_the_ipv4_default_keeps_every_ipv6_route(pair: Pair) -> None:
    v6_before = oracle_routes(pair.pod, 6)
    native_netns.set_default_route(netns=pair.pod.path, family=4, gateway="203.0.113.2")
    only = defaults(pair.pod, 4)
    assert [(r["gateway"], r["dev"]) for r in only] == [("203.0.113.2", "vb")]
    assert oracle_routes(pair.pod, 6) == v6_before
    assert native_routes(pair.pod, 4) == oracle_routes(pair.pod, 4)


def test_replacing_the_ipv6_default_keeps_every_ipv4_route(pair: Pair) -> None:
    v4_before = oracle_routes(pair.pod, 4)
    native_netns.set_default_route(
        netns=pair.pod.path, family=6, gateway="2001:db8:71::9", ifname="va"
    )
    only = defaults(pair.pod, 6)
    assert [(r["gateway"], r["dev"]) for r in only] == [("2001:db8:71::9", "va")]
    assert oracle_routes(pair.pod, 4) == v4_before


def test_an_existing_default_becomes_the_only_one_and_repeating_is_harmless(pair: Pair) -> None:
    for _ in range(2):
        native_netns.set_default_route(netns=pair.pod.path, family=4, gateway="198.51.100.3")
        assert [(r["gateway"], r["dev"]) for r in defaults(pair.pod, 4)] == [("198.51.100.3", "va")]
    native_netns.set_default_route(netns=pair.pod.path, family=6, gateway="fe80::99", ifname="vb")
    assert [(r["gateway"], r["dev"]) for r in defaults(pair.pod, 6)] == [("fe80::99", "vb")]


@pytest.mark.parametrize(
    ("family", "gateway", "ifname", "expected"),
    [
        (4, "192.0.2.77", None, "192.0.2.77"),
        (6, "2001:db8:99::1", None, "2001:db8:99::1"),
        (4, "192.0.2.77", "va", "va"),
        (4, "198.51.100.2", "nosuch0", "nosuch0"),
        (6, "fe80::1", None, "va, vb"),
        (4, "2001:db8:71::2", None, "not an IPv4 address"),
    ],
)
def test_a_gateway_that_cannot_be_used_fails_and_changes_nothing(
    pair: Pair, family: int, gateway: str, ifname: str | None, expected: str
) -> None:
    before = {f: oracle_routes(pair.pod, f) for f in (4, 6)}
    with pytest.raises(CniError) as caught:
        native_netns.set_default_route(
            netns=pair.pod.path, family=family, gateway=gateway, ifname=ifname
        )
    assert caught.value.code == 999
    assert pair.pod.path in caught.value.msg
    assert expected in caught.value.msg
    assert {f: oracle_routes(pair.pod, f) for f in (4, 6)} == before


@pytest.mark.parametrize(
    "path", ["/run/netns/braid-no-such-ns", "/etc/hostname", "/proc/self/ns/uts"]
)
def test_a_bad_namespace_path_is_a_code_4_error_naming_it(path: str) -> None:
    calls = [
        lambda: native_netns.list_routes(netns=path),
        lambda: native_netns.list_links(netns=path),
        lambda: native_netns.link_info(netns=path, ifname="eth0"),
        lambda: native_netns.set_default_route(netns=path, family=4, gateway="192.0.2.1"),
    ]
    for call in calls:
        with pytest.raises(CniError) as caught:
            call()
        assert caught.value.code == 4
        assert path in caught.value.msg


def test_link_info_and_list_links_match_ip_link(pair: Pair) -> None:
    ip(pair.pod, "link", "set", "va", "address", "02:AB:cd:00:00:42", "mtu", "1400")
    links = kernel_oracle.links(pair.pod.name)
    assert sorted(native_netns.list_links(netns=pair.pod.path)) == sorted(links)
    for name, link in links.items():
        info = native_netns.link_info(netns=pair.pod.path, ifname=name)
        assert info == (link["ifindex"], link["address"], link["mtu"])
    assert native_netns.link_info(netns=pair.pod.path, ifname="va") == (
        links["va"]["ifindex"], "02:ab:cd:00:00:42", 1400,
    )  # fmt: skip
    assert native_netns.link_info(netns=pair.pod.path, ifname="pa") is None
    assert native_netns.link_info(netns=pair.pod.path, ifname="") is None


def thread_netns() -> str:
    """The network namespace of the calling thread (not of the process)."""
    return str(Path("/proc/thread-self/ns/net").readlink())


def settled_routes(path: str) -> None:
    """Waits until the namespace's routes stop changing (the kernel adds IPv6 link-local and
    multicast routes a moment after a link comes up)."""
    deadline = time.monotonic() + 5
    last = native_netns.list_routes(netns=path)
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = native_netns.list_routes(netns=path)
        if now == last:
            return
        last = now


def test_concurrent_calls_never_move_the_calling_threads(pair: Pair) -> None:
    own = thread_netns()
    for ns in (pair.pod, pair.peer):
        settled_routes(ns.path)
    expected = {
        ns.path: (
            sorted(native_netns.list_links(netns=ns.path)),
            native_netns.link_info(netns=ns.path, ifname=name),
            native_netns.list_routes(netns=ns.path),
        )
        for ns, name in ((pair.pod, "va"), (pair.peer, "pa"))
    }
    assert expected[pair.pod.path][0] == ["lo", "va", "vb"]
    assert expected[pair.peer.path][0] == ["lo", "pa", "pb"]

    def worker(n: int) -> list[str]:
        seen = []
        for i in range(30):
            ns, name = (pair.pod, "va") if (n + i) % 2 else (pair.peer, "pa")
            links, info, routes = expected[ns.path]
            if i % 3 == 0:
                assert sorted(native_netns.list_links(netns=ns.path)) == links
            elif i % 3 == 1:
                assert native_netns.link_info(netns=ns.path, ifname=name) == info
            else:
                assert native_netns.list_routes(netns=ns.path) == routes
            seen.append(thread_netns())
        return seen

    with ThreadPoolExecutor(max_workers=6) as pool:
        seen = [s for chunk in pool.map(worker, range(12)) for s in chunk]
    assert set(seen) == {own}
    assert thread_netns() == own


def test_a_path_that_is_no_network_namespace_leaves_the_thread_at_home(
    pair: Pair, tmp_path: Path
) -> None:
    """The calling thread makes the netlink socket inside the pod's namespace and goes back;
    when entering fails (a plain file, a mount namespace), it never left."""
    own = thread_netns()
    plain = tmp_path / "not-a-namespace"
    plain.write_text("")
    for bad in (str(plain), "/proc/self/ns/mnt"):
        with pytest.raises(CniError) as failed:
            native_netns.list_links(netns=bad)
        assert failed.value.code == 4, bad
        assert thread_netns() == own
    assert "va" in native_netns.list_links(netns=pair.pod.path)
    assert thread_netns() == own


CLONE_NEWNET = 0x40000000


def test_a_plugin_started_early_runs_in_the_callers_network_namespace(
    pair: Pair, tmp_path: Path
) -> None:
    """A plugin inherits the namespace of the thread that starts it. braid's helper threads
    stay where they were made; a caller whose own thread is in another namespace (`setns`)
    gets its plugin started by itself, in its namespace, never by a helper elsewhere."""
    plugin = tmp_path / "where"
    plugin.write_text("#!/bin/sh\ncat >/dev/null\nreadlink /proc/self/ns/net\n")
    plugin.chmod(0o755)
    home = thread_netns()
    warm = ExecutionState()  # the helper threads are made here, in this thread's namespace
    warm.start_early(str(plugin), {})
    warm.close()
    seen: list[str] = []

    def inside() -> None:
        fd = os.open(pair.pod.path, os.O_RDONLY)
        try:  # os.setns is Python 3.12's; this thread only, which ends in the namespace
            libc = ctypes.CDLL(None, use_errno=True)
            assert libc.setns(fd, CLONE_NEWNET) == 0, os.strerror(ctypes.get_errno())
        finally:
            os.close(fd)
        ahead = ExecutionState()
        ahead.start_early(str(plugin), {})
        ahead.declare(Execution(expected=((str(plugin), {}),)))
        out = ProcessExecutor().execute(str(plugin), env={}, stdin=b"", timeout=10, state=ahead)
        ahead.close()
        seen.extend([thread_netns(), out.stdout.decode().strip()])

    worker = threading.Thread(target=inside)
    worker.start()
    worker.join()
    assert seen[0] != home
    assert seen[1] == seen[0], "the plugin ran in the caller's namespace"
