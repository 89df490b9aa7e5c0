"""braid's ValidatingAdmissionPolicy (deploy/components/admission-policy, which the overlays
include) on a real API server, with real identities: braid's ServiceAccount, through a token
bound to its pod on a node (as the kubelet's projected token is), may add, change and remove the
network-status annotation of that node's pods and change nothing else; other users pass
untouched.

Each test makes its own two Nodes, its pods on them and braid's pod (in braid-system) its
token is bound to, and deletes them at the end; its namespace stays, as the tier's do."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import apiserver
import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

STATUS_KEY = "k8s.v1.cni.cncf.io/network-status"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
POLICY = "braid-network-status-only"
DENIED = f"ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}' denied request: "
ONLY_STATUS = f"braid's service account may change only the {STATUS_KEY} annotation of a pod"
NO_NODE = (
    "braid's service account must use a token bound to a pod on a node: these credentials "
    f"carry no {NODE_NAME_KEY}"
)
OTHER = f"annotations other than {STATUS_KEY}"
NETWORK_STATUS = '[{"name": "cluster", "interface": "eth0", "default": true}]'


@dataclass
class Cluster:
    """Two nodes, a pod on each (`on-a`, `on-b`) in `namespace`, and braid's client whose
    token is bound to braid's pod on node `a`."""

    namespace: str
    a: str
    b: str
    braid: kubernetes.client.CoreV1Api
    token: str
    braid_pod: str


def pod_body(name: str, node: str | None, namespace: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": "web"},
            "annotations": {"keep": "me"},
        },
        "spec": spec,
    }


def delete_pod(admin: kubernetes.client.ApiClient, namespace: str, name: str) -> None:
    """Deletes at once (no kubelet would ever finish a graceful delete); gone already is fine."""
    try:
        kubernetes.client.CoreV1Api(admin).delete_namespaced_pod(
            name, namespace, grace_period_seconds=0
        )
    except ApiException as exc:
        if exc.status != 404:
            raise


def refusal(call: Callable[[], object]) -> str:
    """The message of the 403 `call` gets; fails the test if it gets anything else."""
    with pytest.raises(ApiException) as refused:
        call()
    assert refused.value.status == 403, refused.value.body
    status = json.loads(refused.value.body)
    assert status["reason"] == "Forbidden"
    return str(status["message"])


def wait_enforced(server: apiserver.ApiServer, namespace: str, pod: str) -> None:
    """Blocks until the API server enforces the policy (it loads policies and bindings through
    its own watch, a moment after they are created): a dry-run write by braid's static token,
    which has no node name, is refused."""
    with server.api_client(token=server.tokens["braid"]) as static:
        core = kubernetes.client.CoreV1Api(static)
        patch = {"metadata": {"annotations": {STATUS_KEY: NETWORK_STATUS}}}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                core.patch_namespaced_pod_status(pod, namespace, patch, dry_run="All")
            except ApiException as exc:
                if exc.status == 403 and POLICY in str(exc.body):
                    return
                raise
            time.sleep(0.2)
    pytest.fail(f"after 30 s the policy {POLICY} still lets braid's static token (no node name) in")


