"""From Multus to braid as docs/migrating-from-multus.md says, on a node holding a Multus thin
configuration: `braidctl migrate multus` on the node's 00-multus.conf, braid's ConfigMap from it
in an overlay with the migration's node selector, the documented `kubectl debug` command that
removes Multus's configuration, the node labelled for braid; then pods get the networks that
configuration gives (its `defaultNetworks` from `multusNamespace`, the selections of its own
namespace) and are refused what it forbids (`namespaceIsolation`).

No Multus executable runs here: no pod starts while 00-multus.conf is the node's first
configuration (the debugging pod of `kubectl debug node` uses the node's network, no CNI). Runs
after the uninstall scenario, which removed braid: this one deploys it again, and removes it
as documented when it ends.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import node_braid as nb
import pytest
import yaml
from node_braid import Braid
from node_cluster import Node
from test_node_braid_8_uninstall import on_the_node, remove_braid

pytestmark = pytest.mark.timeout(420)

DOC = nb.REPO / "docs" / "migrating-from-multus.md"
MULTUS_CONF = nb.CONF_DIR / "00-multus.conf"
MULTUS_D = nb.CONF_DIR / "multus.d"
LABEL = "braid-cni.io/migration"
# A hand-written thin configuration (Multus's docs/configuration.md) for this node.
MULTUS = {
    "cniVersion": "1.0.0",
    "name": "multus-cni-network",
    "type": "multus",
    "kubeconfig": str(MULTUS_D / "multus.kubeconfig"),
    "confDir": str(nb.CONF_DIR),
    "cniDir": "/var/lib/cni/multus",
    "binDir": "/opt/cni/bin",
    "clusterNetwork": str(nb.CONF_DIR / "10-cluster.conflist"),
    "defaultNetworks": ["sidecar"],
    "multusNamespace": "kube-system",
    "systemNamespaces": ["kube-system"],
    "namespaceIsolation": True,
    "globalNamespaces": "default",
    "logLevel": "verbose",
    "logToStderr": True,
    "capabilities": {"portMappings": True},
    "readinessindicatorfile": "",
}


def section() -> str:
    text = DOC.read_text()
    return text.split("## From Multus to braid", 1)[1].split("\n## ", 1)[0]


def documented(containing: str) -> list[str]:
    """The documented shell command (continued lines joined) that contains `containing`."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section(), flags=re.DOTALL):
        for line in textwrap.dedent(block).replace("\\\n", " ").splitlines():
            if containing in line:
                commands.append(shlex.split(line))
    assert len(commands) == 1, (containing, commands)
    return commands[0]


def heredoc(target: str) -> Any:
    """The YAML the documented `cat > TARGET <<'EOF'` writes."""
    found = re.search(rf"cat > \S*{re.escape(target)} <<'EOF'\n(.*?)\n\s*EOF", section(), re.DOTALL)
    assert found, target
    return yaml.safe_load(textwrap.dedent(found.group(1)))


def label(node: Node, value: str) -> None:
    command = documented(f"kubectl label node NODE {LABEL}={value}")
    node.kubectl(*[node.node_name if w == "NODE" else w for w in command[1:]])


def migrate(into: Path) -> subprocess.CompletedProcess[str]:
    """The documented `braidctl migrate multus` on the node's 00-multus.conf."""
    command = documented("braidctl migrate multus")
    assert command[:3] == ["braidctl", "migrate", "multus"]
    args = [
        str(MULTUS_CONF) if w == "multus-config.yaml" else str(into) if w == "braid-config.yaml"
        else w
        for w in command[3:]
    ]  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "braid.commands.braidctl", "migrate", "multus", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def overlay(braid: Braid, directory: Path, config_map: Path) -> Path:
    """The documented overlay over the tier's own (deploy/overlays/dev plus the API server's
    address) instead of `../prod`."""
    directory.mkdir(parents=True, exist_ok=True)
    base = os.path.relpath(braid.write_overlay(), directory)
    (directory / "migration.yaml").write_text(json.dumps(heredoc("migration.yaml")))
    kustomization = heredoc("kustomization.yaml")
    assert kustomization["resources"] == ["../prod"]
    kustomization["resources"] = [base]
    (directory / "kustomization.yaml").write_text(json.dumps(kustomization))
    assert (directory / config_map.name).is_file()
    return directory


