"""braid deployed on the node: source routing of a multi-homed pod (``braid-cni.io/routing``,
docs/annotations.md). A server pod on two bridge networks opts in (one NAD by its annotation,
the other by the selection's key); two client pods sit on networks of their own, off the
server's subnets, their default route through their bridge's gateway on the node. A request to
each of the server's addresses is answered through the interface it came in on: the client gets
every echo back and that interface's transmit counter grows. A server without the opt-in has no
route back (the node's pods get no default route), so its clients get nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import node_braid as nb
import pytest
from node_braid import Braid
from node_cluster import Node
from pyroute2 import IPRoute, NetNS

pytestmark = pytest.mark.timeout(300)

ROUTING = "braid-cni.io/routing"
# name: (subnet prefix, the node's bridge)
NETS = {
    "srv-a": ("10.247.1", "brt-srva"),
    "srv-b": ("10.247.2", "brt-srvb"),
    "cli-a": ("10.247.11", "brt-clia"),
    "cli-b": ("10.247.12", "brt-clib"),
}
PINGS = 5


def _bridge_nad(node: Node, namespace: str, name: str, routing: str | None) -> None:
    prefix, bridge = NETS[name]
    config = {
        "cniVersion": "1.0.0",
        "name": name,
        "type": "bridge",
        "bridge": bridge,
        "isGateway": True,
        "ipam": {"type": "host-local", "subnet": f"{prefix}.0/24"},
    }
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if routing is not None:
        meta["annotations"] = {ROUTING: routing}
    node.apply(
        {
            "apiVersion": "k8s.cni.cncf.io/v1",
            "kind": "NetworkAttachmentDefinition",
            "metadata": meta,
            "spec": {"config": json.dumps(config)},
        }
    )


@pytest.fixture
def bridges() -> Iterator[None]:
    """The bridges the test's networks make on the node, removed after it."""
    yield
    with IPRoute() as ip:
        for _, bridge in NETS.values():
            found = ip.link_lookup(ifname=bridge)
            if found:
                ip.link("del", index=found[0])


def _ping(node: Node, namespace: str, pod: str, target: str) -> int:
    """Echo requests from ``pod`` to ``target``; how many were answered."""
    out = node.kubectl(
        "exec", "-n", namespace, pod, "--", "ping", "-q", "-c", str(PINGS), "-i", "0.2",
        "-W", "2", target, check=False,
    ).stdout  # fmt: skip
    for line in out.splitlines():
        if "packets received" in line:
            return int(line.split(",")[1].split()[0])
    return 0


def _tx(path: str) -> dict[str, int]:
    with NetNS(path, flags=0) as ns:
        return {
            str(link.get_attr("IFLA_IFNAME")): int(link.get_attr("IFLA_STATS64")["tx_packets"])
            for link in ns.get_links()
        }


def _rule_tables(path: str) -> dict[str, int]:
    """``source address: table`` of the namespace's IPv4 rules that have a source."""
    with NetNS(path, flags=0) as ns:
        return {
            str(r.get_attr("FRA_SRC")): int(r.get_attr("FRA_TABLE") or r["table"])
            for r in ns.get_rules(family=2)
            if r.get_attr("FRA_SRC")
        }


def test_each_address_answers_through_its_own_interface(
    braid: Braid, namespace: str, clean: dict[str, Any], bridges: None
) -> None:
    node = braid.node
    _bridge_nad(node, namespace, "srv-a", '{"sourceRouting": true}')
    _bridge_nad(node, namespace, "srv-b", None)
    for name in ("cli-a", "cli-b"):
        _bridge_nad(node, namespace, name, None)
    server = [{"name": "srv-a"}, {"name": "srv-b", ROUTING: {"sourceRouting": True}}]
    nb.run_pod(node, namespace, "server", server)
    nb.run_pod(node, namespace, "plain", [{"name": "srv-a", ROUTING: {"sourceRouting": False}}])
    for client, net in (("client-a", "cli-a"), ("client-b", "cli-b")):
        gateway = f"{NETS[net][0]}.1"
        nb.run_pod(node, namespace, client, [{"name": net, "default-route": [gateway]}])
    pod = nb.PodNetwork(node, namespace, "server")
    (a,) = pod.addresses("net1")
    (b,) = pod.addresses("net2")
    links = pod.links()
    tables = _rule_tables(pod.path)
    assert tables[str(a.ip)] == 10_000 + links["net1"]["index"]
    assert tables[str(b.ip)] == 10_000 + links["net2"]["index"]

    for client, target, ifname in (("client-a", a, "net1"), ("client-b", b, "net2")):
        before = _tx(pod.path)
        assert _ping(node, namespace, client, str(target.ip)) == PINGS, (client, target)
        after = _tx(pod.path)
        assert after[ifname] - before[ifname] >= PINGS, (ifname, before, after)
        assert after["eth0"] - before["eth0"] < PINGS, (before, after)

    (plain,) = nb.PodNetwork(node, namespace, "plain").addresses("net1")
    assert _rule_tables(nb.PodNetwork(node, namespace, "plain").path) == {}
    assert _ping(node, namespace, "client-a", str(plain.ip)) == 0

    nb.delete_pods(node, namespace, "server", "plain", "client-a", "client-b")
