"""The daemon's claim cache (braid.k8s.node_claims) holds the claims its node's pods name and
nothing else: read once when named, read again while not allocated and reserved, dropped when
no pod names it, bounded by maxCacheBytes. The real API server's side is in
tests/cluster/test_k8s_dra.py and test_daemon_k8s_scale.py."""

from __future__ import annotations

from typing import Any, cast

from braid.errors import TRY_AGAIN_LATER
from braid.k8s.client import KubeClient
from braid.k8s.errors import ApiError
from braid.k8s.informers import Reflector
from braid.k8s.node_claims import PENDING_DELAYS, NodeClaims


class Pods:
    """What NodeClaims reads of the pod reflector."""

    def __init__(self) -> None:
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.listeners: list[Any] = []

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.pods.get((namespace, name))

    def put(self, name: str, *claims: str) -> None:
        entries = [{"name": c, "resourceClaimName": c} for c in claims]
        self.pods[("ns", name)] = {"metadata": {"namespace": "ns", "name": name},
                                   "spec": {"resourceClaims": entries}}  # fmt: skip
        for listener in self.listeners:
            listener(("ns", name))

    def delete(self, name: str) -> None:
        del self.pods[("ns", name)]
        for listener in self.listeners:
            listener(("ns", name))


class Claims:
    """The API server's claims; ``None``: 404."""

    def __init__(self) -> None:
        self.claims: dict[str, dict[str, Any] | None] = {}
        self.gets: list[str] = []

    def json(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        name = path.rsplit("/", 1)[-1]
        self.gets.append(name)
        claim = self.claims.get(name)
        if claim is None:
            raise ApiError(TRY_AGAIN_LATER, "not found", status=404)
        return claim


def claim(name: str, *, allocated: bool = True, pad: int = 0) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if allocated:
        results = [{"request": "r", "driver": "d", "pool": "p", "device": "x" * (1 + pad)}]
        status = {"allocation": {"devices": {"results": results}},
                  "reservedFor": [{"resource": "pods", "name": "a", "uid": "u"}]}  # fmt: skip
    return {"metadata": {"namespace": "ns", "name": name}, "status": status}


def world(max_bytes: int | None = None) -> tuple[Pods, Claims, NodeClaims]:
    pods, api = Pods(), Claims()
    cache = NodeClaims(cast(KubeClient, api), cast(Reflector, pods), max_bytes=max_bytes)
    return pods, api, cache


def drain(cache: NodeClaims) -> None:
    """Reads every claim due now, as the cache's thread would."""
    for key in cache._next_due():
        cache._read(key)


def test_only_named_claims_are_read_kept_and_dropped_when_unnamed() -> None:
    pods, api, cache = world()
    api.claims = {"c1": claim("c1"), "c2": claim("c2"), "other": claim("other")}
    pods.put("a", "c1", "c2")
    drain(cache)
    assert sorted(api.gets) == ["c1", "c2"]
    assert len(cache) == 2
    assert cache.wanted == 2
    drain(cache)  # allocated and reserved: not read again
    assert len(api.gets) == 2
    pods.put("a", "c1", "c2")  # a change of the pod naming the same claims: no read
    drain(cache)
    assert len(api.gets) == 2
    pods.delete("a")
    assert len(cache) == 0
    assert cache.get("ns", "c1") is None


def test_a_claim_not_allocated_or_missing_is_read_again_later() -> None:
    pods, api, cache = world()
    api.claims = {"c1": claim("c1", allocated=False)}  # "c2" does not exist yet
    pods.put("a", "c1", "c2")
    drain(cache)
    assert cache.get("ns", "c1") is not None  # kept, but not trusted by the reader
    assert cache.get("ns", "c2") is None
    assert set(cache._due) == {("ns", "c1"), ("ns", "c2")}
    assert cache._next_due() == []  # after a backoff, not at once
    assert cache.broken_since is None  # a 404 is an answer, not a failure
    for _ in PENDING_DELAYS:
        cache._due = dict.fromkeys(cache._due, (0.0, cache._due[("ns", "c2")][1]))
        drain(cache)
    assert cache._due == {}  # given up on in the background...
    gets = len(api.gets)
    pods.put("a", "c1", "c2")  # ...until the pod changes
    drain(cache)
    assert len(api.gets) == gets + 2


def test_claims_past_max_cache_bytes_are_not_kept_and_counted() -> None:
    pods, api, cache = world(max_bytes=4096)
    api.claims = {f"c{i}": claim(f"c{i}", pad=1000) for i in range(8)}
    pods.put("a", *api.claims)
    drain(cache)
    assert 0 < len(cache) < 8
    assert cache.used_bytes <= 4096
    assert cache.refusals.counts().get("bound", 0) == 8 - len(cache)
