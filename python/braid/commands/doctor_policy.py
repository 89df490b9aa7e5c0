"""``braidctl doctor``'s check of braid's admission policy: the daemon's own check
(``braid.k8s.admission_check``: a dry run of a write the policy forbids), made with the
daemon's identity on a pod of this node (one LIST of at most one pod, one PATCH, and two GETs
when the write was accepted). In force, missing, not binding braid's identity, or refusing
braid's own writes (a token that names no node, or another node)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from braid.commands.doctor_view import Finding, NodeView, failed, good, nothing
from braid.daemon.settings import node_name_of
from braid.errors import CniError
from braid.k8s.select import kubernetes_wanted

CHECK = "admission policy"
NODE_BOUND = (
    "give the daemon a node-bound token: in its pod, the kubelet's projected service-account "
    "token (no kubeconfig in braid's configuration); outside a pod, `kubectl create token braid "
    "-n braid-system --bound-object-kind Node --bound-object-name NODE --bound-object-uid UID` "
    '(docs/daemon.md, "A node-bound identity")'
)
INSTALL = (
    "apply an overlay with the component deploy/components/admission-policy (Kubernetes 1.30 "
    'and later; docs/operations.md, "What the admission policy guards")'
)
BIND = (
    "re-apply the overlay: the binding's paramRef must name braid's ClusterRoleBinding "
    "(`braid`), and that binding the ServiceAccount the daemon runs as"
)
FIXES = {
    "own_writes_refused": NODE_BOUND,
    "missing": INSTALL,
    "not_binding": BIND,
    "not_enforced": f"{INSTALL}; or {BIND}",
    "forbidden": "check braid's RBAC (deploy/base: pods/status patch) and what else refused it",
    "unknown": "check that the API server answers braid's identity and run doctor again",
}


def check_admission_policy(view: NodeView, env: Mapping[str, str] = os.environ) -> Finding:
    config = view.operator.config
    if not kubernetes_wanted(config.kubernetes, env):
        return nothing(CHECK, "braid does not use the Kubernetes API here")
    from braid.k8s.admission_check import ENFORCED, check_policy  # noqa: PLC0415
    from braid.k8s.select import connect  # noqa: PLC0415

    node, _ = node_name_of(None, env)
    try:
        client = connect(config.kubernetes, env, timeout=5.0)
    except CniError as exc:
        return failed(CHECK, f"cannot reach the API server: {exc.msg}", FIXES["unknown"])
    try:
        listed = client.json(
            "GET",
            "/api/v1/pods",
            query={"fieldSelector": f"spec.nodeName={node}", "limit": "1"},
            max_body=1 << 20,
            timeout=5.0,
        )
        items = listed.get("items")
        pod = items[0].get("metadata", {}) if isinstance(items, list) and items else {}
        if not isinstance(pod, dict) or not pod.get("name"):
            return nothing(CHECK, f"no pod on node {node} to try a forbidden write on")
        verdict = check_policy(client, str(pod.get("namespace", "")), str(pod["name"]))
    except CniError as exc:
        return failed(CHECK, f"cannot list the pods of node {node}: {exc.msg}", FIXES["unknown"])
    finally:
        client.close()
    if verdict.reason == ENFORCED:
        return good(CHECK, verdict.detail)
    return failed(CHECK, f"{verdict.reason}: {verdict.detail}", FIXES[verdict.reason])
