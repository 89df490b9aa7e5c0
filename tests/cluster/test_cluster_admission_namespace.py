"""braid moved to another namespace by a kustomize overlay (`namespace: braid-alt` over
deploy/overlays/prod, with braid-thin's identity), applied with `kubectl apply -k` to an API
server of its own: the admission policy confines braid's account in the new namespace, and an
account named braid in the old one is nobody special; braid-thin's account is held to the same
rules. And the node-bound tokens docs/daemon.md tells a daemon run outside a pod to use
(`kubectl create token --bound-object-kind Pod|Node`) carry the node's name, so the policy
lets their writes through.

The API server, its etcd and everything in them are removed at the end of the module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import apiserver
import cluster_manifests
import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException
from test_k8s_status import wait_until

from braid.config.schema import BraidConfig
from braid.k8s.admission_check import ENFORCED, MISSING, check_policy
from braid.k8s.select import connect

NAMESPACE = "braid-alt"
STATUS_KEY = "k8s.v1.cni.cncf.io/network-status"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
POLICY = "braid-network-status-only"
WORKLOADS = "workloads"
STATUS = {"metadata": {"annotations": {STATUS_KEY: "[]"}}}
LABEL = {"metadata": {"labels": {"app": "db"}}}
OVERLAY = f"""apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: {NAMESPACE}
resources:
  - {{prod}}
components:
  - {{thin}}
"""


@dataclass
class Moved:
    server: apiserver.ApiServer
    kubeconfig: Path  # the admin's


def kubectl(moved: Moved, *args: str) -> str:
    done = subprocess.run(
        [cluster_manifests.kubectl(), "--kubeconfig", moved.kubeconfig, *args],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def create_pod(admin: kubernetes.client.ApiClient, namespace: str, name: str, node: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web"}},
        "spec": {"nodeName": node, "serviceAccountName": "braid",
                 "containers": [{"name": "c", "image": "pause"}]},
    }  # fmt: skip
    kubernetes.client.CoreV1Api(admin).create_namespaced_pod(namespace, body)


def populate(admin: kubernetes.client.ApiClient) -> None:
    """Two nodes, a workload on each, braid's pod on alt-a."""
    core = kubernetes.client.CoreV1Api(admin)
    for node in ("alt-a", "alt-b"):
        core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    core.create_namespace(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": WORKLOADS}}
    )
    for name, node in (("on-a", "alt-a"), ("on-b", "alt-b")):
        create_pod(admin, WORKLOADS, name, node)
    create_pod(admin, NAMESPACE, "braid-a", "alt-a")


@pytest.fixture(scope="module")
def moved() -> Iterator[Moved]:
    workdir = Path(tempfile.mkdtemp(prefix="braid-kube-alt-"))
    try:
        server = apiserver.start(workdir)
    except apiserver.ApiServerError as exc:
        shutil.rmtree(workdir, ignore_errors=True)
        pytest.fail(f"cluster tier: {exc}", pytrace=False)
    try:
        overlay = workdir / "overlay"
        overlay.mkdir()
        prod = os.path.relpath(cluster_manifests.DEPLOY_DIR / "overlays" / "prod", overlay)
        thin = os.path.relpath(cluster_manifests.DEPLOY_DIR / "components" / "braid-thin", overlay)
        (overlay / "kustomization.yaml").write_text(OVERLAY.format(prod=prod, thin=thin))
        result = Moved(server, server.kubeconfig("admin", workdir / "admin.kubeconfig"))
        kubectl(result, "apply", "-k", str(overlay))
        with server.api_client("admin") as admin:
            populate(admin)
        yield result
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def token(moved: Moved, *bound: str, account: str = "braid", namespace: str = NAMESPACE) -> str:
    """`kubectl create token ACCOUNT -n NAMESPACE [--bound-object-kind K ...]`, as documented."""
    return kubectl(moved, "create", "token", account, "-n", namespace, "--duration=10m", *bound)


def bound_to(moved: Moved, kind: str) -> list[str]:
    """The flags binding a token to braid's pod on alt-a, or to node alt-a itself."""
    name = "braid-a" if kind == "Pod" else "alt-a"
    where = ["-n", NAMESPACE, "pod"] if kind == "Pod" else ["node"]
    uid = kubectl(moved, "get", *where, name, "-o", "jsonpath={.metadata.uid}")
    return [
        f"--bound-object-kind={kind}",
        f"--bound-object-name={name}",
        f"--bound-object-uid={uid}",
    ]


def patch(moved: Moved, bearer: str, pod: str, body: dict[str, object]) -> int:
    """The HTTP status of a PATCH of WORKLOADS/`pod`'s status with `bearer`; a 403 must be the
    policy's."""
    refused: ApiException | None = None
    with moved.server.api_client(token=bearer) as client:
        try:
            kubernetes.client.CoreV1Api(client).patch_namespaced_pod_status(pod, WORKLOADS, body)
        except ApiException as exc:
            refused = exc
    if refused is None:
        return 200
    assert refused.status != 403 or POLICY in str(refused.body), refused.body
    return int(refused.status)


@pytest.fixture(scope="module")
def enforced(moved: Moved) -> Moved:
    """Once the server enforces the policy: braid's token without a node is refused."""
    unbound = token(moved)
    deadline = time.monotonic() + 30
    while patch(moved, unbound, "on-a", STATUS) != 403:
        assert time.monotonic() < deadline, f"{POLICY} does not confine {NAMESPACE}'s braid"
        time.sleep(0.2)
    return moved


def test_the_overlay_moves_braids_identity(enforced: Moved) -> None:
    with enforced.server.api_client("admin") as admin:
        binding = kubernetes.client.RbacAuthorizationV1Api(admin).read_cluster_role_binding("braid")
    assert [(s.kind, s.namespace, s.name) for s in binding.subjects] == [
        ("ServiceAccount", NAMESPACE, "braid")
    ]


