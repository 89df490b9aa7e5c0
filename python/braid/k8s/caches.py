"""The daemon's caches: the pods of this node (``spec.nodeName``) and the NADs it uses (those
its pods name and those read on a miss: ``braid.k8s.nad_cache``), kept by watches, with a
``Store`` view that reads the caches first and the API server on a miss.

A miss is a live GET with bounded retries and backoff, so a NAD created a moment ago (not yet
in the cache) does not fail the ADD. A cached pod whose UID is not the runtime's may be stale
(recreated with the same name): the live object decides. With the pod annotations passed by
the runtime and the NADs cached, an ADD makes no read at all.

With ``claims`` (braid's ``resourceClaims``), the ResourceClaims this node's pods name are
kept too (``braid.k8s.node_claims``: one GET each, never a cluster-wide claim LIST or WATCH)
and this node's ResourceSlices watched, for Dynamic Resource Allocation (``braid.k8s.dra``): a
pod's claimed devices are then read from the caches, and a claim the cache does not have, or
has not seen allocated and reserved for the pod yet, is read live.

What a tenant creates does not grow the daemon without bound. A NAD whose ``spec.config`` is
over ``maxNadBytes`` is kept as a marker of its size (``nad_entry``), never its spec, and a
read of it is refused as the engine would refuse it (code 7, naming the NAD and both sizes);
a request whose own ``maxNadBytes`` is larger reads it live (``store_for``). The NAD and claim
caches hold at most ``maxCacheBytes`` each (``braid.k8s.budget``): past it, NADs are evicted
(least recently used first) and objects that still do not fit are not kept; reads of them go
live, one GET of that one object.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from braid.k8s.budget import OVERSIZED, RefusalLog
from braid.k8s.client import KubeClient
from braid.k8s.dra import ClaimReader
from braid.k8s.dra_objects import (
    slices_path,
    trim_pod_claims,
    trim_slice,
)
from braid.k8s.informers import Reflector
from braid.k8s.nad_cache import NadCache
from braid.k8s.node_claims import NodeClaims
from braid.k8s.objects import check_uid, nad_definition, pod_info
from braid.k8s.retry import RetryPolicy
from braid.k8s.store import KubeStore
from braid.nad.default_network import config_too_large
from braid.nad.devices import ClaimedDevice
from braid.nad.manifests import NetworkAttachmentDefinition


def _trim_pod(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    keep = ("namespace", "name", "uid", "annotations", "resourceVersion")
    return {"metadata": {k: meta[k] for k in keep if k in meta}, **trim_pod_claims(obj)}


# How long a cache may fail to sync before the daemon is no longer ready.
STALE_SECONDS = 60.0
# The key of a NAD's marker entry: the bytes of its spec.config, which braid refuses.
SIZE_KEY = "configBytes"


def config_bytes(config: str) -> int:
    """The size ``maxNadBytes`` bounds (``braid.nad.default_network.delegate_from_nad``)."""
    return len(config.encode("utf-8", "surrogatepass"))


def _placeholder(value: Any) -> Any:
    """A value of the same JSON type, empty: a field of the wrong type is refused naming its
    type when the NAD is used, so the type is all the cache keeps of it."""
    return type(value)()


def nad_entry(obj: dict[str, Any], max_nad_bytes: int | None) -> dict[str, Any]:
    """What the cache keeps of a NAD: its metadata and ``spec.config``; with ``spec.config``
    over ``max_nad_bytes``, a marker (namespace, name, resourceVersion and ``SIZE_KEY``)."""
    meta = obj.get("metadata") or {}
    keep = ("namespace", "name", "annotations", "resourceVersion")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return {"metadata": {k: meta[k] for k in keep if k in meta}, "spec": _placeholder(spec)}
    config = spec.get("config")
    if isinstance(config, str) and max_nad_bytes is not None:
        size = config_bytes(config)
        if size > max_nad_bytes:
            ident = ("namespace", "name", "resourceVersion")
            return {"metadata": {k: meta[k] for k in ident if k in meta}, SIZE_KEY: size}
    if config is not None and not isinstance(config, str):
        config = _placeholder(config)
    return {"metadata": {k: meta[k] for k in keep if k in meta}, "spec": {"config": config}}


class ClusterCaches:
    """Owned by the daemon: ``start()``, optionally ``wait_synced()``, use ``store``,
    ``stop()`` at the end."""

    def __init__(
        self,
        client: KubeClient,
        *,
        node_name: str,
        retry: RetryPolicy | None = None,
        watch_timeout: int = 300,
        claims: bool = False,
        max_nad_bytes: int | None = None,
        max_cache_bytes: int | None = None,
    ) -> None:
        """``max_nad_bytes``: NADs over it are kept as markers; ``max_cache_bytes``: the
        bound of the NAD cache and of the claim cache, each (None: no bound)."""
        selector = {"fieldSelector": f"spec.nodeName={node_name}"}
        self.max_nad_bytes = max_nad_bytes
        self.pods = Reflector(
            client, "/api/v1/pods", trim=_trim_pod, query=selector, watch_timeout=watch_timeout
        )
        refusals = RefusalLog("NetworkAttachmentDefinition")
        self.live = KubeStore(client, retry=retry)
        self.nads = NadCache(
            client,
            self.pods,
            trim=lambda obj: self._nad_entry(obj, refusals),
            live=self.live,
            watch_timeout=watch_timeout,
            max_bytes=max_cache_bytes,
            refusals=refusals,
        )
        self.claims: NodeClaims | None = None
        self.slices: Reflector | None = None
        if claims:
            self.claims = NodeClaims(
                client, self.pods, max_bytes=max_cache_bytes, refusals=RefusalLog("ResourceClaim")
            )
            self.slices = Reflector(
                client, slices_path(), trim=trim_slice, query=selector, watch_timeout=watch_timeout
            )
        self.store = CachedStore(self, max_nad_bytes=max_nad_bytes)
        self._threads: list[threading.Thread] = []

    def _nad_entry(self, obj: dict[str, Any], refusals: RefusalLog) -> dict[str, Any]:
        entry = nad_entry(obj, self.max_nad_bytes)
        if SIZE_KEY in entry:
            meta = entry["metadata"]
            refusals.note(
                OVERSIZED,
                f"{meta.get('namespace')}/{meta.get('name')}: spec.config is "
                f"{entry[SIZE_KEY]} bytes, over the {self.max_nad_bytes} braid allows "
                "(configuration key `maxNadBytes`): kept as a marker of its size, refused "
                "when used",
            )
        return entry

    def store_for(self, max_nad_bytes: int) -> CachedStore:
        """The store of a request whose ``maxNadBytes`` is ``max_nad_bytes``."""
        if max_nad_bytes == self.max_nad_bytes:
            return self.store
        return CachedStore(self, max_nad_bytes=max_nad_bytes)

    def stats(self) -> list[tuple[str, int, int, dict[str, int]]]:
        """(cache, objects kept, bytes counted, refusals by reason) of each bounded cache."""
        nads = (len(self.nads), self.nads.used_bytes, self.nads.refusals.counts())
        found = [("nads", *nads[:2], {**nads[2], **self.nads.stats()})]
        if self.claims is not None:
            claims = self.claims
            found.append(("claims", len(claims), claims.used_bytes, claims.refusals.counts()))
        return found

    def _reflectors(self) -> list[tuple[str, Reflector | NodeClaims]]:
        found: list[tuple[str, Reflector | NodeClaims]] = [("pods", self.pods), ("nads", self.nads)]
        if self.claims is not None and self.slices is not None:
            found += [("claims", self.claims), ("slices", self.slices)]
        return found

    def start(self) -> None:
        for name, reflector in self._reflectors():
            thread = threading.Thread(target=reflector.run, name=f"braid-watch-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        prefetch = threading.Thread(
            target=self.nads.prefetch,
            args=(self.nads.stopping,),
            name="braid-nad-prefetch",
            daemon=True,
        )
        prefetch.start()
        self._threads.append(prefetch)

    def wait_synced(self, timeout: float) -> bool:
        """True once every cache has listed, the claims of the node's pods read (the daemon
        may serve before: misses go live)."""
        return all(r.synced.wait(timeout) for _, r in self._reflectors())

    def stale(self, after: float = STALE_SECONDS) -> list[tuple[str, float]]:
        """(cache, seconds) of each cache that has failed to list, watch or read for more
        than ``after`` seconds."""
        now = time.monotonic()
        found = []
        for name, reflector in self._reflectors():
            since = reflector.broken_since
            if since is not None and now - since > after:
                found.append((name, now - since))
        return found

    def stop(self, timeout: float = 5.0) -> None:
        for _, reflector in self._reflectors():
            reflector.stop()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()


class CachedStore:
    """The engine's ``Store`` over ``ClusterCaches``."""

    def __init__(self, caches: ClusterCaches, *, max_nad_bytes: int | None = None) -> None:
        self.caches = caches
        self.max_nad_bytes = max_nad_bytes
        self.claim_reader = ClaimReader(caches.live.client, retry=caches.live.retry, caches=self)

    def get_pod(self, namespace: str, name: str, uid: str) -> Mapping[str, str] | None:
        cached = self.caches.pods.get(namespace, name)
        if cached is not None:
            pod = pod_info(cached, namespace, name)
            if not uid or pod.uid == uid or pod.mirror:
                return pod.annotations
        live = self.caches.live.fetch_pod(namespace, name)
        if live is None:
            return None
        check_uid(live, uid)
        return live.annotations

    def get_nad(self, namespace: str, name: str) -> NetworkAttachmentDefinition | None:
        cached = self.caches.nads.get(namespace, name)
        if cached is None:  # one GET, kept for the next ADD (``braid.k8s.nad_cache``)
            cached = self.caches.nads.read_live(namespace, name)
            if cached is None:
                return None
        size = cached.get(SIZE_KEY)
        if not isinstance(size, int):
            return nad_definition(cached, namespace, name)
        if self.max_nad_bytes is not None and size > self.max_nad_bytes:
            raise config_too_large(namespace, name, size, self.max_nad_bytes)
        return self.caches.live.get_nad(namespace, name)  # this request allows more

    def claimed_devices(self, namespace: str, name: str, uid: str) -> list[ClaimedDevice]:
        """The devices the pod's ResourceClaims allocated (``braid.k8s.dra``)."""
        return self.claim_reader.devices(namespace, name, uid)

    # ``braid.k8s.dra.DraCaches``: without the claim watches, every read is a miss.

    def cached_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.caches.pods.get(namespace, name)

    def cached_pods(self) -> list[dict[str, Any]]:
        return self.caches.pods.values()

    def cached_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        claims = self.caches.claims
        return claims.get(namespace, name) if claims is not None else None

    def cached_slices(self) -> list[dict[str, Any]]:
        slices = self.caches.slices
        return slices.values() if slices is not None else []
