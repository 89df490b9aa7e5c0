"""braid installed with Helm from its chart (deploy/helm/braid) as docs/operations.md ("Install
with Helm") says, on the real kubelet with the built image: pods get their networks; `helm
upgrade` with a changed configuration key reaches the daemon without a restart, and one that
changes the DaemonSet's pods rolls them while pods keep working; `helm uninstall`, then the
documented node steps, leave nothing of braid's but the CRD.

The kustomize-deployed braid of the other scenarios is removed first when it is there, and
deployed again at the end: the node is left as this module found it.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cluster_helm
import node_braid as nb
import pytest
import yaml
from node_braid import Braid
from node_cluster import Node
from test_node_braid_8_uninstall import documented_commands, on_the_node, remove_braid

pytestmark = pytest.mark.timeout(600)

RELEASE, RELEASE_NAMESPACE = "braid", "kube-system"
CRD = "network-attachment-definitions.k8s.cni.cncf.io"
UPGRADE = ("upgrade", RELEASE, str(cluster_helm.CHART), "--namespace", RELEASE_NAMESPACE)


def documented_install() -> list[str]:
    """docs/operations.md's `helm install` command, with this node's image (loaded on the
    node, never pulled) for REGISTRY/braid:TAG."""
    text = (nb.REPO / "docs" / "operations.md").read_text()
    section = text.split("## Install with Helm", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    (block,) = [b for b in blocks if "helm install" in b]
    words = shlex.split(block.replace("\\\n", " "))
    assert words[:4] == ["helm", "install", RELEASE, "deploy/helm/braid"], words
    words[3] = str(cluster_helm.CHART)
    replaced = [w.replace("REGISTRY/braid", "braid").replace("=TAG", "=dev") for w in words]
    return replaced[1:]


class Helm:
    """Helm as the node's admin, its caches under the node's directory."""

    def __init__(self, node: Node) -> None:
        self.node = node
        home = node.root / "helm-home"
        self.env = {
            "HELM_CACHE_HOME": str(home / "cache"), "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"), "KUBECONFIG": str(node.kubeconfig),
        }  # fmt: skip

    def __call__(self, *args: str, check: bool = True) -> str:
        done = cluster_helm.helm(*args, check=check, env=self.env, timeout=300)
        return done.stdout

    def node_values(self) -> list[str]:
        """What only this node needs: the image is never pulled, and the daemon reaches the API
        server on the node's loopback (no kube-proxy runs here)."""
        env = [e for e in self.node.api_env if e["name"] != "KUBERNETES_SERVICE_PORT_HTTPS"]
        return cluster_helm.value_args({"image.pullPolicy": "Never", "daemon.extraEnv": env})

    def release_objects(self) -> list[dict[str, Any]]:
        """The objects of the release's manifest (`helm get manifest`)."""
        text = self("get", "manifest", RELEASE, "--namespace", RELEASE_NAMESPACE)
        return [d for d in yaml.safe_load_all(text) if d]


@pytest.fixture(scope="module")
def helm(node: Node) -> Iterator[Helm]:
    """Helm, on a node without the kustomize-deployed braid (removed when it is there, as
    documented, and deployed again afterwards); a release left by a failure is uninstalled."""
    if nb.IMAGE not in node.images():
        node.import_image(nb.IMAGE_ARCHIVE)
    had_braid = node.get("daemonset", "braid", nb.NAMESPACE) is not None
    if had_braid:
        remove_braid(node)
        node.wait_deleted("namespace", nb.NAMESPACE, timeout=120)
    made = Helm(node)
    try:
        yield made
    finally:
        if RELEASE in made("list", "--namespace", RELEASE_NAMESPACE, "-q"):
            made("uninstall", RELEASE, "--namespace", RELEASE_NAMESPACE, "--wait")
            remove_braid(node)
        if had_braid:
            nb.deployed(node)


