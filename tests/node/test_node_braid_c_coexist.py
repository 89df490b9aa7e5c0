"""braid beside a primary that claims the node's CNI configuration directory, on the real
kubelet with the DaemonSet (docs/daemon.md, "When another agent claims the directory"):
braid's file removed again and again, as Cilium's `cni.exclusive` does, and a file a known
primary writes that sorts before braid's. Each is a Warning event on the node, a metric and a
line of `/readyz?verbose` (the daemon stays ready), and `braidctl doctor`, run in the daemon's
pod as docs/operations.md says, names the cause and the fix. The shadowing file is removed and
braid's file is back as it was when each test ends; braid's events are deleted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import node_braid as nb
import pytest
from k8s_engine import http_get
from node_braid import Braid
from node_cluster import Node
from test_node_braid_8_uninstall import remove_braid

pytestmark = pytest.mark.timeout(420)
REMOVED, SHADOWED = "CNIConfigurationRemoved", "CNIConfigurationShadowed"
SHADOW = nb.CONF_DIR / "0-cilium.conflist"  # sorts before 00-braid.conflist
CILIUM = {"cniVersion": "1.0.0", "name": "cilium", "plugins": [{"type": "cilium-cni"}]}


@pytest.fixture(scope="module")
def coexisting(node: Node) -> Iterator[Braid]:
    """braid as deployed (deployed here, and removed after, when an earlier scenario removed
    it); braid's events about the node are deleted after."""
    had = node.get("daemonset", "braid", nb.NAMESPACE) is not None
    braid = nb.deployed(node)
    try:
        yield braid
    finally:
        for event in node_events(node):
            if event.get("reason") in (REMOVED, SHADOWED):
                name = event["metadata"]["name"]
                node.kubectl("delete", "event", "-n", "default", name, check=False)
        if not had:
            remove_braid(node)
            node.wait_deleted("namespace", nb.NAMESPACE, timeout=120)


def node_events(node: Node) -> list[dict[str, Any]]:
    return [
        e
        for e in node.events("default")
        if e.get("involvedObject", {}).get("kind") == "Node"
        and e["involvedObject"].get("name") == node.node_name
    ]


def warning(node: Node, reason: str) -> dict[str, Any] | None:
    found = [e for e in node_events(node) if e.get("reason") == reason]
    return found[-1] if found else None


def sample(braid: Braid, name: str) -> float | None:
    """The value of one sample (`name{labels}` as exposed); None when absent."""
    for line in braid.metrics().splitlines():
        key, _, value = line.rpartition(" ")
        if key == name:
            return float(value)
    return None


def readiness(braid: Braid) -> tuple[int, str]:
    return http_get(f"{braid.node.node_ip}:9190", "/readyz?verbose")


def test_a_file_removed_again_and_again_is_named_on_the_node(coexisting: Braid) -> None:
    braid, node = coexisting, coexisting.node
    before = braid.conflist()
    rewrites = sample(braid, "braid_daemon_cni_config_rewrites_total") or 0.0
    for attempt in range(3):
        nb.BRAID_CONFLIST.unlink()
        node.wait_for(
            f"braid's conflist written again ({attempt + 1})",
            lambda: braid.conflist() == before,
            timeout=30,
        )
    event = node.wait_for(f"a {REMOVED} event", lambda: warning(node, REMOVED), timeout=60)
    assert event["type"] == "Warning"
    assert event["source"]["host"] == node.node_name
    assert f"{nb.BRAID_CONFLIST} disappeared" in event["message"]
    assert (sample(braid, "braid_daemon_cni_config_rewrites_total") or 0.0) >= rewrites + 3
    status, body = readiness(braid)
    assert status == 200, body
    assert f"cni configuration: removed: {nb.BRAID_CONFLIST} written again" in body
    _, found = braid.doctor()
    kept = found["braid's CNI configuration kept"]
    assert kept["status"] == "fail", kept
    assert "disappeared" in kept["detail"], kept
    assert kept["fix"], kept


def test_a_primarys_file_sorting_first_is_named_with_its_fix(coexisting: Braid) -> None:
    braid, node = coexisting, coexisting.node
    before = braid.conflist()
    shadowed = f'braid_daemon_cni_config_shadowed{{file="{SHADOW.name}"}}'
    SHADOW.write_text(json.dumps(CILIUM))
    try:
        node.wait_for("the shadow in the metrics", lambda: sample(braid, shadowed) == 1)
        event = node.wait_for(f"a {SHADOWED} event", lambda: warning(node, SHADOWED))
        assert event["message"].startswith(f"{SHADOW} sorts before 00-braid.conflist")
        assert "Cilium" in event["message"]
        assert "cni.exclusive=false" in event["message"]
        status, body = readiness(braid)
        assert status == 200, body
        assert f"cni configuration: shadowed: {SHADOW} sorts before" in body
        code, found = braid.doctor()
        assert code == 1
        conflist = found["braid's CNI configuration"]
        assert conflist["status"] == "fail", conflist
        assert SHADOW.name in conflist["detail"]
        assert "cni.exclusive=false" in conflist["fix"]
    finally:
        SHADOW.unlink(missing_ok=True)
    node.wait_for("braid's conflist as it was", lambda: braid.conflist() == before, timeout=30)
    assert sample(braid, shadowed) is None
    assert sample(braid, 'braid_daemon_cni_config_shadowed{file=""}') == 0
