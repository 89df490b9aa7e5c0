"""braid's admission policy (deploy/components/admission-policy) on braid's events, on a real
API server: braid's identity, through its token bound to a pod on node-a, may record events
about pods that name node-a or no node as their source, and about node-a itself in namespace
default, and raise their count; not about other objects or nodes, not as another node, not by
rewriting another's event, not by deleting one, and not without a node-bound token. Core and
events.k8s.io alike (the API server stores one Event).

Pods and events live in the test's own namespace (the tier leaves namespaces behind); an event
about the node, in namespace default, is removed by its test."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import apiserver
import kubernetes.client
import pytest
from k8s_engine import create_pod
from kubernetes.client.exceptions import ApiException

POLICY = "braid-network-status-only"
DENIED = f"ValidatingAdmissionPolicy '{POLICY}' with binding '{POLICY}' denied request: "
NO_NODE = (
    "braid's service account must use a token bound to a pod on a node: these credentials "
    "carry no authentication.kubernetes.io/node-name"
)
NODE = apiserver.BRAID_NODE
ABOUT_ONLY = (
    "braid's service account may record events only about pods of the event's namespace and "
    "about its own node in namespace default, not about "
)
# Where a node's events go, as the kubelet records them.
NODE_EVENTS = "default"


def refusal(call: Callable[[], object]) -> str:
    """The message of the 403 `call` gets; fails the test if it gets anything else."""
    with pytest.raises(ApiException) as refused:
        call()
    assert refused.value.status == 403, refused.value.body
    return str(json.loads(refused.value.body)["message"])


def event(namespace: str, about: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A core Event as braid's recorder writes it (`fields` add to it or replace)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"e-{uuid.uuid4().hex[:10]}", "namespace": namespace},
        "involvedObject": about,
        "reason": "AddedInterface",
        "message": "Add net1 [10.1.1.2/24] from default/macvlan",
        "type": "Normal",
        "source": {"component": "braid", "host": NODE},
        "count": 1,
        **fields,
    }


@pytest.fixture
def braid(kube_apiserver: apiserver.ApiServer) -> Iterator[kubernetes.client.CoreV1Api]:
    """braid's client: its token bound to a pod on node-a."""
    with kube_apiserver.api_client("braid") as client:
        yield kubernetes.client.CoreV1Api(client)


@pytest.fixture
def pod(kube_admin: kubernetes.client.ApiClient, kube_namespace: str) -> dict[str, Any]:
    """A pod on node-a, as an event's involvedObject."""
    uid = create_pod(kube_admin, kube_namespace, "web")
    return {"apiVersion": "v1", "kind": "Pod", "namespace": kube_namespace, "name": "web",
            "uid": uid}  # fmt: skip


def test_braid_records_and_counts_events_about_pods(
    braid: kubernetes.client.CoreV1Api,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    pod: dict[str, Any],
) -> None:
    ns = kube_namespace
    made = braid.create_namespaced_event(ns, event(ns, pod))
    braid.create_namespaced_event(ns, event(ns, pod, source={"component": "braid"}))
    braid.patch_namespaced_event(made.metadata.name, ns, {"count": 2, "message": "Add net1 again"})
    stored = kubernetes.client.CoreV1Api(kube_admin).read_namespaced_event(made.metadata.name, ns)
    assert (stored.count, stored.message) == (2, "Add net1 again")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"involvedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"}},
            f"{ABOUT_ONLY}Service NS/web",
        ),
        (
            {"source": {"component": "braid", "host": "node-b"}},
            f"braid on node {NODE} may not record an event as node node-b",
        ),
        (
            {"reportingComponent": "braid", "reportingInstance": "node-b"},
            f"braid on node {NODE} may not record an event as node node-b",
        ),
    ],
    ids=["about-a-node", "as-another-node", "reporting-another-node"],
)
def test_braid_records_no_other_event(
    braid: kubernetes.client.CoreV1Api,
    kube_namespace: str,
    pod: dict[str, Any],
    fields: dict[str, Any],
    message: str,
) -> None:
    ns = kube_namespace
    if "involvedObject" in fields:
        fields = {"involvedObject": {**fields["involvedObject"], "namespace": ns}}
    said = refusal(lambda: braid.create_namespaced_event(ns, event(ns, pod, **fields)))
    assert said.endswith(DENIED + message.replace("NS", ns)), said


def test_through_events_k8s_io_too(
    kube_apiserver: apiserver.ApiServer, kube_namespace: str, pod: dict[str, Any]
) -> None:
    body = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"e-{uuid.uuid4().hex[:10]}", "namespace": kube_namespace},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Service",
            "namespace": kube_namespace,
            "name": "web",
        },
        "reason": "AddedInterface",
        "note": "x",
        "type": "Normal",
        "action": "Added",
        "reportingController": "braid-cni.io/braid",
        "reportingInstance": NODE,
    }
    with kube_apiserver.api_client("braid") as client:
        # A raw POST: the generated client rewrites eventTime into a form the server refuses.
        configuration = client.configuration
        response = client.call_api(
            "POST",
            f"{configuration.host}/apis/events.k8s.io/v1/namespaces/{kube_namespace}/events",
            header_params={
                "Content-Type": "application/json",
                "Authorization": configuration.get_api_key_with_prefix("authorization"),
            },
            body=body,
        )
        response.read()
    assert response.status == 403, response.data
    said = json.loads(response.data)["message"]
    assert "may record events only about pods" in said, said