def upgrade_a_configuration_key(braid: Braid, helm: Helm) -> None:
    """A configuration key alone: the daemon re-reads braid.conf, no pod is replaced."""
    first, applied = braid.daemon_pod(), braid.reloads("applied")
    helm(*UPGRADE, "--reuse-values", "--set", "config.maxSelections=8")
    nb.wait_until(lambda: braid.reloads("applied") > applied, timeout=120)
    assert braid.reloads("applied") > applied
    assert braid.daemon_pod() == first
    conf = braid.node.kubectl_json("get", "configmap", "braid-config", "-n", nb.NAMESPACE)
    assert json.loads(conf["data"]["braid.conf"])["maxSelections"] == 8


def replaced(node: Node, first: str) -> bool:
    """Whether braid's one pod is another than `first` (none while the old one goes)."""
    pods = node.kubectl_json(
        "get", "pods", "-n", nb.NAMESPACE, "-l", "app.kubernetes.io/name=braid"
    )["items"]
    names = [p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")]
    return len(names) == 1 and names[0] != first


def upgrade_the_pods(braid: Braid, helm: Helm) -> None:
    """What the pods hold: the DaemonSet rolls to the new template."""
    node, first = braid.node, braid.daemon_pod()
    helm(*UPGRADE, "--reuse-values", "--set", "daemon.resources.requests.memory=100Mi")
    node.wait_for("braid's pod replaced", lambda: replaced(node, first), timeout=180)
    braid.wait_ready()
    found = node.get("daemonset", "braid", nb.NAMESPACE)
    assert found is not None
    resources = found["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["requests"]["memory"] == "100Mi"
    assert "REVISION: 3" in helm("status", RELEASE, "--namespace", RELEASE_NAMESPACE)


def uninstall(node: Node, helm: Helm, namespace: str) -> None:
    """`helm uninstall`, then the documented node steps: nothing of braid's is left but the
    CRD, and a new pod gets the default network alone."""
    objects = helm.release_objects()
    assert len(objects) > 7
    helm("uninstall", RELEASE, "--namespace", RELEASE_NAMESPACE, "--wait", "--timeout=3m")
    node.wait_deleted("namespace", nb.NAMESPACE, timeout=120)
    for obj in objects:
        meta = obj["metadata"]
        assert node.get(obj["kind"], meta["name"], meta.get("namespace")) is None, meta["name"]
    assert node.get("customresourcedefinition", CRD) is not None, "the CRD stays"
    for command in documented_commands():
        on_the_node(node, command)
    assert not nb.BRAID_CONFLIST.exists()
    assert not Path("/opt/cni/bin/braid").exists()
    assert not Path("/var/lib/cni/braid").exists()
    # The bridge plugin's host ends of the pods' default network (the tier shares the
    # machine's network namespace, where other programs' links may come and go).
    assert [link for link in nb.host_links() if link.startswith("veth")] == []
    nb.run_pod(node, namespace, "plain")
    pod = node.get("pod", "plain", namespace)
    assert pod is not None
    assert nb.STATUS not in pod["metadata"].get("annotations", {})


def test_helm_install_upgrade_and_uninstall(
    node: Node, helm: Helm, namespace: str, macvlan_parent: None
) -> None:
    helm(*documented_install(), *helm.node_values())
    braid = Braid(node, node.root / "unused-overlay")  # the kustomize scenarios' readers
    braid.wait_ready()
    nb.nad(node, namespace, "lan", nb.macvlan("lan", "10.251.40.0/24"))
    nb.run_pod(node, namespace, "before", "lan")
    status = nb.wait_status(node, namespace, "before", 2)
    assert status[1]["name"] == f"{namespace}/lan"

    upgrade_a_configuration_key(braid, helm)
    upgrade_the_pods(braid, helm)
    # The pod attached before the roll keeps its network; a new one gets it from the new daemon.
    assert nb.network_status(node, namespace, "before") == status
    nb.run_pod(node, namespace, "after", "lan")
    nb.wait_status(node, namespace, "after", 2)
    # Workloads with secondary networks go first, torn down by braid (docs: "Uninstall").
    nb.delete_pods(node, namespace, "before", "after")
    assert nb.leases().get("lan", []) == []
    uninstall(node, helm, namespace)
