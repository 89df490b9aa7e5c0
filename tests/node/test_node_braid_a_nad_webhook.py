"""The NAD webhook (deploy/components/nad-webhook, docs/nad-webhook.md) deployed from the built
image on the real kubelet: its replica makes its certificates, writes its CA into the webhook
configuration, and `kubectl apply` of a NAD that `braidctl validate` refuses is refused with
validate's messages, through the component's Service, while a good NAD is accepted.

What the tier changes, and why: no kube-proxy runs and the API server listens on 127.0.0.1
only, so the webhook's pod uses the host's network (as braid's DaemonSet does) with the API
server's address in its environment, one replica (two would want the same host port on the
one node), and the API server runs with `--enable-aggregator-routing=true`, calling the
Service's endpoints rather than its ClusterIP (docs/nad-webhook.md says when a cluster needs
it). The component itself, its Service, certificates and RBAC are as shipped.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path

import node_braid as nb
import pytest
from nad_webhook_setup import BAD_CONFIG, GOOD_CONFIG, nad, validate_messages
from node_cluster import Node

pytestmark = pytest.mark.timeout(420)
NAME = "braid-nad-webhook"


def overlay(node: Node, directory: Path) -> Path:
    """The component with this node's image and the tier's changes (the module's docstring)."""
    directory.mkdir(parents=True, exist_ok=True)
    component = os.path.relpath(nb.REPO / "deploy" / "components" / "nad-webhook", directory)
    env = [e for e in node.api_env if e["name"] != "KUBERNETES_SERVICE_PORT_HTTPS"]
    patch = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": nb.NAMESPACE},
        "spec": {
            "replicas": 1,
            "template": {
                "spec": {"hostNetwork": True, "containers": [{"name": "webhook", "env": env}]}
            },
        },
    }
    (directory / "tier.yaml").write_text(json.dumps(patch))
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "components": [component],
        "images": [
            {"name": "registry.example/braid-cni/braid", "newName": "braid", "newTag": "dev"}
        ],
        "patches": [{"path": "tier.yaml"}],
    }
    (directory / "kustomization.yaml").write_text(json.dumps(kustomization))
    return directory


@pytest.fixture
def webhook(node: Node, tmp_path: Path) -> Iterator[Path]:
    nb.deployed(node)  # the image on the node, the NAD CRD and braid-system
    directory = overlay(node, tmp_path / "nad-webhook")
    node.kubectl("apply", "-k", str(directory))
    try:
        node.wait_rollout("deployment", NAME, nb.NAMESPACE, timeout=180)
        yield directory
    finally:
        node.kubectl("delete", "-k", str(directory), "--ignore-not-found", "--wait=false",
                     check=False)  # fmt: skip
        node.wait_deleted("deployment", NAME, nb.NAMESPACE, timeout=90)


def test_a_bad_nad_is_refused_by_kubectl_apply(
    node: Node, namespace: str, webhook: Path, tmp_path: Path
) -> None:
    bad = nad(namespace, "bad-config", BAD_CONFIG)
    manifest = tmp_path / "bad-config.json"
    manifest.write_text(json.dumps(bad))

    def refused() -> str | None:
        done = node.kubectl("apply", "--dry-run=server", "-f", str(manifest), check=False)
        return done.stderr if done.returncode != 0 and "denied" in done.stderr else None

    node.wait_for("the API server calling the webhook through its Service", refused, timeout=90)
    done = node.kubectl("apply", "-f", str(manifest), check=False)
    assert done.returncode != 0
    assert 'admission webhook "network-attachment-definitions.braid.cni.dev"' in done.stderr
    expected = validate_messages(bad)
    assert len(expected) >= 2
    for message in expected:
        assert message in done.stderr
    assert node.get("network-attachment-definitions", "bad-config", namespace) is None

    good = tmp_path / "good.json"
    good.write_text(json.dumps(nad(namespace, "good", GOOD_CONFIG)))
    done = node.kubectl("apply", "-f", str(good), check=False)
    assert done.returncode == 0, done.stderr

    secret = node.get("secret", "braid-nad-webhook-certs", nb.NAMESPACE)
    assert secret is not None
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    configuration = node.get("validatingwebhookconfiguration", NAME)
    assert configuration is not None
    bundle = configuration["webhooks"][0]["clientConfig"]["caBundle"]
    assert base64.b64decode(bundle).decode() == data["ca-bundle.crt"]
    assert data["ca.crt"] in data["ca-bundle.crt"]