def sidecar_and_lan(node: Node, namespace: str) -> None:
    nb.nad(node, "kube-system", "sidecar", nb.macvlan("sidecar", "10.251.40.0/24"))
    nb.nad(node, namespace, "lan", nb.macvlan("lan", "10.251.41.0/24"))


def test_from_multus_as_documented(node: Node, namespace: str, macvlan_parent: None) -> None:
    assert node.get("daemonset", "braid", nb.NAMESPACE) is None, "braid must not run yet"
    if not nb.IMAGE_ARCHIVE.is_file():
        pytest.fail(f"node tier: {nb.IMAGE_ARCHIVE} is missing: run `make image`", pytrace=False)
    if nb.IMAGE not in node.images():
        node.import_image(nb.IMAGE_ARCHIVE)
    MULTUS_D.mkdir(exist_ok=True)
    (MULTUS_D / "multus.kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    MULTUS_CONF.write_text(json.dumps(MULTUS, indent=2))
    before = nb.snapshot()
    braid = Braid(node, node.root / "braid-overlay")
    directory = node.root / "from-multus"
    directory.mkdir(parents=True, exist_ok=True)
    config_map = directory / "braid-config.yaml"
    try:
        # 2. braid's configuration from Multus's, with what could not be carried on stderr.
        done = migrate(config_map)
        assert done.returncode == 0, done.stderr
        warned = re.findall(r"warning: (\S+) not carried", done.stderr)
        assert sorted(warned) == ["cniDir", "kubeconfig"]
        manifest = yaml.safe_load(config_map.read_text())
        conf = json.loads(manifest["data"]["braid.conf"])
        assert conf["type"] == "braid"
        assert conf["namespaceIsolation"] is True
        assert conf["defaultNetworks"] == ["sidecar"]
        # 3. The overlay: braid's DaemonSet on no node yet.
        node.kubectl("apply", "-k", str(overlay(braid, directory, config_map)))
        assert not nb.BRAID_CONFLIST.exists()
        # 5. Multus off the node, its configuration removed, braid on.
        label(node, "multus-off")
        on_the_node(node, documented("rm -f /host/etc/cni/net.d/00-multus.conf"))
        assert not MULTUS_CONF.exists()
        assert not MULTUS_D.exists()
        label(node, "braid")
        braid.wait_ready()
        conflist = braid.conflist()
        assert conflist is not None
        (plugin,) = conflist["plugins"]
        assert plugin["clusterNetwork"] == MULTUS["clusterNetwork"]
        live = node.kubectl_json("get", "configmap", "braid-config", "-n", nb.NAMESPACE)
        assert json.loads(live["data"]["braid.conf"]) == conf

        sidecar_and_lan(node, namespace)
        nb.run_pod(node, namespace, "web", "lan")
        status = nb.wait_status(node, namespace, "web", 3)
        assert [s["name"] for s in status] == [
            node.cni_network,
            "kube-system/sidecar",
            f"{namespace}/lan",
        ]
        pod = nb.PodNetwork(node, namespace, "web")
        (net1,) = pod.addresses("net1")
        (net2,) = pod.addresses("net2")
        assert net1 in ipaddress.ip_network("10.251.40.0/24")
        assert net2 in ipaddress.ip_network("10.251.41.0/24")

        node.apply(nb.pod_manifest(node, namespace, "isolated", "kube-system/sidecar"))
        refused = node.wait_for(
            "the sandbox refused by the migrated namespaceIsolation",
            lambda: [
                m
                for m in nb.events_of(node, namespace, "FailedCreatePodSandBox")
                if "namespace isolation" in m
            ],
            timeout=90,
        )
        assert "kube-system/sidecar" in refused[0]
        nb.delete_pods(node, namespace, "web", "isolated")
        nb.quiescent(node, before, timeout=120)
    finally:
        MULTUS_CONF.unlink(missing_ok=True)
        # The node as the scenarios after this one expect it: no pod braid attached, then no
        # braid (removed as documented), no migration label, no NAD of this test's.
        node.kubectl("delete", "pod", "-n", namespace, "--all", "--wait=false", check=False)
        nb.wait_until(
            lambda: not node.kubectl_json("get", "pods", "-n", namespace)["items"], timeout=120
        )
        node.kubectl("delete", "net-attach-def", "sidecar", "-n", "kube-system", check=False)
        remove_braid(node)
        node.kubectl("label", "node", node.node_name, f"{LABEL}-", check=False)
