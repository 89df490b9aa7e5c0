"""The engine on the real kernel: source routing of a multi-homed pod (``braid-cni.io/routing``).

The pod has the cluster network (default routes through ``eth0``) and two bridge networks; two
clients sit OFF those networks' subnets, behind the test's host namespace as their router. A
request to each of the pod's secondary addresses must be answered through the interface it came
in on (its transmit counter grows, ``eth0``'s does not); without the opt-in the replies leave by
``eth0``, which is what the first test would see if braid did nothing.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_routing as oracle
import pytest
from engine_fixtures import NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_routing import Client

pytestmark = pytest.mark.kernel

ROUTING = "braid-cni.io/routing"
NET_A = ("10.231.51.0/24", "fd00:231:51::/64")
NET_B = ("10.231.52.0/24",)
ROUTED_BEHIND_B = "10.231.99.0/24"  # a route of net B's result: its metric is braid's to set
PINGS = 10
NOISE = 4  # packets an interface may send unasked meanwhile (ARP, neighbour discovery)
_MANY_IPS = "kmanyips"


def _nad(setup: EngineSetup, name: str, config: dict[str, Any], routing: str | None) -> None:
    """A NAD manifest, with braid's routing annotation when ``routing`` is given."""
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if routing is not None:
        meta["annotations"] = {ROUTING: routing}
    manifest = {
        "apiVersion": "k8s.cni.cncf.io/v1",
        "kind": "NetworkAttachmentDefinition",
        "metadata": meta,
        "spec": {"config": json.dumps(config)},
    }
    (setup.nad_dir / f"default-{name}.json").write_text(json.dumps(manifest))


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    _nad(setup, "net-a", bridge_nad(setup, "krta", *NET_A), '{"sourceRouting": true}')
    _nad(setup, "net-a-plain", bridge_nad(setup, "krta", *NET_A), None)
    net_b = bridge_nad(setup, "krtb", *NET_B)
    net_b["ipam"]["routes"] = [{"dst": ROUTED_BEHIND_B, "gw": "10.231.52.1"}]
    _nad(setup, "net-b", net_b, None)
    return setup


CLIENT_SUBNETS = ["10.231.61", "10.231.62"]


