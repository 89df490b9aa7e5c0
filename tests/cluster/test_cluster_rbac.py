"""deploy/base's RBAC, applied to a real API server, lets braid's identity do its job and
nothing more: proved with SelfSubjectAccessReviews and with real requests, both directions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import apiserver
import cluster_manifests
import kubernetes.client
import pytest
from kubernetes.client.exceptions import ApiException

NAD = ("k8s.cni.cncf.io", "network-attachment-definitions")
POD, POD_STATUS, EVENT = ("", "pods"), ("", "pods/status"), ("", "events")
CLAIM, SLICE = ("resource.k8s.io", "resourceclaims"), ("resource.k8s.io", "resourceslices")

ALLOWED = [
    (*NAD, "get"), (*NAD, "list"), (*NAD, "watch"),
    (*POD, "get"), (*POD, "list"), (*POD, "watch"),
    (*POD_STATUS, "patch"),
    (*EVENT, "create"), ("events.k8s.io", "events", "create"),
    (*EVENT, "patch"), ("events.k8s.io", "events", "patch"),
    (*CLAIM, "get"),
    (*SLICE, "get"), (*SLICE, "list"), (*SLICE, "watch"),
]  # fmt: skip
DENIED = [
    (*NAD, "create"), (*NAD, "update"), (*NAD, "patch"), (*NAD, "delete"),
    (*POD, "create"), (*POD, "update"), (*POD, "patch"), (*POD, "delete"),
    (*POD_STATUS, "update"), ("", "pods/exec", "create"), ("", "pods/eviction", "create"),
    ("", "secrets", "get"), ("", "secrets", "list"), ("", "configmaps", "get"),
    ("", "nodes", "get"), ("", "serviceaccounts/token", "create"),
    (*EVENT, "update"), (*EVENT, "delete"), (*EVENT, "list"),
    ("apiextensions.k8s.io", "customresourcedefinitions", "create"),
    (*CLAIM, "create"), (*CLAIM, "update"), (*CLAIM, "delete"),
    (*CLAIM, "list"), (*CLAIM, "watch"),  # a claim is read by name, those of its node's pods
    ("resource.k8s.io", "resourceclaims/status", "patch"), (*SLICE, "create"), (*SLICE, "delete"),
]  # fmt: skip


def split(resource: str) -> tuple[str, str | None]:
    name, _, sub = resource.partition("/")
    return name, sub or None


def allowed(client: kubernetes.client.ApiClient, group: str, resource: str, verb: str) -> bool:
    name, sub = split(resource)
    review = kubernetes.client.V1SelfSubjectAccessReview(
        spec=kubernetes.client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=kubernetes.client.V1ResourceAttributes(
                group=group, resource=name, subresource=sub, verb=verb, namespace="some-namespace"
            )
        )
    )
    answer = kubernetes.client.AuthorizationV1Api(client).create_self_subject_access_review(review)
    return bool(answer.status.allowed)


@pytest.fixture
def braid_client(kube_apiserver: apiserver.ApiServer) -> Iterator[kubernetes.client.ApiClient]:
    with kube_apiserver.api_client("braid") as client:
        yield client


def rule_set(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_rendered_cluster_role_is_exactly_the_job_and_is_what_the_server_holds(
    kube_admin: kubernetes.client.ApiClient,
) -> None:
    rendered = [d for d in cluster_manifests.render("base") if d["kind"] == "ClusterRole"]
    assert [r["metadata"]["name"] for r in rendered] == ["braid"]
    assert rule_set(rendered[0]["rules"]) == set(ALLOWED)
    held = kubernetes.client.RbacAuthorizationV1Api(kube_admin).read_cluster_role("braid")
    held_rules = [
        {"apiGroups": r.api_groups, "resources": r.resources, "verbs": r.verbs} for r in held.rules
    ]
    assert rule_set(held_rules) == set(ALLOWED)


@pytest.mark.parametrize(("group", "resource", "verb"), ALLOWED)
def test_braid_may(
    braid_client: kubernetes.client.ApiClient, group: str, resource: str, verb: str
) -> None:
    assert allowed(braid_client, group, resource, verb)


@pytest.mark.parametrize(("group", "resource", "verb"), DENIED)
def test_braid_may_not(
    braid_client: kubernetes.client.ApiClient, group: str, resource: str, verb: str
) -> None:
    assert not allowed(braid_client, group, resource, verb)


def test_without_the_binding_nobody_may_read_pods(kube_apiserver: apiserver.ApiServer) -> None:
    with kube_apiserver.api_client("nobody") as nobody:
        assert not allowed(nobody, *POD, "list")
        with pytest.raises(ApiException) as refused:
            kubernetes.client.CoreV1Api(nobody).list_pod_for_all_namespaces(limit=1)
    assert refused.value.status == 403


def test_a_bound_service_account_token_gets_the_same_rights(
    kube_apiserver: apiserver.ApiServer, kube_admin: kubernetes.client.ApiClient
) -> None:
    request = kubernetes.client.AuthenticationV1TokenRequest(
        spec=kubernetes.client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
    )
    core = kubernetes.client.CoreV1Api(kube_admin)
    token = core.create_namespaced_service_account_token("braid", "braid-system", request)
    with kube_apiserver.api_client(token=token.status.token) as bound:
        assert allowed(bound, *POD_STATUS, "patch")
        assert not allowed(bound, *POD, "patch")


def make_pod(admin: kubernetes.client.ApiClient, namespace: str) -> Any:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "workload", "namespace": namespace},
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "pause"}]},
    }
    return kubernetes.client.CoreV1Api(admin).create_namespaced_pod(namespace, pod)


def test_braid_does_its_job_with_real_requests(
    kube_admin: kubernetes.client.ApiClient,
    braid_client: kubernetes.client.ApiClient,
    kube_namespace: str,
) -> None:
    pod = make_pod(kube_admin, kube_namespace)
    core = kubernetes.client.CoreV1Api(braid_client)
    on_node = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=node-a")
    assert pod.metadata.uid in {p.metadata.uid for p in on_node.items}
    assert core.read_namespaced_pod("workload", kube_namespace).metadata.uid == pod.metadata.uid
    status = '[{"name": "cluster", "default": true}]'
    patch = {"metadata": {"annotations": {"k8s.v1.cni.cncf.io/network-status": status}}}
    core.patch_namespaced_pod_status("workload", kube_namespace, patch)
    stored = kubernetes.client.CoreV1Api(kube_admin).read_namespaced_pod("workload", kube_namespace)
    assert stored.metadata.annotations["k8s.v1.cni.cncf.io/network-status"] == status
    event = kubernetes.client.CoreV1Event(
        metadata=kubernetes.client.V1ObjectMeta(generate_name="workload."),
        involved_object=kubernetes.client.V1ObjectReference(
            kind="Pod", name="workload", namespace=kube_namespace, uid=pod.metadata.uid
        ),
        reason="AddedInterface",
        message="Add net1 [10.1.1.2/24] from default/macvlan",
        type="Normal",
    )
    assert core.create_namespaced_event(kube_namespace, event).reason == "AddedInterface"
    nads = kubernetes.client.CustomObjectsApi(braid_client)
    assert nads.list_namespaced_custom_object(*NAD[:1], "v1", kube_namespace, NAD[1])["items"] == []
    resource = kubernetes.client.ResourceV1Api(braid_client)
    with pytest.raises(kubernetes.client.ApiException) as missing:  # allowed, and not there
        resource.read_namespaced_resource_claim("absent", kube_namespace)
    assert missing.value.status == 404
    slices = resource.list_resource_slice(field_selector="spec.nodeName=node-a")
    assert isinstance(slices.items, list)


@pytest.mark.parametrize(
    "attempt",
    ["update_pod", "delete_pod", "patch_pod", "read_secrets", "patch_nad", "create_nad"],
)
def test_braid_is_refused_everything_else(
    kube_admin: kubernetes.client.ApiClient,
    braid_client: kubernetes.client.ApiClient,
    kube_namespace: str,
    attempt: str,
) -> None:
    pod = make_pod(kube_admin, kube_namespace)
    admin_nads = kubernetes.client.CustomObjectsApi(kube_admin)
    nad = {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
           "metadata": {"name": "net"}, "spec": {"config": '{"type": "bridge"}'}}  # fmt: skip
    admin_nads.create_namespaced_custom_object(NAD[0], "v1", kube_namespace, NAD[1], nad)
    core = kubernetes.client.CoreV1Api(braid_client)
    nads = kubernetes.client.CustomObjectsApi(braid_client)
    label = {"metadata": {"labels": {"touched": "yes"}}}
    attempts = {
        "update_pod": lambda: core.replace_namespaced_pod("workload", kube_namespace, pod),
        "delete_pod": lambda: core.delete_namespaced_pod("workload", kube_namespace),
        "patch_pod": lambda: core.patch_namespaced_pod("workload", kube_namespace, label),
        "read_secrets": lambda: core.list_namespaced_secret(kube_namespace),
        "patch_nad": lambda: nads.patch_namespaced_custom_object(
            NAD[0], "v1", kube_namespace, NAD[1], "net", label
        ),
        "create_nad": lambda: nads.create_namespaced_custom_object(
            NAD[0], "v1", kube_namespace, NAD[1], {**nad, "metadata": {"name": "other"}}
        ),
    }
    with pytest.raises(ApiException) as refused:
        attempts[attempt]()
    assert refused.value.status == 403
    assert apiserver.BRAID_USER in str(refused.value.body)
    # The objects are untouched.
    after = kubernetes.client.CoreV1Api(kube_admin).read_namespaced_pod("workload", kube_namespace)
    assert after.metadata.resource_version == pod.metadata.resource_version
