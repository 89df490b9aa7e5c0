"""containerd 1.6's CRI plugin drives braid (shim + daemon) as the node's CNI, as kubelet would:
pod sandboxes whose annotations ask for extra networks from the file store, checked inside
their namespaces and in braid's network-status, then stopped (DEL with the netns) and removed
(DEL again, netns empty) with nothing left behind. Configuration: docs/containerd.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import runtime_oracle as oracle
from runtime_containerd import Containerd, Sandboxes
from runtime_cri import SANDBOX_NOTREADY, SANDBOX_READY, SandboxStatus
from runtime_daemon import Daemon
from runtime_node import EXAMPLES, Node
from runtime_requirements import require_binaries

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def containerd(node: Node, braid_daemon: Daemon) -> Iterator[Containerd]:
    require_binaries("containerd", "ctr", "runc", "containerd-shim-runc-v2")
    runtime = Containerd(node=node, log_path=node.root / "containerd.log")
    try:
        runtime.start()
    except RuntimeError as exc:
        runtime.stop()
        runtime.reap()
        pytest.fail(f"runtime tier: {exc}", pytrace=False)
    yield runtime
    runtime.stop()
    cleaned = runtime.reap()
    assert not cleaned, f"sandboxes outlived the tests: {cleaned}"


@pytest.fixture
def sandboxes(containerd: Containerd) -> Iterator[Sandboxes]:
    tracker = Sandboxes(containerd)
    yield tracker
    tracker.clean_up()


def pod_config(name: str) -> dict[str, Any]:
    """The crictl-style pod sandbox configuration docs/containerd.md shows."""
    config = json.loads((EXAMPLES / "containerd" / f"pod-{name}.json").read_text())
    assert isinstance(config, dict)
    return config


@dataclass
class Pod:
    """A running sandbox and the host-side links its networks added to the node."""

    status: SandboxStatus
    host_links: list[str]

    @property
    def id(self) -> str:
        return self.status.id

    @property
    def ip(self) -> str:
        return self.status.ip


def run_sandbox(sandboxes: Sandboxes, node: Node, name: str) -> Pod:
    before = set(oracle.host_pod_links(node))
    status = sandboxes.run(pod_config(name))
    assert status.state == SANDBOX_READY
    return Pod(status, [link for link in oracle.host_pod_links(node) if link not in before])


def daemon_calls(daemon: Daemon, container_id: str, verb: str) -> list[dict[str, Any]]:
    """The daemon's JSON log lines answering `verb` for the container."""
    found = []
    for line in daemon.log_text().splitlines():
        entry = json.loads(line)
        if entry.get("containerId") == container_id and entry.get("verb") == verb:
            found.append(entry)
    return found


def remove_sandbox(sandboxes: Sandboxes, daemon: Daemon, node: Node, pod: Pod) -> None:
    """Stop then remove, as kubelet does; braid answers both DELs and nothing stays."""
    sandbox_id = pod.id
    cri = sandboxes.cri
    cri.stop_pod_sandbox(sandbox_id)
    assert cri.pod_sandbox_status(sandbox_id).state == SANDBOX_NOTREADY
    assert not oracle.has_status(node, sandbox_id), "the record survived the first DEL"
    cri.remove_pod_sandbox(sandbox_id)
    sandboxes.removed(sandbox_id)
    with pytest.raises(grpc.RpcError) as gone:
        cri.pod_sandbox_status(sandbox_id)
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND
    deletes = wait_for_log(daemon, sandbox_id, "DEL", 2)
    assert all("success" in entry["msg"] for entry in deletes), deletes
    assert oracle.leftovers(node, sandbox_id) == []
    assert set(pod.host_links).isdisjoint(oracle.host_pod_links(node))
    assert not Path(pod.status.netns_path).exists(), "the sandbox's namespace outlived it"


