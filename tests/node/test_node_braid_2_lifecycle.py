"""braid deployed as shipped, through what happens to a node: kubelet restarted, braid's own
pod deleted or killed in the middle of an ADD, the API server gone during a delete, an upgrade
of braid, a node restart. Pods keep their networks, come and go, and nothing leaks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import node_braid as nb
import pytest
from node_braid import Braid
from runtime_cri import SANDBOX_READY

pytestmark = pytest.mark.timeout(420)


def attach(braid: Braid, namespace: str, *names: str) -> None:
    """Pods `names`, each with the default network and one macvlan attachment."""
    node = braid.node
    if node.get("net-attach-def", "lan", namespace) is None:
        nb.nad(node, namespace, "lan", nb.macvlan("lan", "10.251.10.0/24"))
    for name in names:
        node.apply(nb.pod_manifest(node, namespace, name, "lan"))
    for name in names:
        node.wait_pod(namespace, name, timeout=180)
        nb.wait_status(node, namespace, name, 2)


def test_kubelet_restarted_with_pods_running(
    braid: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = braid.node
    attach(braid, namespace, "a", "b")
    before = {name: nb.PodNetwork(node, namespace, name).addresses("net1") for name in "ab"}
    node.restart_kubelet()
    for name in "ab":
        node.wait_pod(namespace, name)
        assert nb.PodNetwork(node, namespace, name).addresses("net1") == before[name]
    nb.delete_pods(node, namespace, "a", "b")


def test_braids_pod_deleted_while_pods_come_and_go(
    braid: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = braid.node
    attach(braid, namespace, "old-1", "old-2")
    old_daemon = braid.daemon_pod()
    node.kubectl("delete", "pod", "-n", nb.NAMESPACE, old_daemon, "--wait=false")
    for name in ("new-1", "new-2", "new-3"):
        node.apply(nb.pod_manifest(node, namespace, name, "lan"))
    node.kubectl("delete", "pod", "-n", namespace, "old-1", "old-2", "--wait=false")
    braid.wait_ready()
    assert braid.daemon_pod() != old_daemon
    for name in ("new-1", "new-2", "new-3"):
        node.wait_pod(namespace, name, timeout=240)
        nb.wait_status(node, namespace, name, 2)
    for name in ("old-1", "old-2"):
        node.wait_deleted("pod", name, namespace, timeout=180)
    nb.delete_pods(node, namespace, "new-1", "new-2", "new-3")


def test_the_api_server_stopped_during_a_pod_delete(
    braid: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = braid.node
    attach(braid, namespace, "gone")
    leased = nb.leases()["lan"]
    node.kubectl("delete", "pod", "-n", namespace, "gone", "--wait=false")
    node.stop_apiserver()
    try:
        # kubelet tears the sandbox down meanwhile: braid's DEL needs no API server.
        released = nb.wait_until(lambda: nb.leases().get("lan", []) != leased, timeout=60)
        assert released, "the pod's lease was not released while the API server was away"
    finally:
        node.start_apiserver()
    node.wait_deleted("pod", "gone", namespace, timeout=120)


SLOW_PLUGIN = """#!/bin/sh
# macvlan, with its ADD held for a while first: the daemon can be killed in the middle.
input=$(cat)
if [ "$CNI_COMMAND" = ADD ]; then touch /var/lib/cni/slow-started; sleep 3; fi
printf '%s' "$input" | exec /opt/cni/bin/macvlan
"""


def test_braids_pod_killed_in_the_middle_of_an_add(
    braid: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = braid.node
    plugin = Path("/opt/cni/bin/braid-test-slow")
    started = Path("/var/lib/cni/slow-started")
    plugin.write_text(SLOW_PLUGIN)
    plugin.chmod(0o755)
    try:
        config = {**nb.macvlan("slow", "10.251.11.0/24"), "type": plugin.name}
        nb.nad(node, namespace, "slow", config)
        node.apply(nb.pod_manifest(node, namespace, "interrupted", "slow"))
        node.wait_for("the slow delegate running", started.exists, timeout=120)
        daemon = braid.daemon_pod()
        node.kubectl("delete", "pod", "-n", nb.NAMESPACE, daemon, "--grace-period=0", "--force")
        started.unlink()
        braid.wait_ready()
        node.wait_pod(namespace, "interrupted", timeout=240)
        status = nb.wait_status(node, namespace, "interrupted", 2)
        assert status[1]["name"] == f"{namespace}/slow"
        nb.delete_pods(node, namespace, "interrupted")
    finally:
        plugin.unlink()
        started.unlink(missing_ok=True)


def test_an_upgrade_with_pods_running(braid: Braid, namespace: str, clean: dict[str, Any]) -> None:
    node = braid.node
    attach(braid, namespace, "before")
    node.ctr("images", "tag", "--force", nb.IMAGE, "docker.io/library/braid:next")
    old_daemon = braid.daemon_pod()
    try:
        braid.deploy(image_tag="next")
        assert braid.daemon_pod() != old_daemon
        pod = node.get("pod", braid.daemon_pod(), nb.NAMESPACE)
        assert pod is not None
        images = {c["image"] for c in pod["spec"]["containers"] + pod["spec"]["initContainers"]}
        assert images == {"braid:next"}
        attach(braid, namespace, "after")
        nb.delete_pods(node, namespace, "before", "after")
    finally:
        braid.deploy(image_tag="dev")


def test_a_node_restart_leaves_no_stale_record_or_lease(
    braid: Braid, namespace: str, clean: dict[str, Any]
) -> None:
    node = braid.node
    attach(braid, namespace, "survivor")
    old_sandboxes = {s.id for s in node.sandboxes(namespace, "survivor")}
    node.restart_node()
    braid.wait_ready()
    node.wait_for(
        "the pod's new sandbox running",
        lambda: [
            s
            for s in node.sandboxes(namespace, "survivor")
            if s.state == SANDBOX_READY and s.id not in old_sandboxes
        ],
        timeout=240,
    )
    node.wait_pod(namespace, "survivor", timeout=240)
    status = nb.wait_status(node, namespace, "survivor", 2)
    assert status[1]["name"] == f"{namespace}/lan"
    # The sandboxes of before the restart are torn down: their records and leases go.
    node.wait_for(
        "the old sandboxes' records gone",
        lambda: not any(record in old_sandboxes for record in nb.records()),
        timeout=180,
    )
    (net1,) = nb.PodNetwork(node, namespace, "survivor").addresses("net1")
    assert nb.leases()["lan"] == [str(net1.ip)]
    nb.delete_pods(node, namespace, "survivor")
