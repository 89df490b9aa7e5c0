"""The NAD cache's rules (braid.k8s.nad_cache) without an API server: which NADs the node's
pods name, what a watch keeps, the least recently used evicted past the count, and a live read
that raced a watch event never put back in place of the newer version."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

from braid.k8s.caches import nad_entry
from braid.k8s.client import KubeClient
from braid.k8s.informers import Reflector
from braid.k8s.nad_cache import EVICTED, NadCache, named_nads
from braid.k8s.store import KubeStore

NETWORKS = "k8s.v1.cni.cncf.io/networks"


def nad(name: str, version: str = "1") -> dict[str, Any]:
    config = json.dumps({"cniVersion": "1.0.0", "name": name, "type": "bridge"})
    meta = {"namespace": "ns", "name": name, "resourceVersion": version}
    return {"metadata": meta, "spec": {"config": config}}


def event(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode()


class Live:
    """``KubeStore.nad_object``: answers ``objects``, calling ``during`` while it "reads"."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.during: Callable[[], None] = lambda: None
        self.reads: list[str] = []

    def nad_object(self, namespace: str, name: str) -> dict[str, Any] | None:
        self.reads.append(name)
        self.during()
        return self.objects.get(name)


def cache(max_objects: int = 1000) -> tuple[NadCache, Reflector, Live]:
    client = cast(KubeClient, None)  # nothing here reaches the API server
    pods = Reflector(client, "/api/v1/pods", trim=lambda obj: obj)
    live = Live()
    nads = NadCache(client, pods, trim=lambda obj: nad_entry(obj, None),
                    live=cast(KubeStore, live), max_objects=max_objects)  # fmt: skip
    return nads, pods, live


def pod(name: str, networks: str) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": name, "annotations": {NETWORKS: networks}}}


def test_the_watch_keeps_what_the_node_s_pods_name_and_nothing_else() -> None:
    nads, pods, _ = cache()
    pods._apply(event("ADDED", pod("web", "blue")))
    nads._apply(event("ADDED", nad("blue")))
    nads._apply(event("ADDED", nad("red")))
    assert nads.get("ns", "blue") is not None
    assert nads.get("ns", "red") is None
    nads._apply(event("MODIFIED", nad("blue", "2")))
    assert nads.get("ns", "blue")["metadata"]["resourceVersion"] == "2"  # type: ignore[index]
    pods._apply(event("DELETED", pod("web", "blue")))
    nads._apply(event("ADDED", nad("blue", "3")))  # still kept: only evicted when room is needed
    assert nads.get("ns", "blue")["metadata"]["resourceVersion"] == "3"  # type: ignore[index]
    nads._apply(event("DELETED", nad("blue", "4")))
    assert len(nads) == 0


def test_a_miss_is_read_once_then_kept_and_the_least_recently_used_is_evicted() -> None:
    nads, pods, live = cache(max_objects=2)
    pods._apply(event("ADDED", pod("web", "pinned")))
    nads._apply(event("ADDED", nad("pinned")))
    live.objects = {name: nad(name) for name in ("a", "b")}
    assert nads.read_live("ns", "a") is not None
    assert nads.get("ns", "a") is not None
    assert nads.read_live("ns", "b") is not None  # evicts a, never the pinned one
    assert (nads.get("ns", "a"), nads.get("ns", "pinned") is not None) == (None, True)
    assert nads.get("ns", "b") is not None
    assert live.reads == ["a", "b"]
    assert nads.stats() == {EVICTED: 1, "live_reads": 2}
    assert nads.read_live("ns", "absent") is None
    assert nads.get("ns", "absent") is None


def test_a_live_read_that_raced_a_watch_event_is_not_kept() -> None:
    nads, _, live = cache()
    live.objects = {"a": nad("a", "1")}
    # While the GET is answered with version 1, the watch brings version 2 (a NAD not kept:
    # passed over), then its deletion would be missed if version 1 were kept now.
    live.during = lambda: nads._apply(event("DELETED", nad("a", "2")))
    assert nads.read_live("ns", "a") is not None  # the answer serves this read
    assert nads.get("ns", "a") is None  # and is not kept
    live.during = lambda: None
    nads.read_live("ns", "a")
    assert nads.get("ns", "a") is not None


def test_named_nads_reads_both_annotations_and_leaves_out_what_does_not_parse() -> None:
    default = "v1.multus-cni.io/default-network"
    annotations = {NETWORKS: "b/red, blue@net2", default: "kube-system/main"}
    assert named_nads({"metadata": {"namespace": "a", "annotations": annotations}}) == {
        ("b", "red"), ("a", "blue"), ("kube-system", "main")}  # fmt: skip
    assert named_nads(pod("x", "[not json")) == frozenset()
    assert named_nads({"metadata": {"namespace": "a", "annotations": "x"}}) == frozenset()
    assert named_nads(None) == frozenset()


def test_a_pod_naming_missing_nads_is_read_for_at_most_once_an_interval() -> None:
    nads, pods, live = cache()
    now = [100.0]
    nads.clock, nads.prefetch_interval = lambda: now[0], 2.0
    nads.synced.set()  # listed: what pods name from now on is read in the background
    for edit in range(36):  # a tenant's edits, 4 a second, each naming a NAD that does not exist
        pods._apply(event("MODIFIED", pod("web", f"ghost-{edit}")))
        with nads._lock:
            due, _ = nads._due()
        for key in due:
            nads.read_live(*key)
        now[0] += 0.25
    assert live.reads == [f"ghost-{edit}" for edit in (0, 8, 16, 24, 32)]  # one each 2 s
    pods._apply(event("MODIFIED", pod("web", "ghost-50, other")))
    with nads._lock:
        assert nads._due() == ([], 1.0)  # ghost-32 was read 1 s ago: wait 1 s more
    now[0] += 1.0  # the interval passed: what the pod names now, once
    with nads._lock:
        assert nads._due()[0] == [("ns", "ghost-50"), ("ns", "other")]
        assert nads._due()[0] == []
    pods._apply(event("DELETED", pod("web", "ghost-50, other")))
    now[0] += 2.0
    with nads._lock:
        assert nads._due()[0] == []
        assert nads._fetched == {}  # nothing kept of a pod once its interval passed
