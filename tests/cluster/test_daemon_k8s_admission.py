"""A real `braidctl daemon` checks that its admission policy is in force (a dry-run write the
policy forbids, through the fault proxy to the real API server): with braid's node-bound token
the policy refuses it, once; with a token that names no node the daemon says that the policy
refuses its own writes, counts its refused network-status PATCHes, and stays ready. An identity
the policy does not bind finds the write accepted; `braidctl doctor` reports the same checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import apiserver
import faultproxy
import kubernetes.client
from k8s_engine import NODE, Node, create_nad, create_pod, node
from test_daemon_k8s_reads import NETWORKS_KEY, K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

from braid.config.schema import BraidConfig
from braid.k8s.admission_check import FORBIDDEN, MISSING, NOT_BINDING, check_policy
from braid.k8s.select import connect

__all__ = ["k8s_daemon", "node"]  # the fixtures
CHECKING = ("--admission-check-seconds", "600")
ENFORCED = 'braid_daemon_admission_policy_enforced{reason="enforced"}'
OWN_REFUSED = 'braid_daemon_admission_policy_enforced{reason="own_writes_refused"}'
REFUSED_BY_ADMISSION = 'braid_daemon_status_writes_refused_total{by="admission"}'


def dry_runs(proxy: faultproxy.FaultProxy) -> list[faultproxy.LoggedRequest]:
    return [r for r in proxy.requests() if r.query.get("dryRun") == "All"]


def test_the_daemon_finds_its_policy_in_force_with_one_request(
    k8s_daemon: K8sDaemon, fault_proxy: faultproxy.FaultProxy
) -> None:
    before = len(dry_runs(fault_proxy))
    k8s_daemon.start(*CHECKING)
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    assert wait_until(lambda: k8s_daemon.metric(ENFORCED) == 1), k8s_daemon.log_text()
    status, body = k8s_daemon.http("/readyz?verbose")
    assert status == 200
    assert body.startswith("ready\nadmission policy: enforced: policy braid-network-status-only")
    assert k8s_daemon.http("/readyz") == (200, "ready\n")
    made = dry_runs(fault_proxy)[before:]
    assert [(r.method, r.status) for r in made] == [("PATCH", 403)]
    assert made[0].path.endswith("/status")
    assert "admission policy: enforced" in k8s_daemon.log_text()


def test_a_daemon_whose_token_names_no_node_says_its_writes_are_refused(
    k8s_daemon: K8sDaemon,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    # braid's user and groups, as a static token: no authentication.kubernetes.io/node-name.
    kube_apiserver.kubeconfig(
        "braid",
        k8s_daemon.node.kubeconfig,
        server=fault_proxy.url,
        token=kube_apiserver.tokens["braid"],
    )
    create_nad(kube_admin, ns, "blue")
    uid = create_pod(kube_admin, ns, "web", {NETWORKS_KEY: "blue"})
    k8s_daemon.start(*CHECKING)
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    assert wait_until(lambda: k8s_daemon.metric(OWN_REFUSED) == 1), k8s_daemon.log_text()
    result, code = k8s_daemon.call("ADD", namespace=ns, pod="web", uid=uid)
    assert code == 0, result  # statusWritePolicy background: the pod starts
    assert wait_until(lambda: k8s_daemon.metric(REFUSED_BY_ADMISSION) >= 1)
    status, body = k8s_daemon.http("/readyz?verbose")
    assert status == 200, body  # not a readiness matter: the node's pods must still start
    lines = body.splitlines()
    assert lines[1].startswith("admission policy: own_writes_refused: policy braid-network-")
    assert "must use a token bound to a pod on a node" in lines[1]
    assert lines[2].startswith("network-status writes refused: "), lines
    assert "by admission" in lines[2]
    assert "admission policy: own_writes_refused" in k8s_daemon.log_text()


def test_an_identity_the_policy_does_not_bind_finds_the_write_accepted(
    tmp_path: Path,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    """Another account with braid's ClusterRole, named by no binding the policy reads: the dry
    run passes (and nothing is stored)."""
    ns = kube_namespace
    create_pod(kube_admin, ns, "web")
    core = kubernetes.client.CoreV1Api(kube_admin)
    core.create_namespaced_service_account(ns, {"metadata": {"name": "braid"}})
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube_admin)
    rbac.create_namespaced_role_binding(ns, {
        "metadata": {"name": "braid"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "braid"},
        "subjects": [{"kind": "ServiceAccount", "name": "braid", "namespace": ns}],
    })  # fmt: skip
    request = kubernetes.client.AuthenticationV1TokenRequest(
        spec=kubernetes.client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
    )
    token = core.create_namespaced_service_account_token("braid", ns, request).status.token
    config = kube_apiserver.kubeconfig("braid", tmp_path / "other", token=token)
    client = connect(BraidConfig(kubeconfig=str(config)).kubernetes, {})
    reader = f"braid-admission-check-{ns}"  # what the component grants braid's account
    try:
        assert wait_until(lambda: check_policy(client, ns, "web").reason != FORBIDDEN)
        unread = check_policy(client, ns, "web")
        rbac.create_cluster_role_binding({
            "metadata": {"name": reader},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "braid-admission-check"},
            "subjects": [{"kind": "ServiceAccount", "name": "braid", "namespace": ns}],
        })  # fmt: skip
        assert wait_until(lambda: check_policy(client, ns, "web").reason == NOT_BINDING)
        verdict = check_policy(client, ns, "web")
    finally:
        client.close()
        rbac.delete_cluster_role_binding(reader)
    assert unread.reason == MISSING, unread  # it may not read the policy: as if uninstalled
    assert "was accepted" in verdict.detail
    assert "do not apply to braid's identity" in verdict.detail
    assert "braid-cni.io/admission-check" not in (core.read_namespaced_pod("web", ns).metadata
                                                  .labels or {})  # fmt: skip


def doctor(node: Node, *, node_name: str = NODE) -> dict[str, object]:
    """`braidctl doctor -o json`'s finding on the admission policy, with the node's config."""
    config = node.root / "doctor.conf"
    config.write_text(json.dumps(node.conf()))
    env = {**os.environ, "BRAID_NODE_NAME": node_name, "BRAID_CONFIG": str(config)}
    done = subprocess.run(
        [sys.executable, "-m", "braid.commands.braidctl", "doctor", "-o", "json",
         "--cni-conf-dir", str(node.root / "net.d")],
        capture_output=True, text=True, env=env, check=False, timeout=60,
    )  # fmt: skip
    findings = json.loads(done.stdout)
    [found] = [f for f in findings if f["check"] == "admission policy"]
    assert isinstance(found, dict)
    return found


def test_doctor_reports_the_policy_in_force(node: Node, kube_admin: kubernetes.client.ApiClient,
                                            kube_namespace: str) -> None:  # fmt: skip
    create_pod(kube_admin, kube_namespace, "web")
    found = doctor(node)
    assert found["status"] == "ok", found
    assert "refused a dry-run label change" in str(found["detail"])


def test_doctor_fails_a_token_that_names_no_node(
    node: Node,
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    create_pod(kube_admin, kube_namespace, "web")
    kube_apiserver.kubeconfig(
        "braid", node.kubeconfig, server=fault_proxy.url, token=kube_apiserver.tokens["braid"]
    )
    found = doctor(node)
    assert found["status"] == "fail", found
    assert "refuses braid's own network-status writes" in str(found["detail"])
    assert "node-bound" in str(found["fix"])
