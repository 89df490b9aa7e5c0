"""braid removed from the node exactly as docs/operations.md ("Uninstall") says, with pods
running: every pod can still be deleted afterwards, new pods get the default network, and in
the end nothing of braid's is left on the node."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import node_braid as nb
import pytest
from node_braid import Braid
from node_cluster import Node

pytestmark = pytest.mark.timeout(420)


def documented_commands() -> list[list[str]]:
    """The shell commands of docs/operations.md's "Uninstall" section, in order."""
    text = (nb.REPO / "docs" / "operations.md").read_text()
    section = text.split("## Uninstall", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    return [shlex.split(block.replace("\\\n", " ")) for block in blocks]


def on_the_node(node: Node, command: list[str]) -> None:
    """A documented `kubectl debug node/NODE --image=IMAGE ...` run on this node with the
    image it has (never pulled), waited for to succeed and removed."""
    assert command[:2] == ["kubectl", "debug"], command
    args = [
        f"node/{node.node_name}" if word == "node/NODE" else word.replace("IMAGE", "braid:dev")
        for word in command[1:]
    ]
    separator = args.index("--")
    args[separator:separator] = ["--image-pull-policy=Never"]
    done = node.kubectl(*args)
    created = re.search(r"Creating debugging pod (\S+)", done.stdout + done.stderr)
    assert created, done.stdout + done.stderr
    name, namespace = created.group(1), "default"
    node.wait_pod_phase(namespace, name, "Succeeded", timeout=120)
    node.kubectl("delete", "pod", "-n", namespace, name, "--wait=false")
    node.wait_deleted("pod", name, namespace)


def remove_braid(node: Node) -> None:
    """braid removed as docs/operations.md ("Uninstall") says, from a node where no pod it
    attached is left: its objects, then its configuration and shim off the node."""
    node.kubectl("delete", "daemonset", "braid", "-n", nb.NAMESPACE, "--ignore-not-found")
    node.kubectl("delete", "configmap,serviceaccount", "-n", nb.NAMESPACE, "--all", check=False)
    node.kubectl("delete", "clusterrolebinding,clusterrole", "braid", "--ignore-not-found")
    node.kubectl(
        "delete", "validatingadmissionpolicybinding,validatingadmissionpolicy",
        "braid-network-status-only", "--ignore-not-found",
    )  # fmt: skip
    node.kubectl(
        "delete", "validatingadmissionpolicybinding", "braid-thin-network-status-only",
        "--ignore-not-found",
    )  # fmt: skip
    node.kubectl(
        "delete", "clusterrolebinding,clusterrole", "braid-admission-check", "--ignore-not-found"
    )  # fmt: skip
    node.kubectl("delete", "namespace", nb.NAMESPACE, "--ignore-not-found")
    for command in documented_commands():
        on_the_node(node, command)


def test_uninstall_as_documented_leaves_every_pod_deletable(
    braid: Braid, namespace: str, macvlan_parent: None
) -> None:
    node = braid.node
    nb.nad(node, namespace, "lan", nb.macvlan("lan", "10.251.20.0/24"))
    nb.run_pod(node, namespace, "secondary", "lan")
    nb.run_pod(node, namespace, "plain")
    nb.wait_status(node, namespace, "plain", 1)

    # 1. The workloads with secondary networks go first, while braid tears them down.
    nb.delete_pods(node, namespace, "secondary")
    assert "lan" not in nb.leases()
    # 2. braid's objects, but for the CRD.
    node.kubectl("delete", "daemonset", "braid", "-n", nb.NAMESPACE)
    node.kubectl("delete", "configmap,serviceaccount", "-n", nb.NAMESPACE, "--all")
    node.kubectl("delete", "clusterrolebinding,clusterrole", "braid")
    node.kubectl(
        "delete", "validatingadmissionpolicybinding,validatingadmissionpolicy",
        "braid-network-status-only",
    )  # fmt: skip
    node.kubectl(
        "delete", "validatingadmissionpolicybinding", "braid-thin-network-status-only"
    )  # fmt: skip
    node.kubectl("delete", "clusterrolebinding,clusterrole", "braid-admission-check")
    node.kubectl("delete", "namespace", nb.NAMESPACE)
    assert Path("/opt/cni/bin/braid").exists(), "the shim stays for the pods braid attached"
    # 3. braid's configuration off the node: new pods get the default network directly.
    remove_config, remove_shim = documented_commands()
    on_the_node(node, remove_config)
    assert not nb.BRAID_CONFLIST.exists()
    nb.run_pod(node, namespace, "after")
    pod = node.get("pod", "after", namespace)
    assert pod is not None
    assert nb.STATUS not in pod["metadata"].get("annotations", {})
    # Every pod can be deleted, those braid attached and those it never saw.
    nb.delete_pods(node, namespace, "plain", "after")
    assert nb.leases().get(node.cni_network, []) == []
    # 4. With no pod of braid's left: the shim and braid's state.
    on_the_node(node, remove_shim)
    assert not Path("/opt/cni/bin/braid").exists()
    assert not Path("/opt/cni/bin/braid-full").exists()
    assert not Path("/var/lib/cni/braid").exists()
    assert nb.host_links() == []