def test_braid_rewrites_no_other_event(
    braid: kubernetes.client.CoreV1Api,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    pod: dict[str, Any],
) -> None:
    ns = kube_namespace
    admin = kubernetes.client.CoreV1Api(kube_admin)
    theirs = admin.create_namespaced_event(
        ns, event(ns, pod, source={"component": "kubelet", "host": "node-b"})
    ).metadata.name
    said = refusal(lambda: braid.patch_namespaced_event(theirs, ns, {"count": 7}))
    assert said.endswith(
        DENIED + f"braid on node {NODE} may update only its own events, and only their count, "
        f"time and message: not event {ns}/{theirs}"
    ), said
    mine = braid.create_namespaced_event(ns, event(ns, pod)).metadata.name
    other = {"involvedObject": {**pod, "name": "db", "uid": "x"}}
    said = refusal(lambda: braid.patch_namespaced_event(mine, ns, other))
    assert f"not event {ns}/{mine}" in said, said
    assert admin.read_namespaced_event(theirs, ns).count == 1


def test_braid_deletes_no_event_whatever_rbac_grants(
    braid: kubernetes.client.CoreV1Api,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    pod: dict[str, Any],
) -> None:
    ns = kube_namespace
    mine = braid.create_namespaced_event(ns, event(ns, pod)).metadata.name
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube_admin)
    rule = kubernetes.client.V1PolicyRule(api_groups=[""], resources=["events"], verbs=["delete"])
    rbac.create_namespaced_role(
        ns, kubernetes.client.V1Role(metadata={"name": "delete-events"}, rules=[rule])
    )
    subject = kubernetes.client.RbacV1Subject(
        kind="ServiceAccount", name="braid", namespace="braid-system"
    )
    rbac.create_namespaced_role_binding(
        ns,
        kubernetes.client.V1RoleBinding(
            metadata={"name": "delete-events"},
            role_ref=kubernetes.client.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="Role", name="delete-events"
            ),
            subjects=[subject],
        ),
    )
    deadline = time.monotonic() + 10  # the RBAC authorizer sees the new binding a moment later
    while "cannot delete" in (said := refusal(lambda: braid.delete_namespaced_event(mine, ns))):
        assert time.monotonic() < deadline, said
        time.sleep(0.1)
    assert said.endswith(
        DENIED + "braid's service account may only create and patch events, not DELETE"
    ), said


def test_braid_without_a_node_records_nothing(
    kube_apiserver: apiserver.ApiServer, kube_namespace: str, pod: dict[str, Any]
) -> None:
    with kube_apiserver.api_client(token=kube_apiserver.tokens["braid"]) as static:
        core = kubernetes.client.CoreV1Api(static)
        said = refusal(
            lambda: core.create_namespaced_event(kube_namespace, event(kube_namespace, pod))
        )
    assert said.endswith(DENIED + NO_NODE), said


def test_the_admins_events_pass(
    kube_admin: kubernetes.client.ApiClient, kube_namespace: str, pod: dict[str, Any]
) -> None:
    ns = kube_namespace
    service = {"apiVersion": "v1", "kind": "Service", "namespace": ns, "name": "web"}
    admin = kubernetes.client.CoreV1Api(kube_admin)
    made = admin.create_namespaced_event(
        ns, event(ns, service, source={"component": "x", "host": "node-b"})
    )
    admin.delete_namespaced_event(made.metadata.name, ns)


def node_event(about: str, namespace: str = NODE_EVENTS, **fields: Any) -> dict[str, Any]:
    """An event about the node ``about``, as braid's recorder writes one (``about_node``)."""
    node = {"apiVersion": "v1", "kind": "Node", "name": about, "uid": about}
    return event(namespace, node, reason="CNIConfigurationShadowed", type="Warning", **fields)


def test_braid_records_and_counts_events_about_its_own_node(
    braid: kubernetes.client.CoreV1Api, kube_admin: kubernetes.client.ApiClient
) -> None:
    admin = kubernetes.client.CoreV1Api(kube_admin)
    made = braid.create_namespaced_event(NODE_EVENTS, node_event(NODE)).metadata.name
    try:
        braid.patch_namespaced_event(made, NODE_EVENTS, {"count": 2, "message": "again"})
        stored = admin.read_namespaced_event(made, NODE_EVENTS)
        assert (stored.involved_object.kind, stored.involved_object.name) == ("Node", NODE)
        assert (stored.count, stored.message) == (2, "again")
    finally:
        admin.delete_namespaced_event(made, NODE_EVENTS)


@pytest.mark.parametrize(
    ("about", "where", "message"),
    [
        ("node-b", NODE_EVENTS, f"{ABOUT_ONLY}Node node-b in namespace default"),
        # The API server keeps an event about a cluster-scoped object in default (422
        # elsewhere); one that names a namespace for the node is the policy's to refuse.
        (NODE, "NS", f"{ABOUT_ONLY}Node NS/{NODE} in namespace NS"),
    ],
    ids=["another-node", "own-node-in-a-namespace"],
)
def test_braid_records_no_event_about_another_node_or_elsewhere(
    braid: kubernetes.client.CoreV1Api, kube_namespace: str, about: str, where: str, message: str
) -> None:
    ns = kube_namespace if where == "NS" else where
    body = node_event(about, ns)
    if where == "NS":
        body["involvedObject"]["namespace"] = ns
    said = refusal(lambda: braid.create_namespaced_event(ns, body))
    assert said.endswith(DENIED + message.replace("NS", kube_namespace)), said
