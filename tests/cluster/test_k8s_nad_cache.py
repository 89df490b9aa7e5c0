"""The NAD cache keeps what its node can use (``braid.k8s.nad_cache``), on a real API server:
the NADs no pod of the node names pass through the watch and are not kept; a miss is one GET,
then kept (the next read makes none) and kept current by the watch; past its count the least
recently used NAD is evicted; a NAD a pod of the node starts naming is read before its ADD."""

from __future__ import annotations

import json

import faultproxy
import kubernetes.client
from k8s_engine import NAD_GROUP, NAD_PLURAL, NAD_VERSION, create_nad, create_pod
from test_k8s_caches import StartCaches, start_caches, uses
from test_k8s_status import wait_until

from braid.k8s.nad_cache import EVICTED

__all__ = ["start_caches"]  # the fixture
NETWORKS = "k8s.v1.cni.cncf.io/networks"


def gets(proxy: faultproxy.FaultProxy, ns: str, since: int) -> list[str]:
    """The NADs of ``ns`` read one by one since the ``since``-th request."""
    path = f"/namespaces/{ns}/{NAD_PLURAL}/"
    return [r.path.rsplit("/", 1)[-1] for r in proxy.requests()[since:] if path in r.path]


def test_nads_no_pod_names_are_not_kept_a_miss_is_read_once_and_evicted_past_the_count(
    start_caches: StartCaches,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    names = [f"net-{i}" for i in range(6)]
    for name in names:
        create_nad(kube_admin, ns, name)
    uses(kube_admin, ns, "pinned")
    create_nad(kube_admin, ns, "pinned")
    caches = start_caches()
    assert wait_until(lambda: caches.nads.get(ns, "pinned") is not None)
    # What the node's pods name (the session's other tests' too) and two more.
    base = len(caches.nads)
    caches.nads.max_objects = base + 2
    assert [n for n in names if caches.nads.get(ns, n) is not None] == []

    since = len(fault_proxy.log)
    for name in names[:2]:
        assert caches.store.get_nad(ns, name) is not None  # a miss: read live, then kept
        assert caches.store.get_nad(ns, name) is not None  # from the cache
    assert gets(fault_proxy, ns, since) == names[:2]
    # An update reaches a NAD kept after a miss, through the watch.
    api = kubernetes.client.CustomObjectsApi(kube_admin)
    config = json.dumps({"cniVersion": "1.0.0", "name": "net-0", "type": "fakenet"})
    api.patch_namespaced_custom_object(
        NAD_GROUP, NAD_VERSION, ns, NAD_PLURAL, "net-0", {"spec": {"config": config}}
    )
    assert wait_until(lambda: (caches.nads.get(ns, "net-0") or {})["spec"]["config"] == config)
    # A third miss evicts the least recently used (net-1: net-0 was read since), not "pinned".
    assert caches.store.get_nad(ns, names[2]) is not None
    assert caches.nads.get(ns, "net-1") is None
    kept = {n for n in ("pinned", *names) if caches.nads.get(ns, n)}
    assert kept == {"pinned", "net-0", "net-2"}
    stats = {name: extra for name, _, _, extra in caches.stats()}["nads"]
    assert (stats[EVICTED], stats["live_reads"]) == (1, 3)
    api.delete_namespaced_custom_object(NAD_GROUP, NAD_VERSION, ns, NAD_PLURAL, "net-2")
    assert wait_until(lambda: caches.nads.get(ns, "net-2") is None)
    assert len(caches.nads) == base + 1


def test_a_nad_a_new_pod_names_is_read_before_its_add(
    start_caches: StartCaches,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    create_nad(kube_admin, ns, "blue")
    caches = start_caches()
    assert caches.nads.get(ns, "blue") is None
    create_pod(kube_admin, ns, "web", {NETWORKS: json.dumps([{"name": "blue"}])})
    assert wait_until(lambda: caches.nads.get(ns, "blue") is not None)
    since = len(fault_proxy.log)
    assert caches.store.get_nad(ns, "blue") is not None
    assert gets(fault_proxy, ns, since) == []
