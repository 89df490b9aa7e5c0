"""deploy/ applied as docs/operations.md says, `kubectl apply -k` (kustomize built in), to a real
API server of its own where Pod Security Admission enforces `restricted` on every namespace
that does not say otherwise, and where the ValidatingAdmissionPolicy API is not served, as on a
cluster older than Kubernetes 1.30.

The base applies there as written, and the pod its DaemonSet makes is admitted in braid-system
(no controller-manager runs, so the pod is created from the DaemonSet's template by a
server-side dry run, which Pod Security checks as it would the DaemonSet controller's). The
overlays, which include the admission-policy component, fail on that one kind alone."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import apiserver
import cluster_manifests
import kubernetes.client
import pytest

NAMESPACE = "braid-system"
POD_SECURITY = """apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodSecurity
    configuration:
      apiVersion: pod-security.admission.config.k8s.io/v1
      kind: PodSecurityConfiguration
      defaults: {enforce: restricted, enforce-version: latest}
"""
# Before 1.30 admissionregistration.k8s.io/v1 has no ValidatingAdmissionPolicy: the API server
# serves neither resource (and runs no plugin for them, which would wait for them forever).
WITHOUT_POLICIES = {
    "runtime-config": "admissionregistration.k8s.io/v1/validatingadmissionpolicies=false,"
    "admissionregistration.k8s.io/v1/validatingadmissionpolicybindings=false",
    "disable-admission-plugins": "ServiceAccount,ValidatingAdmissionPolicy",
}


@pytest.fixture(scope="module")
def strict_apiserver() -> Iterator[apiserver.ApiServer]:
    """An API server enforcing Pod Security `restricted` by default, without the admission
    policy's API; removed with its etcd at the end."""
    workdir = Path(tempfile.mkdtemp(prefix="braid-kube-psa-"))
    (workdir / "admission.yaml").write_text(POD_SECURITY)
    flags = {**WITHOUT_POLICIES, "admission-control-config-file": str(workdir / "admission.yaml")}
    try:
        server = apiserver.start(workdir, flags=flags)
    except apiserver.ApiServerError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        pytest.fail(f"cluster tier: {exc}", pytrace=False)
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def kubectl_apply(
    server: apiserver.ApiServer, tmp_path: Path, overlay: str
) -> subprocess.CompletedProcess[str]:
    """`kubectl apply -k deploy/<overlay>` as the tier's admin."""
    kubeconfig = server.kubeconfig("admin", tmp_path / "kubeconfig")
    directory = cluster_manifests.DEPLOY_DIR / overlay
    return subprocess.run(
        [cluster_manifests.kubectl(), "--kubeconfig", kubeconfig, "apply", "-k", directory],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def daemon_pod(overlay: str, namespace: str) -> dict[str, Any]:
    """The pod the DaemonSet controller would make on a node from `overlay`'s template."""
    [daemonset] = [d for d in cluster_manifests.render(overlay) if d["kind"] == "DaemonSet"]
    template = daemonset["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"braid-{uuid.uuid4().hex[:8]}",
            "namespace": namespace,
            "labels": template["metadata"]["labels"],
        },
        "spec": {**template["spec"], "nodeName": apiserver.BRAID_NODE},
    }


def admit(server: apiserver.ApiServer, pod: dict[str, Any]) -> None:
    """Creates `pod` in a server-side dry run: admission runs, nothing is stored."""
    with server.api_client("admin") as admin:
        core = kubernetes.client.CoreV1Api(admin)
        # The client sends a dict as it is.
        body = cast("kubernetes.client.V1Pod", pod)
        core.create_namespaced_pod(pod["metadata"]["namespace"], body, dry_run="All")


def test_the_base_applies_as_written_and_its_pods_are_admitted(
    strict_apiserver: apiserver.ApiServer, tmp_path: Path
) -> None:
    done = kubectl_apply(strict_apiserver, tmp_path, "base")
    assert done.returncode == 0, done.stderr
    assert "daemonset.apps/braid" in done.stdout
    assert "validatingadmissionpolicy" not in done.stdout.lower()
    with strict_apiserver.api_client("admin") as admin:
        namespace = kubernetes.client.CoreV1Api(admin).read_namespace(NAMESPACE)
    labels = namespace.metadata.labels if namespace.metadata else None
    assert (labels or {}).get("pod-security.kubernetes.io/enforce") == "privileged"
    admit(strict_apiserver, daemon_pod("base", NAMESPACE))


def test_pod_security_refuses_the_same_pod_elsewhere(
    strict_apiserver: apiserver.ApiServer,
) -> None:
    """The oracle of the test above: enforcement is on, and braid's pod needs its namespace's
    `privileged` level, for what it holds (the node's namespaces, hostPath volumes, added
    capabilities) though its containers are not privileged."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    with strict_apiserver.api_client("admin") as admin:
        body = kubernetes.client.V1Namespace(metadata=kubernetes.client.V1ObjectMeta(name=name))
        kubernetes.client.CoreV1Api(admin).create_namespace(body)
    with pytest.raises(kubernetes.client.ApiException) as refused:
        admit(strict_apiserver, daemon_pod("base", name))
    assert refused.value.status == 403
    message = json.loads(refused.value.body or "{}")["message"]
    assert 'violates PodSecurity "restricted:latest"' in message
    for needed in ("host namespaces", 'volume type "hostPath"', "unrestricted capabilities"):
        assert needed in message, message
    assert "securityContext.privileged" not in message, message


@pytest.mark.parametrize("overlay", ["overlays/prod", "overlays/dev"])
def test_an_older_cluster_refuses_only_the_admission_policy_component(
    strict_apiserver: apiserver.ApiServer, tmp_path: Path, overlay: str
) -> None:
    assert kubectl_apply(strict_apiserver, tmp_path, "base").returncode == 0
    done = kubectl_apply(strict_apiserver, tmp_path, overlay)
    assert done.returncode != 0
    refused = [line for line in done.stderr.splitlines() if "no matches for kind" in line]
    assert len(refused) == 3, done.stderr  # the policy and its two bindings
    assert all("ValidatingAdmissionPolicy" in line for line in refused)
    assert "daemonset.apps/braid configured" in done.stdout
    admit(strict_apiserver, daemon_pod(overlay, NAMESPACE))
