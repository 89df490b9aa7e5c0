"""podman 4.3's CNI backend drives braid (shim + daemon) without Kubernetes: containers on the
braid network get the extra networks their pod manifest in `podDir` asks for (podman passes
only K8S_POD_NAME, the container's name; braid takes the namespace `default`), a restart moves
them to a new namespace, and stop and rm leave nothing behind. Configuration: docs/podman.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import runtime_oracle as oracle
from runtime_daemon import Daemon
from runtime_node import Node
from runtime_podman import IMAGE, Podman
from runtime_requirements import require_binaries

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def podman(node: Node, braid_daemon: Daemon) -> Iterator[Podman]:
    require_binaries("podman", "conmon", "runc")
    runtime = Podman(node=node)
    try:
        runtime.start()
    except RuntimeError as exc:
        runtime.stop()
        pytest.fail(f"runtime tier: {exc}", pytrace=False)
    yield runtime
    runtime.stop()


@pytest.fixture
def containers(podman: Podman) -> Iterator[list[str]]:
    """Names of the containers a test runs; whatever it left is removed at its end."""
    names: list[str] = []
    yield names
    for name in names:
        podman("rm", "--force", "--time", "0", name, check=False)


@dataclass
class Running:
    """A started container: its id, its namespace's name, the node links it added."""

    id: str
    netns: str
    ip: str
    host_links: list[str]


def started(podman: Podman, name: str, before: set[str]) -> Running:
    info = podman.inspect(name)
    assert info["State"]["Running"]
    settings = info["NetworkSettings"]
    links = [link for link in oracle.host_pod_links(podman.node) if link not in before]
    return Running(
        id=info["Id"],
        netns=oracle.netns_name(settings["SandboxKey"]),
        ip=settings["Networks"]["braid"]["IPAddress"],
        host_links=links,
    )


def run(
    podman: Podman, containers: list[str], name: str, *options: str, command: tuple[str, ...] = ()
) -> Running:
    before = set(oracle.host_pod_links(podman.node))
    containers.append(name)
    podman("run", "--detach", "--name", name, *options, IMAGE, *command)
    return started(podman, name, before)


def restart(podman: Podman, name: str) -> Running:
    before = set(oracle.host_pod_links(podman.node))
    podman("restart", "--time", "1", name)
    return started(podman, name, before)


def assert_detached(node: Node, running: Running) -> None:
    """The container's networks are gone: namespace links, record, leases, cache entries."""
    assert not oracle.has_status(node, running.id)
    assert set(running.host_links).isdisjoint(oracle.host_pod_links(node))
    assert oracle.leftovers(node, running.id) == []
    assert not (Path("/run/netns") / running.netns).exists()


def assert_web_networks(node: Node, running: Running) -> None:
    links = oracle.links(running.netns)
    assert {"eth0", "data0", "mv0"} <= set(links)
    assert links["mv0"]["address"] == "02:42:0a:59:02:14"
    assert oracle.addresses(running.netns, "mv0") == {"10.89.2.20/24"}
    assert oracle.addresses(running.netns, "eth0") == {f"{running.ip}/24"}
    assert oracle.default_routes(running.netns) == [("10.89.2.1", "mv0")]
    network_status = oracle.network_status(node, running.id)
    assert [(e["name"], e["interface"], e.get("default", False)) for e in network_status] == [
        ("cluster", "eth0", True),
        ("default/bridge-net", "data0", False),
        ("default/macvlan-net", "mv0", False),
    ]
    assert network_status[0]["ips"] == [running.ip]
    assert network_status[2]["ips"] == ["10.89.2.20"]


def record(node: Node, container_id: str) -> dict[str, Any]:
    path = node.path("/var/lib/cni/braid") / "records" / f"{container_id}.json"
    value = json.loads(path.read_text())
    assert isinstance(value, dict)
    return value


def test_container_gets_its_manifest_networks_through_restart_stop_and_rm(
    podman: Podman, containers: list[str], node: Node
) -> None:
    first = run(podman, containers, "web", "--publish", "18080:80")
    assert_web_networks(node, first)
    assert (18080, f"{first.ip}:80") in oracle.port_forwards(node)
    # podman names no namespace: braid took `default` and the manifest named like the container.
    assert (record(node, first.id)["podNamespace"], record(node, first.id)["podName"]) == (
        "default",
        "web",
    )

    second = restart(podman, "web")
    assert second.id == first.id
    assert second.netns != first.netns, "podman gives every start a new namespace"
    assert not (Path("/run/netns") / first.netns).exists()
    assert set(first.host_links).isdisjoint(oracle.host_pod_links(node))
    assert_web_networks(node, second)
    assert record(node, second.id)["netns"].endswith(second.netns)
    assert {f for f in oracle.port_forwards(node) if f[0] == 18080} == {(18080, f"{second.ip}:80")}

    podman("stop", "--time", "1", "web")
    assert_detached(node, second)
    assert not any(port == 18080 for port, _ in oracle.port_forwards(node))
    podman("rm", "web")
    containers.remove("web")
    assert_detached(node, second)


def test_comma_format_manifest_names_interfaces_by_position(
    podman: Podman, containers: list[str], node: Node
) -> None:
    running = run(podman, containers, "db")
    assert {"eth0", "net1", "st0"} <= set(oracle.links(running.netns))
    (st0,) = oracle.addresses(running.netns, "st0")
    assert st0.startswith("10.89.3.")
    assert oracle.default_routes(running.netns) == [("10.88.20.1", "eth0")]
    names = [e["name"] for e in oracle.network_status(node, running.id)]
    assert names == ["cluster", "default/bridge-net", "default/storage-net"]
    podman("rm", "--force", "--time", "1", "db")
    containers.remove("db")
    assert_detached(node, running)


def test_container_without_manifest_gets_the_default_network_only(
    podman: Podman, containers: list[str], node: Node
) -> None:
    running = run(podman, containers, "plain")
    assert set(oracle.links(running.netns)) == {"lo", "eth0"}
    assert [e["name"] for e in oracle.network_status(node, running.id)] == ["cluster"]
    podman("rm", "--force", "--time", "1", "plain")
    containers.remove("plain")
    assert_detached(node, running)


def test_container_exiting_on_its_own_is_detached_by_podman_cleanup(
    podman: Podman, containers: list[str], node: Node
) -> None:
    # conmon's exit hook (`podman container cleanup`) sends the DEL, nobody calls stop.
    running = run(podman, containers, "db", command=("sleep", "1"))
    deadline = time.monotonic() + 30
    while oracle.has_status(node, running.id):
        assert time.monotonic() < deadline, "no DEL after the container exited"
        time.sleep(0.2)
    assert podman.inspect("db")["State"]["Status"] == "exited"
    assert_detached(node, running)
    podman("rm", "db")
    containers.remove("db")
