"""A pod's opt-out of ``defaultNetworks`` on the real kernel, with the reference plugins: the
networks it drops are never attached (no interface, no lease), the ones it keeps are; where
the operator forbids it, the ADD is refused with error 7 and attaches nothing. In process (as
``braid-thin`` runs) and through a real daemon, which answer alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import CLUSTER, NETWORKS, EngineSetup, bridge_nad, make_engine
from kernel_daemon import Daemon, call

pytestmark = pytest.mark.kernel

OPT_OUT = "braid-cni.io/default-networks"
SIDE_A = "10.231.71.0/24"
SIDE_B = "10.231.72.0/24"
NET_A = "10.231.73.0/24"
DEFAULTS: dict[str, Any] = {"defaultNetworks": ["side-a", "side-b"]}
ALLOWED: dict[str, Any] = {**DEFAULTS, "allowDefaultNetworksOptOut": True}


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("side-a", bridge_nad(setup, "kopta", SIDE_A), namespace="kube-system")
    setup.nad("side-b", bridge_nad(setup, "koptb", SIDE_B), namespace="kube-system")
    setup.nad("net-a", bridge_nad(setup, "koptn", NET_A))
    return setup


def attached(engine: EngineSetup) -> dict[str, str]:
    """interface -> the network braid recorded attaching there."""
    return {a["ifname"]: a["name"] for a in engine.record()["attachments"]}


def test_without_the_annotation_every_default_network_is_attached(engine: EngineSetup) -> None:
    annotations = {NETWORKS: "net-a"}
    assert engine.run("ADD", annotations, **DEFAULTS)[1] == 0
    assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1", "net2", "net3"}
    assert engine.run("DEL", annotations, **DEFAULTS) == (None, 0)
    engine.assert_nothing_left()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("none", {"eth0": CLUSTER, "net1": "default/net-a"}),
        ("side-b", {"eth0": CLUSTER, "net1": "kube-system/side-b", "net2": "default/net-a"}),
    ],
)
def test_an_opted_out_network_gets_no_interface_and_no_lease(
    engine: EngineSetup, value: str, expected: dict[str, str]
) -> None:
    annotations = {NETWORKS: "net-a", OPT_OUT: value}
    result, code = engine.run("ADD", annotations, **ALLOWED)
    assert code == 0, result

    assert set(kernel.links(engine.pod.name)) == {"lo", *expected}
    assert attached(engine) == expected
    assert engine.leases("side-a") == set(), "side-a was dropped: no address taken"
    assert len(engine.leases("net-a")) == 1
    assert len(engine.leases("side-b")) == (1 if value == "side-b" else 0)

    assert engine.run("DEL", annotations, **ALLOWED) == (None, 0)
    engine.assert_nothing_left()
    assert engine.leases("net-a") == engine.leases("side-b") == set()


def test_a_forbidden_opt_out_attaches_nothing(engine: EngineSetup) -> None:
    annotations = {NETWORKS: "net-a", OPT_OUT: "none"}
    result, code = engine.run("ADD", annotations, **DEFAULTS)
    assert (code, result["code"]) == (1, 7), result
    assert OPT_OUT in result["msg"]
    assert "allowDefaultNetworksOptOut" in result["msg"]
    engine.assert_nothing_left()
    for network in ("side-a", "side-b", "net-a", CLUSTER):
        assert engine.leases(network) == set(), network

    assert engine.run("DEL", annotations, **DEFAULTS) == (None, 0)
    engine.assert_nothing_left()


def test_the_daemon_obeys_the_opt_out_and_refuses_it_alike(
    engine: EngineSetup, tmp_path: Path
) -> None:
    daemon = Daemon(engine.host, tmp_path / "run", tmp_path / "daemon.log").start()
    try:
        annotations = {NETWORKS: "net-a", OPT_OUT: "none"}
        refused = call(daemon, engine, "ADD", engine.braid_conf(annotations, **DEFAULTS))
        assert refused == engine.run("ADD", annotations, **DEFAULTS), "as braid-thin answers"
        assert (refused[1], refused[0]["code"]) == (1, 7)
        engine.assert_nothing_left()

        result, code = call(daemon, engine, "ADD", engine.braid_conf(annotations, **ALLOWED))
        assert code == 0, result
        assert attached(engine) == {"eth0": CLUSTER, "net1": "default/net-a"}
        assert set(kernel.links(engine.pod.name)) == {"lo", "eth0", "net1"}
        assert call(daemon, engine, "DEL", engine.braid_conf(annotations, **ALLOWED)) == (None, 0)
        engine.assert_nothing_left()
    finally:
        daemon.stop()
    assert daemon.wait() == 0