def wait_for_log(daemon: Daemon, container_id: str, verb: str, count: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 10
    while len(entries := daemon_calls(daemon, container_id, verb)) < count:
        assert time.monotonic() < deadline, f"{verb} answered {len(entries)}x, not {count}x"
        time.sleep(0.05)
    return entries


def test_json_annotation_gives_interfaces_addresses_mac_and_default_route(
    sandboxes: Sandboxes, braid_daemon: Daemon, node: Node
) -> None:
    pod = run_sandbox(sandboxes, node, "web")
    ns = oracle.netns_name(pod.status.netns_path)
    links = oracle.links(ns)
    assert {"eth0", "data0", "mv0"} <= set(links)
    assert oracle.link_kind(links["mv0"]) == "macvlan"
    assert links["mv0"]["address"] == "02:42:0a:59:02:0a"
    assert oracle.addresses(ns, "mv0") == {"10.89.2.10/24"}
    (data0,) = oracle.addresses(ns, "data0")
    assert data0.startswith("10.89.1.")
    assert oracle.addresses(ns, "eth0") == {f"{pod.ip}/24"}
    # default-route: the requested gateway is the pod's only IPv4 default route.
    assert oracle.default_routes(ns) == [("10.89.2.1", "mv0")]

    network_status = oracle.network_status(node, pod.id)
    assert [(e["name"], e["interface"]) for e in network_status] == [
        ("cluster", "eth0"),
        ("default/bridge-net", "data0"),
        ("default/macvlan-net", "mv0"),
    ]
    assert [e.get("default", False) for e in network_status] == [True, False, False]
    assert network_status[0]["ips"] == [pod.ip]
    assert network_status[1]["ips"] == [data0.split("/")[0]]
    assert network_status[2]["ips"] == ["10.89.2.10"]
    assert network_status[2]["mac"] == "02:42:0a:59:02:0a"
    # containerd's portMappings (Go field names) reached the default network's portmap.
    assert (18080, f"{pod.ip}:80") in oracle.port_forwards(node)

    remove_sandbox(sandboxes, braid_daemon, node, pod)
    assert not any(port == 18080 for port, _ in oracle.port_forwards(node))


def test_comma_annotation_names_interfaces_by_position(
    sandboxes: Sandboxes, braid_daemon: Daemon, node: Node
) -> None:
    pod = run_sandbox(sandboxes, node, "db")
    ns = oracle.netns_name(pod.status.netns_path)
    assert {"eth0", "net1", "st0"} <= set(oracle.links(ns))
    (net1,) = oracle.addresses(ns, "net1")
    (st0,) = oracle.addresses(ns, "st0")
    assert net1.startswith("10.89.1.")
    assert st0.startswith("10.89.3.")
    routes = oracle.routes(ns)
    assert {"dst": "10.200.0.0/16", "gateway": "10.89.3.1", "dev": "st0"}.items() <= next(
        r for r in routes if r["dst"] == "10.200.0.0/16"
    ).items()
    assert oracle.default_routes(ns) == [("10.88.20.1", "eth0")]
    names = [(e["name"], e["interface"]) for e in oracle.network_status(node, pod.id)]
    assert names == [
        ("cluster", "eth0"),
        ("default/bridge-net", "net1"),
        ("default/storage-net", "st0"),
    ]

    remove_sandbox(sandboxes, braid_daemon, node, pod)


def test_sandbox_without_annotations_gets_the_default_network_only(
    sandboxes: Sandboxes, braid_daemon: Daemon, node: Node
) -> None:
    # containerd sends the pod-annotations capability as JSON null here.
    pod = run_sandbox(sandboxes, node, "plain")
    ns = oracle.netns_name(pod.status.netns_path)
    assert set(oracle.links(ns)) == {"lo", "eth0"}
    network_status = oracle.network_status(node, pod.id)
    assert network_status == [
        {
            "name": "cluster",
            "interface": "eth0",
            "ips": [pod.ip],
            "mac": oracle.links(ns)["eth0"]["address"],
            "default": True,
            # the gateway the pod's default route really goes through
            "gateway": [gw for gw, dev in oracle.default_routes(ns) if dev == "eth0"],
        }
    ]
    assert network_status[0]["gateway"] == ["10.88.20.1"]
    remove_sandbox(sandboxes, braid_daemon, node, pod)


def test_sandboxes_side_by_side_keep_their_own_networks(
    sandboxes: Sandboxes, braid_daemon: Daemon, node: Node
) -> None:
    web = run_sandbox(sandboxes, node, "web")
    db = run_sandbox(sandboxes, node, "db")
    web_ns, db_ns = (
        oracle.netns_name(web.status.netns_path),
        oracle.netns_name(db.status.netns_path),
    )
    assert web_ns != db_ns
    assert web.ip != db.ip
    assert oracle.addresses(web_ns, "data0").isdisjoint(oracle.addresses(db_ns, "net1"))
    remove_sandbox(sandboxes, braid_daemon, node, web)
    # The other pod is untouched by its neighbour's teardown.
    assert {"eth0", "net1", "st0"} <= set(oracle.links(db_ns))
    assert oracle.network_status(node, db.id)[0]["ips"] == [db.ip]
    remove_sandbox(sandboxes, braid_daemon, node, db)


def test_unknown_network_fails_the_sandbox_and_leaves_nothing(
    sandboxes: Sandboxes, braid_daemon: Daemon, node: Node
) -> None:
    config = pod_config("db")
    config["metadata"]["name"] = "lost"
    config["annotations"]["k8s.v1.cni.cncf.io/networks"] = "no-such-net"
    with pytest.raises(grpc.RpcError) as failed:
        sandboxes.run(config)
    assert "no-such-net" in str(failed.value.details())
    assert oracle.host_pod_links(node) == []
    records = node.path("/var/lib/cni/braid/records")
    assert not records.exists() or list(records.iterdir()) == []
