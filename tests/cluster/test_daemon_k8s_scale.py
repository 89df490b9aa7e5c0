"""A daemon's memory does not depend on the cluster's size (issue 25): a running `braidctl
daemon` of node-a while the API server gets, through the API, 2,000 pods bound to other nodes,
2,000 ResourceClaims those pods name and 500 NADs. The daemon keeps only the claim its own pod
names (never a LIST or WATCH of every claim), only the NAD its own pod names (the watch
passes over the others), and its resident memory grows by less than 5 MiB. The figures are
printed (`-s` shows them):

    .venv/bin/python -m pytest tests/cluster/test_daemon_k8s_scale.py -q -s

`make bench-scale` measures the same at up to 150,000 pods (docs/scale.md).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import faultproxy
import kubernetes.client
import pytest
from faultproxy import where
from k8s_engine import NAD_GROUP, NAD_PLURAL, NAD_VERSION, create_nad, node
from test_daemon_k8s_cache_bounds import rss_bytes
from test_daemon_k8s_reads import K8sDaemon, k8s_daemon
from test_k8s_status import wait_until

__all__ = ["k8s_daemon", "node"]  # the fixtures
# BRAID_SCALE multiplies the sizes (e.g. 5: 10,000 pods and claims, 2,500 NADs).
SCALE = int(os.environ.get("BRAID_SCALE", "1"))
PODS, CLAIMS, NADS = 2000 * SCALE, 2000 * SCALE, 500 * SCALE
GROWTH = 5 << 20
CLASS = "braid-scale.example"
OBJECTS = 'braid_daemon_cache_objects{cache="%s"}'


def claim_body(name: str) -> dict[str, Any]:
    request = {"name": "nic", "exactly": {"deviceClassName": CLASS}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name}, "spec": {"devices": {"requests": [request]}}}  # fmt: skip


def pod_body(name: str, node_name: str, claim: str, nets: str = "") -> dict[str, Any]:
    meta = {"name": name, "annotations": {"k8s.v1.cni.cncf.io/networks": nets} if nets else {}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node_name,
                     "resourceClaims": [{"name": "net", "resourceClaimName": claim}],
                     "containers": [{"name": "c", "image": "pause"}]}}  # fmt: skip


def in_bulk(count: int, create: Callable[[int], object]) -> None:
    """``create(i)`` for every i below ``count``, 16 at a time."""
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, range(count)))


class Cluster:
    """What the test creates in ``ns``, deleted after it (the namespace stays: no
    controller-manager runs)."""

    def __init__(self, admin: kubernetes.client.ApiClient, ns: str) -> None:
        self.ns = ns
        self.core = kubernetes.client.CoreV1Api(admin)
        self.dra = kubernetes.client.ResourceV1Api(admin)
        self.custom = kubernetes.client.CustomObjectsApi(admin)
        self.admin = admin

    def grow(self) -> None:
        ns = self.ns
        in_bulk(CLAIMS, lambda i: self.dra.create_namespaced_resource_claim(
            ns, claim_body(f"claim-{i}"), _preload_content=False))  # fmt: skip
        in_bulk(PODS, lambda i: self.core.create_namespaced_pod(
            ns, pod_body(f"pod-{i}", f"node-{1 + i % 50}", f"claim-{i % CLAIMS}"),
            _preload_content=False))  # fmt: skip
        in_bulk(NADS, lambda i: create_nad(self.admin, ns, f"nad-{i}"))

    def remove(self) -> None:
        ns = self.ns
        self.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
        self.dra.delete_collection_namespaced_resource_claim(ns)
        self.custom.delete_collection_namespaced_custom_object(
            NAD_GROUP, NAD_VERSION, ns, NAD_PLURAL
        )


@pytest.fixture
def cluster(kube_admin: kubernetes.client.ApiClient, kube_namespace: str) -> Iterator[Cluster]:
    made = Cluster(kube_admin, kube_namespace)
    try:
        yield made
    finally:
        made.remove()


def settled_rss(daemon: K8sDaemon) -> int:
    """The daemon's resident memory once it has stayed put for a second (at most 10 s)."""
    assert daemon.proc is not None
    last = rss_bytes(daemon.proc.pid)
    for _ in range(10):
        time.sleep(1)
        now = rss_bytes(daemon.proc.pid)
        if abs(now - last) < 256 << 10:
            return now
        last = now
    return last


@pytest.mark.timeout(600)
def test_the_daemon_holds_only_its_nodes_claims_and_does_not_grow_with_the_cluster(
    k8s_daemon: K8sDaemon, cluster: Cluster, fault_proxy: faultproxy.FaultProxy
) -> None:
    ns = cluster.ns
    cluster.dra.create_namespaced_resource_claim(ns, claim_body("mine"))
    cluster.core.create_namespaced_pod(ns, pod_body("mine", "node-a", "mine", "mine-net"))
    k8s_daemon.start()
    assert wait_until(k8s_daemon.ready), k8s_daemon.log_text()
    assert wait_until(lambda: k8s_daemon.metric(OBJECTS % "claims") == 1), k8s_daemon.log_text()
    nads = k8s_daemon.metric(OBJECTS % "nads")  # what the session's other tests left
    before = settled_rss(k8s_daemon)

    started = time.monotonic()
    cluster.grow()
    create_nad(cluster.admin, ns, "mine-net")  # the watch passed over every NAD before it
    took = time.monotonic() - started
    assert wait_until(lambda: k8s_daemon.metric(OBJECTS % "nads") == nads + 1, timeout=60)
    after = settled_rss(k8s_daemon)
    held = k8s_daemon.metric('braid_daemon_cache_bytes{cache="nads"}')
    print(f"\ncreated {PODS} pods of 50 other nodes, {CLAIMS} claims, {NADS} NADs in "
          f"{took:.0f} s; daemon RSS {before / 2**20:.1f} -> {after / 2**20:.1f} MiB "
          f"(+{(after - before) / 2**20:.2f} MiB); NAD cache {held:.0f} bytes")  # fmt: skip
    assert after - before < GROWTH, f"the daemon grew by {after - before} bytes"
    assert k8s_daemon.metric(OBJECTS % "claims") == 1  # its own pod's, none of the others
    claims = fault_proxy.requests(where(path="/resourceclaims"))
    assert {r.path.rsplit("/", 1)[-1] for r in claims} == {"mine"}, claims
    assert k8s_daemon.ready()
