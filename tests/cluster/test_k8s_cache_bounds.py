"""What a tenant creates does not grow the daemon's caches (issue: NADs of 1 MiB each grew
every daemon for good). On the real API server: NADs over maxNadBytes are kept as markers of
their size and refused on use as the engine refuses them; every LIST is paginated, shrinks its
pages when one is too large, and starts again on an expired continue token; past
maxCacheBytes, objects are not kept and reads go live, still right."""

from __future__ import annotations

import gc
import json
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import apiserver
import faultproxy
import kubernetes.client
import pytest
from faultproxy import where
from faultproxy_rules import status_body
from k8s_engine import NAD_GROUP, NAD_PLURAL, NAD_VERSION, NODE, Node, create_nad, node
from test_k8s_caches import uses
from test_k8s_devices import delegate_devices
from test_k8s_dra import Dra, add, dra, thief
from test_k8s_status import wait_until

from braid.config.schema import BraidConfig
from braid.errors import CniError
from braid.k8s import listing
from braid.k8s.budget import OVER_BOUND, OVERSIZED
from braid.k8s.caches import SIZE_KEY, ClusterCaches
from braid.k8s.select import connect

__all__ = ["dra", "node"]  # the fixtures
NAD_LISTS = where(method="GET", path="network-attachment-definitions", watch=False)
MAX_NAD = 64 * 1024
BIG = 1_000_000  # bytes of each oversized spec.config
StartCaches = Callable[..., ClusterCaches]


@pytest.fixture
def start_caches(
    tmp_path: Path, kube_apiserver: apiserver.ApiServer, fault_proxy: faultproxy.FaultProxy
) -> Iterator[StartCaches]:
    started: list[ClusterCaches] = []

    def start(**bounds: Any) -> ClusterCaches:
        kubeconfig = kube_apiserver.kubeconfig("braid", tmp_path / "kc", server=fault_proxy.url)
        client = connect(BraidConfig(kubeconfig=str(kubeconfig)), {})
        caches = ClusterCaches(client, node_name=NODE, watch_timeout=3, **bounds)
        caches.start()
        started.append(caches)
        assert caches.wait_synced(30)
        return caches

    yield start
    for caches in started:
        caches.stop()
        caches.live.client.close()


@pytest.fixture
def big_nads(kube_admin: kubernetes.client.ApiClient, kube_namespace: str) -> Iterator[list[str]]:
    """Eight NADs of 1 MB each in the test's namespace, deleted after the test."""
    names = [f"big-{i}" for i in range(8)]
    for name in names:
        filler = "x" * (BIG - 100)
        create_nad(kube_admin, kube_namespace, name, json.dumps({"type": "fakesec", "x": filler}))
    yield names
    api = kubernetes.client.CustomObjectsApi(kube_admin)
    for name in names:
        api.delete_namespaced_custom_object(
            NAD_GROUP, NAD_VERSION, kube_namespace, NAD_PLURAL, name
        )


def nad_lists(proxy: faultproxy.FaultProxy) -> list[faultproxy.LoggedRequest]:
    return [r for r in proxy.requests(NAD_LISTS) if r.path.endswith(NAD_PLURAL)]


def reads(proxy: faultproxy.FaultProxy, since: int) -> list[str]:
    """The last path segment of each request but watches since the ``since``-th."""
    return [r.path.rsplit("/", 1)[-1] for r in proxy.requests()[since:] if not r.is_watch]


def first_namespace(admin: kubernetes.client.ApiClient) -> str:
    """A namespace that sorts before the tier's others (``t-...``): its objects are listed
    first, whatever the session created before."""
    name = f"a-{uuid.uuid4().hex[:10]}"
    body = kubernetes.client.V1Namespace(metadata=kubernetes.client.V1ObjectMeta(name=name))
    kubernetes.client.CoreV1Api(admin).create_namespace(body)
    return name


def config_size(admin: kubernetes.client.ApiClient, ns: str, name: str) -> int:
    obj = kubernetes.client.CustomObjectsApi(admin).get_namespaced_custom_object(
        NAD_GROUP, NAD_VERSION, ns, NAD_PLURAL, name
    )
    return len(obj["spec"]["config"].encode())


