"""Hot-plug on the node (docs/hotplug.md): braid deployed as shipped, `hotPlug` turned on in its
ConfigMap, and a running pod's `k8s.v1.cni.cncf.io/networks` edited as a user edits it. A
network added, removed, replaced, two added at once, a NAD that does not exist (nothing
changes, an event says why), the daemon killed in the middle of a hot-plug, a pod deleted right
after a change; each checks the pod's interfaces with pyroute2, its network-status and events,
and (the `clean` fixture) that nothing is left on the node. The time from the annotation's
change to the interface in the pod is measured and printed (docs/hotplug.md, "How fast").
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import node_braid as nb
import pytest
from node_braid import Braid
from pyroute2.netlink.exceptions import NetlinkError

pytestmark = pytest.mark.timeout(420)

SUBNETS = {"red": "10.251.30.0/24", "green": "10.251.31.0/24", "blue": "10.251.32.0/24"}
MERGE_PATCH = "application/merge-patch+json"


@pytest.fixture(scope="module")
def hot_plug(braid: Braid) -> Iterator[Braid]:
    braid.configure(hotPlug="all")
    yield braid
    braid.configure(hotPlug="off")


def nads(braid: Braid, namespace: str) -> None:
    for name, subnet in SUBNETS.items():
        nb.nad(braid.node, namespace, name, nb.macvlan(name, subnet))


def set_networks(braid: Braid, namespace: str, pod: str, value: str) -> float:
    """A merge PATCH of the pod's selection annotation, as `kubectl annotate` makes it; returns
    the monotonic time the API server answered."""
    node = braid.node
    assert node.api is not None
    body = json.dumps({"metadata": {"annotations": {nb.NETWORKS: value}}}).encode()
    request = urllib.request.Request(  # noqa: S310 - the node's own API server, https
        f"{node.api_url}/api/v1/namespaces/{namespace}/pods/{pod}",
        data=body,
        method="PATCH",
        headers={"Authorization": f"Bearer {node.api.token('admin')}", "Content-Type": MERGE_PATCH},
    )
    with urllib.request.urlopen(  # noqa: S310
        request, context=node.api.ssl_context(), timeout=10
    ) as answer:
        answer.read()
    return time.monotonic()


def wait_links(pod: nb.PodNetwork, want: set[str], timeout: float = 60) -> float:
    """Polls the pod's namespace until its links are `want`; returns the monotonic time."""
    deadline = time.monotonic() + timeout
    while (found := set(pod.links())) != want:
        assert time.monotonic() < deadline, f"pod links {found}, expected {want}"
        time.sleep(0.005)
    return time.monotonic()


def statuses(braid: Braid, namespace: str, pod: str, count: int) -> list[tuple[str, str]]:
    found = nb.wait_status(braid.node, namespace, pod, count)
    return [(s["name"], s["interface"]) for s in found]


def in_subnet(pod: nb.PodNetwork, ifname: str, network: str) -> bool:
    """Whether `ifname` has one address, in `network`'s subnet; False while the interface is
    missing (a replacement detaches the old one before it attaches the new one)."""
    try:
        addresses = pod.addresses(ifname)
    except NetlinkError:
        return False
    return [str(a.network) for a in addresses] == [SUBNETS[network]]


