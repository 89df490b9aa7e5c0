"""deploy/ rendered with the real kustomize (the `kubectl` built beside the API server) and
created on the test API server through plain REST calls."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.watch
import yaml
from apiserver import BIN_DIR, BUILD_HINT, REPO_ROOT, ApiServerError

DEPLOY_DIR = REPO_ROOT / "deploy"

# (apiVersion, kind) -> (collection path prefix, plural, namespaced)
_RESOURCES: dict[tuple[str, str], tuple[str, str, bool]] = {
    ("v1", "Namespace"): ("/api/v1", "namespaces", False),
    ("v1", "ServiceAccount"): ("/api/v1", "serviceaccounts", True),
    ("v1", "ConfigMap"): ("/api/v1", "configmaps", True),
    ("v1", "Service"): ("/api/v1", "services", True),
    ("v1", "Secret"): ("/api/v1", "secrets", True),
    ("apps/v1", "DaemonSet"): ("/apis/apps/v1", "daemonsets", True),
    ("apps/v1", "Deployment"): ("/apis/apps/v1", "deployments", True),
    ("policy/v1", "PodDisruptionBudget"): ("/apis/policy/v1", "poddisruptionbudgets", True),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"): (
        "/apis/admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
        False,
    ),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): (
        "/apis/rbac.authorization.k8s.io/v1",
        "clusterroles",
        False,
    ),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): (
        "/apis/rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        False,
    ),
    ("rbac.authorization.k8s.io/v1", "Role"): ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): (
        "/apis/rbac.authorization.k8s.io/v1",
        "rolebindings",
        True,
    ),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): (
        "/apis/admissionregistration.k8s.io/v1",
        "validatingadmissionpolicies",
        False,
    ),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): (
        "/apis/admissionregistration.k8s.io/v1",
        "validatingadmissionpolicybindings",
        False,
    ),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): (
        "/apis/apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        False,
    ),
}


def kubectl() -> Path:
    binary = BIN_DIR / "kubectl"
    if not binary.is_file():
        raise ApiServerError(f"no {binary} (kustomize renders deploy/ with it): {BUILD_HINT}")
    return binary


def render(overlay: str = "base") -> list[dict[str, Any]]:
    """The documents of `deploy/<overlay>` as `kubectl kustomize` renders them."""
    directory = DEPLOY_DIR / overlay
    done = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise ApiServerError(f"kubectl kustomize {directory} failed: {done.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def collection_path(doc: dict[str, Any]) -> str:
    key = (doc["apiVersion"], doc["kind"])
    if key not in _RESOURCES:
        raise ValueError(f"the cluster tier cannot create {key[1]} ({key[0]}) objects")
    prefix, plural, namespaced = _RESOURCES[key]
    if namespaced:
        return f"{prefix}/namespaces/{doc['metadata']['namespace']}/{plural}"
    return f"{prefix}/{plural}"


def create(client: kubernetes.client.ApiClient, doc: dict[str, Any]) -> dict[str, Any]:
    """POSTs `doc` to its collection; returns the created object."""
    configuration = client.configuration
    response = client.call_api(
        "POST",
        configuration.host + collection_path(doc),
        header_params={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": configuration.get_api_key_with_prefix("authorization"),
        },
        body=doc,
    )
    response.read()
    if response.status != 201:
        raise ApiServerError(f"creating {doc['kind']} {doc['metadata']['name']}: "
                             f"{response.status} {response.data!r}")  # fmt: skip
    created = json.loads(response.data)
    assert isinstance(created, dict)
    return created


def server_side_apply(
    client: kubernetes.client.ApiClient, doc: dict[str, Any], *, dry_run: bool
) -> dict[str, Any]:
    """Applies `doc` server-side (field manager `braid-tests`); with `dry_run` nothing is stored
    but the server validates and defaults the object as for real."""
    configuration = client.configuration
    query = "fieldManager=braid-tests&force=true" + ("&dryRun=All" if dry_run else "")
    url = f"{configuration.host}{collection_path(doc)}/{doc['metadata']['name']}?{query}"
    response = client.call_api(
        "PATCH",
        url,
        header_params={
            "Content-Type": "application/apply-patch+yaml",
            "Accept": "application/json",
            "Authorization": configuration.get_api_key_with_prefix("authorization"),
        },
        body=json.dumps(doc),
    )
    response.read()
    if response.status not in {200, 201}:
        raise ApiServerError(f"applying {doc['kind']} {doc['metadata']['name']}: "
                             f"{response.status} {response.data!r}")  # fmt: skip
    applied = json.loads(response.data)
    assert isinstance(applied, dict)
    return applied


def wait_established(client: kubernetes.client.ApiClient, crd_name: str) -> None:
    """Blocks until the CRD serves its resource (its `Established` condition is true)."""
    api = kubernetes.client.ApiextensionsV1Api(client)
    watch = kubernetes.watch.Watch()
    selector = f"metadata.name={crd_name}"
    for event in watch.stream(
        api.list_custom_resource_definition, field_selector=selector, timeout_seconds=30
    ):
        conditions = event["object"].status.conditions or []
        if any(c.type == "Established" and c.status == "True" for c in conditions):
            watch.stop()
            return
    raise ApiServerError(f"CRD {crd_name} not established within 30 s")


def apply_base(client: kubernetes.client.ApiClient) -> list[dict[str, Any]]:
    """Creates every object of deploy/base and of its admission-policy component, as the
    overlays include it (CRD first), and waits for the CRD; returns them."""
    docs = render("base") + render("components/admission-policy")
    crds = [d for d in docs if d["kind"] == "CustomResourceDefinition"]
    for doc in [d for d in docs if d["kind"] == "Namespace"] + crds:
        create(client, doc)
    for doc in docs:
        if doc["kind"] not in {"Namespace", "CustomResourceDefinition"}:
            create(client, doc)
    for crd in crds:
        wait_established(client, crd["metadata"]["name"])
    return docs