def test_oversized_nads_are_kept_as_markers_and_refused_on_use(
    start_caches: StartCaches,
    big_nads: list[str],
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = kube_namespace
    uses(kube_admin, ns, *big_nads, "late", "small")
    # Pages of at most 3 MiB: the first page of 250 NADs is too large and is asked for again
    # with fewer items, as a cluster whose NADs pass the 64 MiB a LIST answer may have would be.
    tracemalloc.start()
    try:
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        with mock.patch.object(listing, "PAGE_BYTES", 3 << 20):
            caches = start_caches(max_nad_bytes=MAX_NAD)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    # An independent oracle of what the caches hold: the 8 MB of NADs are not in memory.
    assert held < 2 << 20, held
    create_nad(kube_admin, ns, "small")
    create_nad(kube_admin, ns, "late", json.dumps({"type": "fakesec", "x": "y" * BIG}))
    assert wait_until(lambda: caches.nads.get(ns, "late") is not None)
    assert wait_until(lambda: caches.nads.get(ns, "small") is not None)
    for name in [*big_nads, "late"]:  # listed, and seen by the watch
        entry = caches.nads.get(ns, name)
        assert entry is not None
        assert "spec" not in entry
        assert entry[SIZE_KEY] == config_size(kube_admin, ns, name)
        assert entry["metadata"]["resourceVersion"]
    # Nine markers and the small NADs of the session: nowhere near the 9 MB they stand for.
    assert caches.nads.used_bytes < 2_000 * len(caches.nads)
    assert caches.nads.refusals.counts()[OVERSIZED] >= len(big_nads) + 1
    before = len(fault_proxy.log)
    with pytest.raises(CniError) as refused:
        caches.store.get_nad(ns, "big-3")
    size = config_size(kube_admin, ns, "big-3")
    assert refused.value.code == 7
    assert refused.value.msg == (
        f"NetworkAttachmentDefinition {ns}/big-3: spec.config is {size} bytes, more than the "
        f"{MAX_NAD} braid allows (braid configuration key `maxNadBytes`)"
    )
    assert reads(fault_proxy, before) == []  # refused from the marker, no read
    # A request that allows more reads the NAD live, whole.
    nad = caches.store_for(2 << 20).get_nad(ns, "big-3")
    assert nad is not None
    assert nad.config is not None
    assert len(nad.config.encode()) == size
    assert caches.store.get_nad(ns, "small") is not None
    limits = [r.query.get("limit") for r in nad_lists(fault_proxy)]
    assert limits[0] == "250"
    assert None not in limits
    assert len(set(limits)) > 1  # the page shrank


def test_an_expired_continue_token_lists_again_from_the_start(
    start_caches: StartCaches,
    kube_admin: kubernetes.client.ApiClient,
    kube_namespace: str,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    for i in range(4):
        create_nad(kube_admin, kube_namespace, f"n{i}")
    uses(kube_admin, kube_namespace, *(f"n{i}" for i in range(4)))

    def continued(method: str, path: str, query: dict[str, str]) -> bool:
        return NAD_LISTS(method, path, query) and bool(query.get("continue"))

    expired = status_body(410, "Expired", "The provided continue parameter is too old")
    fault_proxy.respond(410, match=continued, body=expired)
    with mock.patch.object(listing, "PAGE_ITEMS", 2):
        caches = start_caches()
    for i in range(4):
        assert caches.nads.get(kube_namespace, f"n{i}") is not None
    lists = nad_lists(fault_proxy)
    statuses = [(r.status, bool(r.query.get("continue"))) for r in lists]
    assert statuses[:3] == [(200, False), (410, True), (200, False)]
    assert caches.nads.lists == 1


def test_past_the_byte_bound_reads_go_live_and_stay_right(
    start_caches: StartCaches,
    kube_admin: kubernetes.client.ApiClient,
    fault_proxy: faultproxy.FaultProxy,
) -> None:
    ns = first_namespace(kube_admin)
    bound = 6_000  # a few NADs' worth
    names = [f"net-{i}" for i in range(12)]
    for name in names:
        create_nad(kube_admin, ns, name)
    uses(kube_admin, ns, *names)  # NADs the node's pods name are never evicted
    caches = start_caches(max_nad_bytes=MAX_NAD, max_cache_bytes=bound)
    assert caches.nads.used_bytes <= bound
    kept = [n for n in names if caches.nads.get(ns, n) is not None]
    dropped = [n for n in names if n not in kept]
    assert dropped
    assert caches.nads.refusals.counts()[OVER_BOUND] >= len(dropped)
    for name in names:
        before = len(fault_proxy.log)
        nad = caches.store.get_nad(ns, name)
        assert nad is not None
        assert json.loads(nad.config or "")["name"] == name
        assert reads(fault_proxy, before) == ([] if name in kept else [name])
    # An update that no longer fits drops the old version: never a stale answer.
    api = kubernetes.client.CustomObjectsApi(kube_admin)
    grown = json.dumps({"cniVersion": "1.0.0", "name": kept[0], "type": "fakesec", "x": "z" * 9000})
    api.patch_namespaced_custom_object(
        NAD_GROUP, NAD_VERSION, ns, NAD_PLURAL, kept[0], {"spec": {"config": grown}}
    )
    assert wait_until(lambda: caches.nads.get(ns, kept[0]) is None)
    nad = caches.store.get_nad(ns, kept[0])
    assert nad is not None
    assert nad.config == grown
    assert caches.nads.used_bytes <= bound


def test_a_claim_cache_past_its_bound_reads_claims_live(
    node: Node, dra: Dra, start_caches: StartCaches, fault_proxy: faultproxy.FaultProxy
) -> None:
    dra.claim()
    uid = dra.pod()
    dra.allocate(uid)
    caches = start_caches(claims=True, max_cache_bytes=1)  # keeps no claim and no NAD
    assert caches.claims is not None
    assert (len(caches.claims), caches.claims.used_bytes) == (0, 0)
    before = len(fault_proxy.log)
    result, code = add(node, dra, uid, caches)
    assert code == 0, result
    assert delegate_devices(node) == [("net1", "dra0"), ("net2", "dra1")]
    assert "net-claim" in reads(fault_proxy, before)
    # Another pod of the node whose claim allocates nic-0: found live too.
    thief(dra)
    assert wait_until(lambda: caches.pods.get(dra.ns, "thief") is not None)
    error, code = add(node, dra, uid, caches)
    assert (code, error["code"]) == (1, 11)
    assert f"{dra.ns}/thief" in error["msg"]
