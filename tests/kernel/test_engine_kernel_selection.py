"""The engine on the real kernel: which networks a pod gets, under which interface names.

Both annotation formats, name injection, the same network twice, a NAD of another namespace,
and interface-name collisions (planned, and with an interface already in the pod).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kernel_netns
import kernel_oracle as kernel
import pytest
from engine_fixtures import (
    CLUSTER,
    NETWORKS,
    EngineSetup,
    bridge_nad,
    make_engine,
)

pytestmark = pytest.mark.kernel

NET_A = "10.231.21.0/24"
NET_C = "10.231.23.0/24"


@pytest.fixture
def engine(
    host_netns: kernel_netns.Netns, pod_netns: kernel_netns.Netns, tmp_path: Path
) -> EngineSetup:
    setup = make_engine(host_netns, pod_netns, tmp_path)
    setup.nad("net-a", bridge_nad(setup, "kbr1", NET_A))
    setup.nad("net-c", bridge_nad(setup, "kbr3", NET_C), namespace="other-ns")
    return setup


def in_subnet(addresses: set[str], subnet: str) -> bool:
    prefix = subnet.rsplit(".", 1)[0] + "."
    return len(addresses) == 1 and next(iter(addresses)).startswith(prefix)


def status_entries(engine: EngineSetup) -> list[dict[str, Any]]:
    status: list[dict[str, Any]] = engine.record()["networkStatus"]
    return status


ANNOTATION_FORMATS = {
    "text": "net-a, other-ns/net-c@ifc",
    "json": json.dumps(
        [{"name": "net-a"}, {"name": "net-c", "namespace": "other-ns", "interface": "ifc"}]
    ),
}


@pytest.mark.parametrize("form", sorted(ANNOTATION_FORMATS))
def test_both_annotation_formats_attach_the_same_networks(engine: EngineSetup, form: str) -> None:
    annotation = ANNOTATION_FORMATS[form]
    result = engine.add(annotation)

    links = kernel.links(engine.pod.name)
    assert set(links) == {"lo", "eth0", "net1", "ifc"}
    assert in_subnet(kernel.addresses(engine.pod.name, "net1"), NET_A)
    assert in_subnet(kernel.addresses(engine.pod.name, "ifc"), NET_C)
    # The runtime receives the default network's result only.
    sandbox = [i["name"] for i in result["interfaces"] if i.get("sandbox")]
    assert sandbox == ["eth0"]

    status = status_entries(engine)
    assert [s["name"] for s in status] == [CLUSTER, "default/net-a", "other-ns/net-c"]
    assert [s["interface"] for s in status] == ["eth0", "net1", "ifc"]
    assert [s.get("default", False) for s in status] == [True, False, False]
    assert status[2]["mac"] == links["ifc"]["address"]

    engine.delete(annotation)
    engine.assert_nothing_left()
    assert engine.leases("net-a") == set()
    assert engine.leases(CLUSTER) == set()


def test_nad_without_name_gets_the_nad_name(engine: EngineSetup) -> None:
    """host-local keeps leases under the network's name: the injected name is the NAD's."""
    engine.add("net-a")
    leases = engine.leases("net-a")
    assert len(leases) == 1
    assert kernel.addresses(engine.pod.name, "net1") == {f"{next(iter(leases))}/24"}
    # The record holds each result (the engine writes no result cache entry).
    (cluster, net_a) = engine.record()["attachments"]
    assert [ip["address"] for ip in net_a["result"]["ips"]] == [f"{next(iter(leases))}/24"]
    assert cluster["result"]["ips"]
    assert not (engine.cni_dir / "results").exists()
    assert not (engine.cni_dir / "locks").exists(), "the runtime took lock files of its own"

    engine.delete("net-a")
    engine.assert_nothing_left()
    assert engine.leases("net-a") == set()


def test_same_network_twice_gives_two_attachments(engine: EngineSetup) -> None:
    engine.add("net-a,net-a")

    first = kernel.addresses(engine.pod.name, "net1")
    second = kernel.addresses(engine.pod.name, "net2")
    assert in_subnet(first, NET_A)
    assert in_subnet(second, NET_A)
    assert first != second
    assert len(engine.leases("net-a")) == 2
    status = status_entries(engine)
    assert [(s["name"], s["interface"]) for s in status[1:]] == [
        ("default/net-a", "net1"),
        ("default/net-a", "net2"),
    ]

    engine.delete("net-a,net-a")
    engine.assert_nothing_left()
    assert engine.leases("net-a") == set()


def test_explicit_name_colliding_with_a_position_fails_before_anything(
    engine: EngineSetup,
) -> None:
    """`net-a` asks for net2; `net-c` at position 2 gets net2 too: the ADD fails, untouched."""
    selections = [
        {"name": "net-a", "interface": "net2"},
        {"name": "net-c", "namespace": "other-ns"},
    ]
    error, code = engine.run("ADD", {NETWORKS: json.dumps(selections)})

    assert code == 1
    assert error["code"] == 7
    assert "'net2'" in error["msg"]
    engine.assert_nothing_left()
    assert engine.leases(CLUSTER) == set()


@pytest.mark.parametrize("taken", ["net1", "ifc"], ids=["first-extra", "last-extra"])
def test_name_already_in_the_pod_fails_before_any_delegate(engine: EngineSetup, taken: str) -> None:
    """An interface the pod already has fails the attachment that wants it, whatever its place
    in the plan, before any delegate runs: the whole plan is checked against the pod's
    interfaces once (no dummy module here: a veth pair inside the pod stands in)."""
    pair = [taken, "type", "veth", "peer", "name", "kpeer1"]
    subprocess.run(["ip", "-n", engine.pod.name, "link", "add", *pair], check=True)
    error, code = engine.run("ADD", {NETWORKS: "net-a,other-ns/net-c@ifc"})

    assert code == 1
    assert error["code"] == 7
    assert repr(taken) in error["msg"]
    assert kernel.link_kind(kernel.links(engine.pod.name)[taken]) == "veth"
    engine.assert_nothing_left(pod_links=frozenset({"lo", taken, "kpeer1"}))
    for network in (CLUSTER, "net-a", "net-c"):
        assert not (engine.ipam_dir / network).exists(), f"a delegate of {network} ran"