def test_braid_in_the_new_namespace_is_confined(enforced: Moved) -> None:
    braid = token(enforced, *bound_to(enforced, "Pod"))
    assert patch(enforced, braid, "on-a", STATUS) == 200
    assert patch(enforced, braid, "on-a", LABEL) == 403
    assert patch(enforced, braid, "on-b", STATUS) == 403


def test_the_old_namespace_is_nobody_special(enforced: Moved) -> None:
    with enforced.server.api_client("admin") as admin:
        core = kubernetes.client.CoreV1Api(admin)
        core.create_namespace({"metadata": {"name": "braid-system"}})
        core.create_namespaced_service_account("braid-system", {"metadata": {"name": "braid"}})
        rbac = kubernetes.client.RbacAuthorizationV1Api(admin)
        rbac.create_cluster_role_binding({
            "metadata": {"name": "old-braid"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "braid"},
            "subjects": [{"kind": "ServiceAccount", "name": "braid", "namespace": "braid-system"}],
        })  # fmt: skip
    old = token(enforced, namespace="braid-system")
    deadline = time.monotonic() + 10  # the RBAC authorizer sees the new binding a moment later
    while (status := patch(enforced, old, "on-b", LABEL)) == 403:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert status == 200


@pytest.mark.parametrize("kind", ["Pod", "Node"])
def test_a_token_bound_to_braids_pod_or_node_names_the_node(enforced: Moved, kind: str) -> None:
    braid = token(enforced, *bound_to(enforced, kind))
    with enforced.server.api_client(token=braid) as client:
        review = kubernetes.client.AuthenticationV1Api(client).create_self_subject_review(
            kubernetes.client.V1SelfSubjectReview()
        )
    assert review.status.user_info.username == f"system:serviceaccount:{NAMESPACE}:braid"
    assert review.status.user_info.extra[NODE_NAME_KEY] == ["alt-a"]
    assert patch(enforced, braid, "on-a", {"metadata": {"annotations": {STATUS_KEY: kind}}}) == 200
    assert patch(enforced, braid, "on-b", STATUS) == 403


@pytest.mark.parametrize("bound", ["nothing", "Secret"])
def test_a_token_bound_to_nothing_or_a_secret_names_no_node(enforced: Moved, bound: str) -> None:
    flags: list[str] = []
    if bound == "Secret":
        kubectl(enforced, "create", "secret", "generic", "braid-bound", "-n", NAMESPACE)
        uid = kubectl(enforced, "get", "secret", "braid-bound", "-n", NAMESPACE,
                      "-o", "jsonpath={.metadata.uid}")  # fmt: skip
        flags = ["--bound-object-kind=Secret", "--bound-object-name=braid-bound",
                 f"--bound-object-uid={uid}"]  # fmt: skip
    unbound = token(enforced, *flags)
    with enforced.server.api_client(token=unbound) as client:
        review = kubernetes.client.AuthenticationV1Api(client).create_self_subject_review(
            kubernetes.client.V1SelfSubjectReview()
        )
    assert NODE_NAME_KEY not in (review.status.user_info.extra or {})
    assert patch(enforced, unbound, "on-a", STATUS) == 403


def test_braid_thins_account_is_held_to_the_same_rules(enforced: Moved) -> None:
    thin = token(enforced, *bound_to(enforced, "Node"), account="braid-thin")
    assert patch(enforced, thin, "on-a", STATUS) == 200
    assert patch(enforced, thin, "on-a", LABEL) == 403
    assert patch(enforced, thin, "on-b", STATUS) == 403
    assert patch(enforced, token(enforced, account="braid-thin"), "on-a", STATUS) == 403


def test_without_its_binding_the_check_finds_the_policy_missing(
    enforced: Moved, tmp_path: Path
) -> None:
    """Last in the module: it deletes the binding."""
    braid = token(enforced, *bound_to(enforced, "Pod"))
    config = enforced.server.kubeconfig("braid", tmp_path / "kubeconfig", token=braid)
    client = connect(BraidConfig(kubeconfig=str(config)).kubernetes, {})
    try:
        assert check_policy(client, WORKLOADS, "on-a").reason == ENFORCED
        kubectl(enforced, "delete", "validatingadmissionpolicybinding", POLICY)
        assert wait_until(lambda: check_policy(client, WORKLOADS, "on-a").reason == MISSING)
        verdict = check_policy(client, WORKLOADS, "on-a")
    finally:
        client.close()
    assert verdict.detail.endswith(f"no ValidatingAdmissionPolicyBinding {POLICY}"), verdict
    found = doctor(config, tmp_path)
    assert found["status"] == "fail", found
    assert str(found["detail"]).startswith("missing: "), found
    assert "deploy/components/admission-policy" in str(found["fix"])


def doctor(kubeconfig: Path, workdir: Path) -> dict[str, object]:
    """`braidctl doctor -o json`'s admission policy finding, for a daemon on alt-a."""
    config = workdir / "braid.conf"
    config.write_text(json.dumps({"cniVersion": "1.1.0", "name": "braid", "type": "braid",
                                  "kubeconfig": str(kubeconfig)}))  # fmt: skip
    env = {**os.environ, "BRAID_NODE_NAME": "alt-a"}
    done = subprocess.run(
        [sys.executable, "-m", "braid.commands.braidctl", "doctor", "-o", "json",
         f"--config={config}", f"--cni-conf-dir={workdir}"],
        capture_output=True, text=True, env=env, check=False, timeout=60,
    )  # fmt: skip
    [found] = [f for f in json.loads(done.stdout) if f["check"] == "admission policy"]
    assert isinstance(found, dict)
    return found