def test_a_network_added_to_a_running_pod_and_the_time_it_takes(
    hot_plug: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = hot_plug.node
    nads(hot_plug, namespace)
    nb.run_pod(node, namespace, "web", "red")
    pod = nb.PodNetwork(node, namespace, "web")
    eth0_mac = pod.links()["eth0"]["mac"]
    times = []
    for round_ in range(5):
        changed = set_networks(hot_plug, namespace, "web", "red, green")
        times.append(wait_links(pod, {"lo", "eth0", "net1", "net2"}) - changed)
        if round_ < 4:
            set_networks(hot_plug, namespace, "web", "red")
            wait_links(pod, {"lo", "eth0", "net1"})
    print(
        f"\nhot-plug: annotation PATCH answered -> net2 in the pod: "
        f"median {statistics.median(times) * 1000:.0f} ms, "
        f"min {min(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms over {len(times)}"
    )
    assert node.wait_for("net2 on green", lambda: in_subnet(pod, "net2", "green") or None)
    assert pod.links()["eth0"]["mac"] == eth0_mac  # untouched
    want = [(node.cni_network, "eth0"), (f"{namespace}/red", "net1"),
            (f"{namespace}/green", "net2")]  # fmt: skip
    assert node.wait_for(
        "the new network-status", lambda: statuses(hot_plug, namespace, "web", 3) == want
    )
    # Events are posted apart from the status: waited for, not read once.
    added = node.wait_for(
        "the AddedInterface event",
        lambda: [
            m
            for m in nb.events_of(node, namespace, "AddedInterface")
            if "Add net2" in m and f"{namespace}/green" in m
        ],
    )
    assert added
    assert statistics.median(times) < 1.0
    nb.delete_pods(node, namespace, "web")


def test_a_network_removed_from_a_running_pod(
    hot_plug: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = hot_plug.node
    nads(hot_plug, namespace)
    nb.run_pod(node, namespace, "web", "red, green")
    pod = nb.PodNetwork(node, namespace, "web")
    net2 = pod.addresses("net2")
    leased = nb.leases()["red"]

    set_networks(hot_plug, namespace, "web", "green")

    wait_links(pod, {"lo", "eth0", "net2"})
    assert pod.addresses("net2") == net2
    assert node.wait_for("red's lease released", lambda: nb.leases().get("red") != leased)
    want = [(node.cni_network, "eth0"), (f"{namespace}/green", "net2")]
    assert statuses(hot_plug, namespace, "web", 2) == want
    removed = node.wait_for(
        "the RemovedInterface event",
        lambda: [
            m for m in nb.events_of(node, namespace, "RemovedInterface") if "Remove net1" in m
        ],
    )
    assert removed
    nb.delete_pods(node, namespace, "web")


def test_a_network_replaced_and_two_added_at_once(
    hot_plug: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = hot_plug.node
    nads(hot_plug, namespace)
    nb.run_pod(node, namespace, "web", "red@data")
    pod = nb.PodNetwork(node, namespace, "web")

    set_networks(hot_plug, namespace, "web", "green@data")
    node.wait_for("data on green", lambda: in_subnet(pod, "data", "green") or None, timeout=60)
    assert set(pod.links()) == {"lo", "eth0", "data"}

    set_networks(hot_plug, namespace, "web", "green@data, red, blue")
    wait_links(pod, {"lo", "eth0", "data", "net1", "net2"})
    assert node.wait_for("net1 on red", lambda: in_subnet(pod, "net1", "red") or None)
    assert node.wait_for("net2 on blue", lambda: in_subnet(pod, "net2", "blue") or None)
    want = [(node.cni_network, "eth0"), (f"{namespace}/green", "data"),
            (f"{namespace}/red", "net1"), (f"{namespace}/blue", "net2")]  # fmt: skip
    assert node.wait_for("four networks", lambda: statuses(hot_plug, namespace, "web", 4) == want)
    nb.delete_pods(node, namespace, "web")


def test_a_nad_that_does_not_exist_changes_nothing(
    hot_plug: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = hot_plug.node
    nads(hot_plug, namespace)
    nb.run_pod(node, namespace, "web", "red")
    pod = nb.PodNetwork(node, namespace, "web")
    before = nb.network_status(node, namespace, "web")

    set_networks(hot_plug, namespace, "web", "red, green, nothere")

    failed = node.wait_for(
        "HotPlugFailed", lambda: nb.events_of(node, namespace, "HotPlugFailed"), timeout=60
    )
    assert f"{namespace}/nothere not found" in failed[0]
    missing = node.wait_for(
        "the NoNetworkFound event",
        lambda: [m for m in nb.events_of(node, namespace, "NoNetworkFound") if "nothere" in m],
    )
    assert missing
    assert set(pod.links()) == {"lo", "eth0", "net1"}
    assert nb.network_status(node, namespace, "web") == before
    assert "green" not in nb.leases()
    nb.delete_pods(node, namespace, "web")


SLOW_PLUGIN = """#!/bin/sh
# macvlan, with its ADD held for a while first: the daemon can be killed in the middle.
input=$(cat)
if [ "$CNI_COMMAND" = ADD ]; then touch /var/lib/cni/hotplug-started; sleep 3; fi
printf '%s' "$input" | exec /opt/cni/bin/macvlan
"""


def test_the_daemon_killed_in_the_middle_of_a_hot_plug(
    hot_plug: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = hot_plug.node
    nads(hot_plug, namespace)
    plugin = Path("/opt/cni/bin/braid-test-slow-hp")
    started = Path("/var/lib/cni/hotplug-started")
    plugin.write_text(SLOW_PLUGIN)
    plugin.chmod(0o755)
    try:
        config = {**nb.macvlan("slow", "10.251.33.0/24"), "type": plugin.name}
        nb.nad(node, namespace, "slow", config)
        nb.run_pod(node, namespace, "web", "red")
        pod = nb.PodNetwork(node, namespace, "web")
        set_networks(hot_plug, namespace, "web", "red, slow")
        node.wait_for("the slow delegate running", started.exists, timeout=60)
        daemon = hot_plug.daemon_pod()
        node.kubectl("delete", "pod", "-n", nb.NAMESPACE, daemon, "--grace-period=0", "--force")
        started.unlink()
        hot_plug.wait_ready()
        # The new daemon rolls the half attach back, then attaches it again.
        wait_links(pod, {"lo", "eth0", "net1", "net2"}, timeout=120)
        want = [(node.cni_network, "eth0"), (f"{namespace}/red", "net1"),
                (f"{namespace}/slow", "net2")]  # fmt: skip
        assert node.wait_for(
            "three networks", lambda: statuses(hot_plug, namespace, "web", 3) == want
        )
        assert len(nb.leases()["slow"]) == 1
        assert any("interrupted hot-plug" in line.get("msg", str(line)) for line in hot_plug.logs())
        nb.delete_pods(node, namespace, "web")
    finally:
        plugin.unlink()
        started.unlink(missing_ok=True)


def test_a_pod_deleted_right_after_a_change(
    hot_plug: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = hot_plug.node
    nads(hot_plug, namespace)
    nb.run_pod(node, namespace, "web", "red")

    set_networks(hot_plug, namespace, "web", "red, green, blue")
    nb.delete_pods(node, namespace, "web")
    # `clean` checks that no lease, record or link of the pod is left.
