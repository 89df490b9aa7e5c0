"""The daemon's watch caches on a real API server: reads without API calls, a NAD created a
moment ago, a dropped watch resumed from its resourceVersion, a 410 answered by listing again.
The NAD cache keeps the NADs the node's pods name (``braid.k8s.nad_cache``): each test's NADs
are named by a pod of the node (``uses``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import apiserver
import faultproxy
import kubernetes.client
import pytest
from faultproxy import where
from k8s_engine import NODE, Node, create_nad, create_pod, node
from test_k8s_status import wait_until

from braid.config.schema import BraidConfig
from braid.engine import Engine
from braid.engine.session import store_sessions
from braid.k8s.caches import ClusterCaches
from braid.k8s.select import connect

__all__ = ["node"]  # the fixture
NAD_WATCH = where(method="GET", path="network-attachment-definitions", watch=True)
StartCaches = Callable[[], ClusterCaches]
NETWORKS = "k8s.v1.cni.cncf.io/networks"


def uses(admin: kubernetes.client.ApiClient, ns: str, *nads: str) -> str:
    """A pod of the node naming ``nads`` (so the NAD cache keeps them); its UID."""
    return create_pod(admin, ns, f"user-{len(nads)}-{nads[0]}", {NETWORKS: ",".join(nads)})


@pytest.fixture
def start_caches(
    tmp_path: Path, kube_apiserver: apiserver.ApiServer, fault_proxy: faultproxy.FaultProxy
) -> Iterator[StartCaches]:
    started: list[ClusterCaches] = []

    def start() -> ClusterCaches:
        kubeconfig = kube_apiserver.kubeconfig("braid", tmp_path / "kc", server=fault_proxy.url)
        client = connect(BraidConfig(kubeconfig=str(kubeconfig)), {})
        # Short watches: the proxy's stop waits for the server to end the streams it forwards.
        caches = ClusterCaches(client, node_name=NODE, watch_timeout=3)
        caches.start()
        started.append(caches)
        assert caches.wait_synced(10)
        return caches

    yield start
    for caches in started:
        caches.stop()
        caches.live.client.close()


def test_cached_objects_are_read_without_api_calls(
    start_caches: StartCaches,
    node: Node,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    caches = start_caches()
    create_nad(kube_admin, ns, "blue")
    uid = create_pod(kube_admin, ns, "web", {"k8s.v1.cni.cncf.io/networks": "blue"})
    create_pod(kube_admin, ns, "elsewhere", node="node-b")
    assert wait_until(lambda: caches.nads.get(ns, "blue") is not None)
    assert wait_until(lambda: caches.pods.get(ns, "web") is not None)
    before = len(fault_proxy.requests())

    assert caches.store.get_pod(ns, "web", uid) == {"k8s.v1.cni.cncf.io/networks": "blue"}
    nad = caches.store.get_nad(ns, "blue")
    assert nad is not None
    assert json.loads(nad.config or "")["type"] == "fakesec"
    # An ADD whose pod annotations come from the runtime, with its NADs cached: no API call.
    env = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "ctr1", "CNI_NETNS": node.netns,
           "CNI_IFNAME": "eth0", "CNI_PATH": "",
           "CNI_ARGS": f"K8S_POD_NAMESPACE={ns};K8S_POD_NAME=web"}  # fmt: skip
    conf = node.conf(
        clusterNetwork=str(node.root / "net.d" / "kcluster.conflist"),
        runtimeConfig={
            "io.kubernetes.cri.pod-annotations": {"k8s.v1.cni.cncf.io/networks": "blue"}
        },
    )
    out, code = Engine(session=store_sessions(caches.store)).run(env, json.dumps(conf).encode())
    assert code == 0, out
    assert node.calls("ADD") == [("fakenet", "eth0"), ("fakesec", "net1")]
    assert len(fault_proxy.requests()) == before
    assert caches.pods.get(ns, "elsewhere") is None
    pod_lists = fault_proxy.requests(where(method="GET", path="/api/v1/pods"))
    assert {r.query.get("fieldSelector") for r in pod_lists} == {f"spec.nodeName={NODE}"}


def test_a_nad_created_a_moment_ago_is_found_live(
    start_caches: StartCaches,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    caches = start_caches()
    caches.nads.stop()  # the cache will not see it
    create_nad(kube_admin, kube_namespace, "fresh")
    nad = caches.store.get_nad(kube_namespace, "fresh")
    assert nad is not None
    assert nad.name == "fresh"
    live = fault_proxy.requests(where(method="GET", path="network-attachment-definitions/fresh"))
    assert [r.status for r in live] == [200]


def test_a_dropped_watch_resumes_from_its_resource_version(
    start_caches: StartCaches,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    fault_proxy.drop_watch(after_events=1, match=NAD_WATCH)
    uses(kube_admin, kube_namespace, "first", "second")
    caches = start_caches()
    create_nad(kube_admin, kube_namespace, "first")
    assert wait_until(lambda: caches.nads.get(kube_namespace, "first") is not None)
    assert len(fault_proxy.wait_for(NAD_WATCH, at_least=2)) >= 2
    create_nad(kube_admin, kube_namespace, "second")
    assert wait_until(lambda: caches.nads.get(kube_namespace, "second") is not None)
    watches = fault_proxy.requests(NAD_WATCH)
    assert watches[0].dropped
    first_version = caches.nads.get(kube_namespace, "first")["metadata"]["resourceVersion"]  # type: ignore[index]
    assert watches[1].query["resourceVersion"] == first_version
    assert caches.nads.lists == 1


def test_gone_lists_again(
    start_caches: StartCaches,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    fault_proxy.respond(410, match=NAD_WATCH)
    uses(kube_admin, kube_namespace, "after")
    caches = start_caches()
    assert wait_until(lambda: caches.nads.lists >= 2)
    create_nad(kube_admin, kube_namespace, "after")
    assert wait_until(lambda: caches.nads.get(kube_namespace, "after") is not None)
    lists = fault_proxy.requests(
        where(method="GET", path="network-attachment-definitions", watch=False)
    )
    assert len(lists) >= 2