@pytest.fixture
def cluster(
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> Iterator[Cluster]:
    core = kubernetes.client.CoreV1Api(kube_admin)
    tag = uuid.uuid4().hex[:8]
    a, b = f"adm-{tag}-a", f"adm-{tag}-b"
    braid_pod = f"braid-{tag}"
    pods: list[tuple[str, str]] = []
    nodes: list[str] = []
    try:
        for node in (a, b):
            core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
            nodes.append(node)
        for name, node in (("on-a", a), ("on-b", b)):
            core.create_namespaced_pod(kube_namespace, pod_body(name, node, kube_namespace))
            pods.append((kube_namespace, name))
        pods.append(("braid-system", braid_pod))
        token = apiserver.node_bound_token(kube_admin, braid_pod, a, seconds=600)
        wait_enforced(kube_apiserver, kube_namespace, "on-a")
        with kube_apiserver.api_client(token=token) as braid:
            braid_api = kubernetes.client.CoreV1Api(braid)
            yield Cluster(kube_namespace, a, b, braid_api, token, braid_pod)
    finally:
        for namespace, name in pods:
            delete_pod(kube_admin, namespace, name)
        for node in nodes:
            core.delete_node(node)


def read(admin: kubernetes.client.ApiClient, namespace: str, name: str) -> Any:
    return kubernetes.client.CoreV1Api(admin).read_namespaced_pod(name, namespace)


def test_the_bound_token_names_braid_and_its_node(
    kube_apiserver: apiserver.ApiServer, cluster: Cluster
) -> None:
    with kube_apiserver.api_client(token=cluster.token) as braid:
        review = kubernetes.client.AuthenticationV1Api(braid).create_self_subject_review(
            kubernetes.client.V1SelfSubjectReview()
        )
    user = review.status.user_info
    assert user.username == apiserver.BRAID_USER
    assert user.extra[NODE_NAME_KEY] == [cluster.a]
    assert user.extra["authentication.kubernetes.io/pod-name"] == [cluster.braid_pod]


def test_braid_adds_changes_and_removes_the_network_status_on_its_node(
    kube_admin: kubernetes.client.ApiClient, cluster: Cluster
) -> None:
    ns = cluster.namespace
    before = read(kube_admin, ns, "on-a")
    for value in (NETWORK_STATUS, "[]", None):
        cluster.braid.patch_namespaced_pod_status(
            "on-a", ns, {"metadata": {"annotations": {STATUS_KEY: value}}}
        )
        stored = read(kube_admin, ns, "on-a")
        assert stored.metadata.annotations.get(STATUS_KEY) == value
    assert stored.metadata.annotations == {"keep": "me"}
    assert stored.metadata.labels == before.metadata.labels
    assert stored.status == before.status


def test_braid_may_write_the_same_value_again(
    kube_admin: kubernetes.client.ApiClient, cluster: Cluster
) -> None:
    patch = {"metadata": {"annotations": {STATUS_KEY: NETWORK_STATUS}}}
    cluster.braid.patch_namespaced_pod_status("on-a", cluster.namespace, patch)
    cluster.braid.patch_namespaced_pod_status("on-a", cluster.namespace, patch)
    stored = read(kube_admin, cluster.namespace, "on-a")
    assert stored.metadata.annotations[STATUS_KEY] == NETWORK_STATUS


@pytest.mark.parametrize(
    ("patch", "changed"),
    [
        ({"metadata": {"labels": {"extra": "yes"}}}, "labels"),
        ({"metadata": {"labels": {"app": "db"}}}, "labels"),
        ({"metadata": {"labels": {"app": None}}}, "labels"),
        ({"metadata": {"annotations": {"other": "x"}}}, OTHER),
        ({"metadata": {"annotations": {"keep": "changed"}}}, OTHER),
        ({"metadata": {"annotations": {"keep": None}}}, OTHER),
        ({"metadata": {"finalizers": ["example.com/hold"]}}, "finalizers"),
        ({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, "status"),
        (
            {"metadata": {"labels": {"app": "db"}, "annotations": {STATUS_KEY: NETWORK_STATUS}}},
            "labels",
        ),
    ],
    ids=[
        "add-label", "change-label", "remove-label", "add-annotation", "change-annotation",
        "remove-annotation", "finalizer", "ready-condition", "network-status-and-a-label",
    ],
)  # fmt: skip
def test_braid_may_change_nothing_else(
    kube_admin: kubernetes.client.ApiClient,
    cluster: Cluster,
    patch: dict[str, Any],
    changed: str,
) -> None:
    before = read(kube_admin, cluster.namespace, "on-a")
    message = refusal(
        lambda: cluster.braid.patch_namespaced_pod_status("on-a", cluster.namespace, patch)
    )
    assert message.endswith(DENIED + f"{ONLY_STATUS}, not its {changed}"), message
    after = read(kube_admin, cluster.namespace, "on-a")
    assert after.metadata.resource_version == before.metadata.resource_version


def test_braid_may_not_write_the_pods_of_another_node(
    kube_admin: kubernetes.client.ApiClient, cluster: Cluster
) -> None:
    before = read(kube_admin, cluster.namespace, "on-b")
    patch = {"metadata": {"annotations": {STATUS_KEY: NETWORK_STATUS}}}
    message = refusal(
        lambda: cluster.braid.patch_namespaced_pod_status("on-b", cluster.namespace, patch)
    )
    assert message.endswith(
        DENIED + f"braid on node {cluster.a} may not write pod {cluster.namespace}/on-b, "
        f"which is on node {cluster.b}"
    ), message
    after = read(kube_admin, cluster.namespace, "on-b")
    assert after.metadata.resource_version == before.metadata.resource_version
    assert STATUS_KEY not in after.metadata.annotations


def test_braid_may_not_write_a_pod_bound_to_no_node(
    kube_admin: kubernetes.client.ApiClient, cluster: Cluster
) -> None:
    ns = cluster.namespace
    core = kubernetes.client.CoreV1Api(kube_admin)
    core.create_namespaced_pod(ns, pod_body("unbound", None, ns))
    try:
        patch = {"metadata": {"annotations": {STATUS_KEY: NETWORK_STATUS}}}
        message = refusal(lambda: cluster.braid.patch_namespaced_pod_status("unbound", ns, patch))
        assert message.endswith(
            DENIED + f"braid on node {cluster.a} may not write pod {ns}/unbound, "
            "which is not bound to a node"
        ), message
    finally:
        delete_pod(kube_admin, ns, "unbound")


def unbound_token(admin: kubernetes.client.ApiClient) -> str:
    request = kubernetes.client.AuthenticationV1TokenRequest(
        spec=kubernetes.client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
    )
    core = kubernetes.client.CoreV1Api(admin)
    return str(core.create_namespaced_service_account_token("braid", "braid-system", request)
               .status.token)  # fmt: skip


@pytest.mark.parametrize("credential", ["token-request", "pod-on-no-node", "static-token"])
def test_braid_without_a_node_name_is_refused(
    kube_apiserver: apiserver.ApiServer,
    kube_admin: kubernetes.client.ApiClient,
    cluster: Cluster,
    credential: str,
) -> None:
    tag = uuid.uuid4().hex[:8]
    owned: list[str] = []
    try:
        if credential == "token-request":  # no boundObjectRef: bound to nothing
            token = unbound_token(kube_admin)
        elif credential == "pod-on-no-node":  # bound to a pod the scheduler has not placed
            owned.append(f"braid-{tag}")
            token = apiserver.node_bound_token(kube_admin, f"braid-{tag}", "", seconds=600)
        else:  # the tier's static token: braid's user and groups, no extras
            token = kube_apiserver.tokens["braid"]
        with kube_apiserver.api_client(token=token) as client:
            review = kubernetes.client.AuthenticationV1Api(client).create_self_subject_review(
                kubernetes.client.V1SelfSubjectReview()
            )
            assert review.status.user_info.username == apiserver.BRAID_USER
            assert NODE_NAME_KEY not in (review.status.user_info.extra or {})
            braid = kubernetes.client.CoreV1Api(client)
            patch = {"metadata": {"annotations": {STATUS_KEY: NETWORK_STATUS}}}
            message = refusal(
                lambda: braid.patch_namespaced_pod_status("on-a", cluster.namespace, patch)
            )
        assert message.endswith(DENIED + NO_NODE), message
        assert STATUS_KEY not in read(kube_admin, cluster.namespace, "on-a").metadata.annotations
    finally:
        for name in owned:
            delete_pod(kube_admin, "braid-system", name)


def test_the_admins_own_changes_pass(
    kube_admin: kubernetes.client.ApiClient, cluster: Cluster
) -> None:
    core = kubernetes.client.CoreV1Api(kube_admin)
    ns = cluster.namespace
    for pod in ("on-a", "on-b"):
        patch = {"metadata": {"labels": {"app": "db"}, "annotations": {STATUS_KEY: "[]"}}}
        core.patch_namespaced_pod_status(pod, ns, patch)
        core.patch_namespaced_pod(pod, ns, {"metadata": {"annotations": {"other": "x"}}})
        stored = read(kube_admin, ns, pod)
        assert stored.metadata.labels == {"app": "db"}
        assert stored.metadata.annotations == {"keep": "me", "other": "x", STATUS_KEY: "[]"}


def grant(
    admin: kubernetes.client.ApiClient,
    namespace: str,
    subject: kubernetes.client.RbacV1Subject,
    resources: list[str],
    verbs: list[str],
) -> None:
    """A Role and RoleBinding `extra` in `namespace` (the test's own: gone with nothing else)."""
    rbac = kubernetes.client.RbacAuthorizationV1Api(admin)
    rule = kubernetes.client.V1PolicyRule(api_groups=[""], resources=resources, verbs=verbs)
    role = kubernetes.client.V1Role(
        metadata=kubernetes.client.V1ObjectMeta(name="extra"), rules=[rule]
    )
    rbac.create_namespaced_role(namespace, role)
    binding = kubernetes.client.V1RoleBinding(
        metadata=kubernetes.client.V1ObjectMeta(name="extra"),
        role_ref=kubernetes.client.V1RoleRef(
            api_group="rbac.authorization.k8s.io", kind="Role", name="extra"
        ),
        subjects=[subject],
    )
    rbac.create_namespaced_role_binding(namespace, binding)


def test_another_service_account_named_braid_passes_untouched(
    kube_apiserver: apiserver.ApiServer, kube_admin: kubernetes.client.ApiClient, cluster: Cluster
) -> None:
    ns = cluster.namespace
    core = kubernetes.client.CoreV1Api(kube_admin)
    account = kubernetes.client.V1ServiceAccount(
        metadata=kubernetes.client.V1ObjectMeta(name="braid")
    )
    core.create_namespaced_service_account(ns, account)
    subject = kubernetes.client.RbacV1Subject(kind="ServiceAccount", name="braid", namespace=ns)
    grant(kube_admin, ns, subject, ["pods/status"], ["patch"])
    request = kubernetes.client.AuthenticationV1TokenRequest(
        spec=kubernetes.client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
    )
    token = core.create_namespaced_service_account_token("braid", ns, request).status.token
    with kube_apiserver.api_client(token=token) as other:
        patch = {"metadata": {"labels": {"app": "db"}}}
        kubernetes.client.CoreV1Api(other).patch_namespaced_pod_status("on-b", ns, patch)
    assert read(kube_admin, ns, "on-b").metadata.labels == {"app": "db"}


def test_the_pod_itself_is_held_to_the_same_rule_whatever_rbac_grants(
    kube_admin: kubernetes.client.ApiClient, cluster: Cluster
) -> None:
    """RBAC does not let braid update, delete or evict pods; granted anyway (here in the test's
    namespace), the policy still allows only the network-status annotation."""
    ns = cluster.namespace
    subject = kubernetes.client.RbacV1Subject(
        kind="ServiceAccount", name="braid", namespace="braid-system"
    )
    grant(kube_admin, ns, subject, ["pods", "pods/eviction"], ["patch", "delete", "create"])
    braid = cluster.braid
    braid.patch_namespaced_pod("on-a", ns, {"metadata": {"annotations": {STATUS_KEY: "[]"}}})
    assert read(kube_admin, ns, "on-a").metadata.annotations[STATUS_KEY] == "[]"
    label = {"metadata": {"labels": {"app": "db"}}}
    message = refusal(lambda: braid.patch_namespaced_pod("on-a", ns, label))
    assert message.endswith(DENIED + f"{ONLY_STATUS}, not its labels"), message
    spec = {"spec": {"activeDeadlineSeconds": 5}}
    message = refusal(lambda: braid.patch_namespaced_pod("on-a", ns, spec))
    assert message.endswith(DENIED + f"{ONLY_STATUS}, not its spec"), message
    message = refusal(lambda: braid.delete_namespaced_pod("on-a", ns))
    assert message.endswith(DENIED + "braid's service account may only patch pods/status, "
                            "not DELETE pods"), message  # fmt: skip
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "on-a"}}
    message = refusal(lambda: braid.create_namespaced_pod_eviction("on-a", ns, eviction))
    assert message.endswith(DENIED + "braid's service account may only patch pods/status, "
                            "not CREATE pods/eviction"), message  # fmt: skip
    after = read(kube_admin, ns, "on-a")
    assert after.metadata.labels == {"app": "web"}
    assert after.metadata.deletion_timestamp is None