def _address(setup: EngineSetup, ifname: str) -> str:
    out = subprocess.run(
        ["ip", "-n", setup.pod.name, "-4", "-j", "addr", "show", "dev", ifname],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return str(json.loads(out)[0]["addr_info"][0]["local"])


def _replies_leave_by(setup: EngineSetup, client: Client, target: str) -> dict[str, int]:
    """Pings ``target`` from ``client`` (every echo answered); the pod's transmit deltas."""
    before = oracle.tx_packets(setup.pod.name)
    assert client.ping(target, PINGS) == PINGS, f"{client.address} got no answer from {target}"
    after = oracle.tx_packets(setup.pod.name)
    return {name: after[name] - before.get(name, 0) for name in after}


def test_each_address_answers_through_its_own_interface(engine: EngineSetup) -> None:
    selection: list[dict[str, Any]] = [
        {"name": "net-a"},  # the NAD's annotation opts in
        {"name": "net-b", ROUTING: {"sourceRouting": True, "metric": 300}},
    ]
    engine.add(selection)
    pod = engine.pod.name
    a, b = _address(engine, "net1"), _address(engine, "net2")

    with oracle.clients(engine.host, CLIENT_SUBNETS) as clients:
        for client, target, ifname in ((clients[0], a, "net1"), (clients[1], b, "net2")):
            sent = _replies_leave_by(engine, client, target)
            assert sent[ifname] >= PINGS, sent
            assert sent["eth0"] < NOISE, sent

    table_a = oracle.TABLE_BASE + oracle.ifindex(pod, "net1")
    rules = oracle.rules(pod)
    assert {"src": f"{a}/32", "table": table_a, "priority": 1000} in rules
    v6 = [r for r in rules if r["table"] == table_a and r["src"] and ":" in r["src"]]
    assert len(v6) == 1, rules
    assert v6[0]["src"].startswith("fd00:231:51:")
    assert v6[0]["src"].endswith("/128")
    routes_a = oracle.table_routes(pod, table_a)
    index_a = oracle.ifindex(pod, "net1")
    assert ("10.231.51.0/24", None, index_a) in routes_a
    assert ("0.0.0.0/0", "10.231.51.1", index_a) in routes_a
    assert ("fd00:231:51::/64", None, index_a) in routes_a
    assert (ROUTED_BEHIND_B, "10.231.52.1", 300) in oracle.main_routes(pod, "net2")

    result, code = engine.run("CHECK", {NETWORKS: json.dumps(selection)})
    assert (result, code) == (None, 0)
    subprocess.run(["ip", "-n", pod, "rule", "del", "from", a, "lookup", str(table_a)], check=True)
    error, code = engine.run("CHECK", {NETWORKS: json.dumps(selection)})
    assert code == 1
    assert error["code"] == 999
    assert "routing of net1" in error["msg"]
    assert f"rule from {a} lookup {table_a} is missing" in error["details"]

    engine.delete(selection)
    assert oracle.braid_tables(pod) == set()
    engine.assert_nothing_left()


def test_without_the_opt_in_replies_leave_by_the_default_route(engine: EngineSetup) -> None:
    selection = [{"name": "net-a-plain"}]
    engine.add(selection)

    with oracle.clients(engine.host, CLIENT_SUBNETS[:1]) as clients:
        sent = _replies_leave_by(engine, clients[0], _address(engine, "net1"))
    assert sent["eth0"] >= PINGS, sent
    assert sent["net1"] < NOISE, sent
    assert oracle.braid_tables(engine.pod.name) == set()

    engine.delete(selection)
    engine.assert_nothing_left()


def test_del_removes_the_rules_even_when_the_interface_is_gone(engine: EngineSetup) -> None:
    selection = [{"name": "net-a"}]
    engine.add(selection)
    pod = engine.pod.name
    assert oracle.braid_tables(pod) != set()
    subprocess.run(["ip", "-n", pod, "link", "del", "net1"], check=True)

    engine.delete(selection)
    assert oracle.braid_tables(pod) == set()
    assert [r for r in oracle.rules(pod) if r["table"] > oracle.TABLE_BASE] == []


def test_a_result_with_thousands_of_addresses_is_refused(engine: EngineSetup) -> None:
    ips = [
        {"address": f"10.{200 + i // 65536}.{i // 256 % 256}.{i % 256}/8"} for i in range(10_000)
    ]
    doc = {"cniVersion": "1.0.0", "interfaces": [{"name": "net1", "sandbox": engine.pod.path}]}
    doc["ips"] = ips
    (engine.root / "many.json").write_text(json.dumps(doc))
    script = engine.plugin_dir / _MANY_IPS
    script.write_text(
        '#!/bin/sh\ncat >/dev/null\ncase "$CNI_COMMAND" in\n'
        'VERSION) echo \'{"cniVersion":"1.0.0","supportedVersions":["1.0.0"]}\' ;;\n'
        f"ADD) cat {engine.root / 'many.json'} ;;\nesac\nexit 0\n"
    )
    script.chmod(0o755)
    _nad(engine, "many", {"cniVersion": "1.0.0", "type": _MANY_IPS}, '{"sourceRouting": true}')

    error, code = engine.run("ADD", {NETWORKS: json.dumps([{"name": "many"}])})
    assert code == 1
    assert error["code"] == 100
    assert "cannot set up the routing of net1" in error["msg"]
    assert "at most 16 addresses" in error["details"]
    assert oracle.rules(engine.pod.name) == [
        r for r in oracle.rules(engine.pod.name) if r["table"] <= oracle.TABLE_BASE
    ]
    engine.assert_nothing_left()


_FAILING_DEL = "kfaildel"
# A chained plugin: passes its prevResult on at ADD and CHECK, fails every DEL (until told not
# to by the file next to it).
_FAILING_DEL_SCRIPT = """#!/usr/bin/env python3
import json, os, sys
conf = json.load(sys.stdin)
command = os.environ.get("CNI_COMMAND")
if command == "VERSION":
    print(json.dumps({"cniVersion": "1.0.0", "supportedVersions": ["1.0.0"]}))
elif command == "ADD":
    print(json.dumps(conf["prevResult"]))
elif command == "DEL" and not os.path.exists(__file__ + ".ok"):
    print(json.dumps({"cniVersion": "1.0.0", "code": 100, "msg": "DEL refused"}))
    sys.exit(1)
"""


def test_del_removes_the_rules_when_the_delegates_del_fails(engine: EngineSetup) -> None:
    script = engine.plugin_dir / _FAILING_DEL
    script.write_text(_FAILING_DEL_SCRIPT)
    script.chmod(0o755)
    chain = {
        "cniVersion": "1.0.0",
        "plugins": [bridge_nad(engine, "krtc", "10.231.53.0/24"), {"type": _FAILING_DEL}],
    }
    chain["plugins"][0].pop("cniVersion")
    _nad(engine, "net-c", chain, '{"sourceRouting": true}')
    selection = [{"name": "net-c"}]
    engine.add(selection)
    pod = engine.pod.name
    assert oracle.braid_tables(pod) != set()

    error, code = engine.run("DEL", {NETWORKS: json.dumps(selection)})
    assert code == 1
    assert "DEL refused" in json.dumps(error)
    assert [r for r in oracle.rules(pod) if r["table"] > oracle.TABLE_BASE] == []
    assert oracle.braid_tables(pod) == set()

    (engine.plugin_dir / f"{_FAILING_DEL}.ok").write_text("")
    engine.delete(selection)
    engine.assert_nothing_left()
