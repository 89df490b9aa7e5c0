"""Hot-plug on the real kernel with source routing (``braid-cni.io/routing``): a network added
to a running pod with the opt-in gets its table, rules and metric, and they are compared at
CHECK; a routed network removed from it loses them while the others keep theirs. The pod's
rules and routes are read with pyroute2 (``kernel_routing``), never with braid-netns."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_routing as oracle
import pytest
from engine_fixtures import NETWORKS, EngineSetup, bridge_nad, bridged_engine
from pyroute2 import NetNS

from braid.cni import ProcessExecutor
from braid.config.schema import load_braid_config
from braid.engine.context import EngineContext
from braid.engine.hotplug import Outcome, hotplug
from braid.nad.plan import PodRef
from braid.nad.store import FileStore

pytestmark = pytest.mark.kernel

POD = PodRef(namespace="default", name="web-0")
ROUTING = "braid-cni.io/routing"
ROUTED_BEHIND_B = "10.231.98.0/24"  # a route of net B's result, with a gateway: metric's


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    net_a = ("khra", "10.231.81.0/24", "fd00:231:81::/64")
    setup = bridged_engine(host_netns, pod_netns, tmp_path, {"net-a": net_a})
    net_b = bridge_nad(setup, "khrb", "10.231.82.0/24")
    net_b["ipam"]["routes"] = [{"dst": ROUTED_BEHIND_B, "gw": "10.231.82.1"}]
    setup.nad("net-b", net_b)
    return setup


def plug(engine: EngineSetup, selection: list[dict[str, Any]]) -> Outcome:
    config = load_braid_config(engine.braid_conf(None, clusterNetwork="")).config
    ctx = EngineContext(
        config=config,
        store=FileStore(config.nad_dir, config.pod_dir),
        executor=ProcessExecutor(host_netns=engine.host.path),
    )
    return hotplug(ctx, engine.container_id, {NETWORKS: json.dumps(selection)}, pod=POD)


def _address(pod: str, ifname: str) -> str:
    with NetNS(pod, flags=0) as nl:
        index = nl.link_lookup(ifname=ifname)[0]
        return str(nl.get_addr(family=2, index=index)[0].get_attr("IFA_ADDRESS"))


def _rules_of(pod: str, table: int) -> list[dict[str, Any]]:
    return [r for r in oracle.rules(pod) if r["table"] == table]


def test_a_routed_network_plugged_in_gets_its_table_rules_and_metric(engine: EngineSetup) -> None:
    engine.add("net-a")
    pod = engine.pod.name
    assert oracle.braid_tables(pod) == set()
    selection: list[dict[str, Any]] = [
        {"name": "net-a"},
        {"name": "net-b", ROUTING: {"sourceRouting": True, "metric": 300}},
    ]

    outcome = plug(engine, selection)

    assert [e.ifname for e in outcome.added] == ["net2"]
    index = oracle.ifindex(pod, "net2")
    table = oracle.TABLE_BASE + index
    address = _address(pod, "net2")
    assert oracle.braid_tables(pod) == {table}
    assert _rules_of(pod, table) == [{"src": f"{address}/32", "table": table, "priority": 1000}]
    routes = oracle.table_routes(pod, table)
    assert ("10.231.82.0/24", None, index) in routes
    assert ("0.0.0.0/0", "10.231.82.1", index) in routes
    assert (ROUTED_BEHIND_B, "10.231.82.1", index) in routes
    assert (ROUTED_BEHIND_B, "10.231.82.1", 300) in oracle.main_routes(pod, "net2")
    assert engine.record()["attachments"][-1]["routing"] == {"sourceRouting": True, "metric": 300}

    # The runtime's CHECK compares the hot-plugged attachment's routing as any other's.
    assert engine.run("CHECK", {NETWORKS: "net-a"}) == (None, 0)
    subprocess.run(
        ["ip", "-n", pod, "rule", "del", "from", address, "lookup", str(table)], check=True
    )
    error, code = engine.run("CHECK", {NETWORKS: "net-a"})
    assert (code, error["code"]) == (1, 999), error
    assert f"rule from {address} lookup {table} is missing" in error["details"]

    engine.delete()
    assert oracle.braid_tables(pod) == set()
    engine.assert_nothing_left()


def test_a_routed_network_unplugged_loses_its_rules_and_the_others_keep_theirs(
    engine: EngineSetup,
) -> None:
    routed: dict[str, Any] = {ROUTING: {"sourceRouting": True}}
    engine.add([{"name": "net-a", **routed}, {"name": "net-b", **routed}])
    pod = engine.pod.name
    table_a = oracle.TABLE_BASE + oracle.ifindex(pod, "net1")
    table_b = oracle.TABLE_BASE + oracle.ifindex(pod, "net2")
    assert oracle.braid_tables(pod) == {table_a, table_b}
    assert len(_rules_of(pod, table_a)) == 2  # its IPv4 and IPv6 addresses
    kept_rules, kept_routes = _rules_of(pod, table_b), oracle.table_routes(pod, table_b)

    outcome = plug(engine, [{"name": "net-b", **routed}])

    assert [e.name for e in outcome.removed] == ["default/net-a"]
    assert _rules_of(pod, table_a) == []
    assert oracle.braid_tables(pod) == {table_b}
    assert (_rules_of(pod, table_b), oracle.table_routes(pod, table_b)) == (
        kept_rules,
        kept_routes,
    )
    engine.delete()
    assert oracle.braid_tables(pod) == set()
    engine.assert_nothing_left()
