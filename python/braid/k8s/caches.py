"""The daemon's caches: the pods of this node (``spec.nodeName``) and every NAD, kept by
watches, with a ``Store`` view that reads the caches first and the API server on a miss.

A miss is a live GET with bounded retries and backoff, so a NAD created a moment ago (not yet
in the cache) does not fail the ADD. A cached pod whose UID is not the runtime's may be stale
(recreated with the same name): the live object decides. With the pod annotations passed by
the runtime and the NADs cached, an ADD makes no read at all.

With ``claims`` (braid's ``resourceClaims``), every ResourceClaim and this node's
ResourceSlices are watched too, for Dynamic Resource Allocation (``braid.k8s.dra``): a pod's
claimed devices are then read from the caches, and a claim the cache does not have, or has not
seen allocated and reserved for the pod yet, is read live.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from braid.k8s.client import KubeClient
from braid.k8s.dra import ClaimReader
from braid.k8s.dra_objects import (
    claims_path,
    slices_path,
    trim_claim,
    trim_pod_claims,
    trim_slice,
)
from braid.k8s.informers import Reflector
from braid.k8s.objects import check_uid, nad_definition, nad_path, pod_info
from braid.k8s.retry import RetryPolicy
from braid.k8s.store import KubeStore
from braid.nad.devices import ClaimedDevice
from braid.nad.manifests import NetworkAttachmentDefinition


def _trim_pod(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    keep = ("namespace", "name", "uid", "annotations", "resourceVersion")
    return {"metadata": {k: meta[k] for k in keep if k in meta}, **trim_pod_claims(obj)}


def _trim_nad(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    keep = ("namespace", "name", "annotations", "resourceVersion")
    return {"metadata": {k: meta[k] for k in keep if k in meta}, "spec": obj.get("spec")}


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
    ) -> None:
        selector = {"fieldSelector": f"spec.nodeName={node_name}"}
        self.pods = Reflector(
            client, "/api/v1/pods", trim=_trim_pod, query=selector, watch_timeout=watch_timeout
        )
        self.nads = Reflector(client, nad_path(), trim=_trim_nad, watch_timeout=watch_timeout)
        self.live = KubeStore(client, retry=retry)
        self.claims: Reflector | None = None
        self.slices: Reflector | None = None
        if claims:
            self.claims = Reflector(
                client, claims_path(), trim=trim_claim, watch_timeout=watch_timeout
            )
            self.slices = Reflector(
                client, slices_path(), trim=trim_slice, query=selector, watch_timeout=watch_timeout
            )
        self.store = CachedStore(self)
        self._threads: list[threading.Thread] = []

    def _reflectors(self) -> list[tuple[str, Reflector]]:
        found = [("pods", self.pods), ("nads", self.nads)]
        if self.claims is not None and self.slices is not None:
            found += [("claims", self.claims), ("slices", self.slices)]
        return found

    def start(self) -> None:
        for name, reflector in self._reflectors():
            thread = threading.Thread(target=reflector.run, name=f"braid-watch-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def wait_synced(self, timeout: float) -> bool:
        """True once both caches have listed (the daemon may serve before: misses go live)."""
        return self.pods.synced.wait(timeout) and self.nads.synced.wait(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        for _, reflector in self._reflectors():
            reflector.stop()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()


class CachedStore:
    """The engine's ``Store`` over ``ClusterCaches``."""

    def __init__(self, caches: ClusterCaches) -> None:
        self.caches = caches
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
        if cached is not None:
            return nad_definition(cached, namespace, name)
        return self.caches.live.get_nad(namespace, name)

    def claimed_devices(self, namespace: str, name: str, uid: str) -> list[ClaimedDevice]:
        """The devices the pod's ResourceClaims allocated (``braid.k8s.dra``)."""
        return self.claim_reader.devices(namespace, name, uid)

    # ``braid.k8s.dra.DraCaches``: without the claim watches, every read is a miss.

    def cached_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.caches.pods.get(namespace, name)

    def cached_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        claims = self.caches.claims
        return claims.get(namespace, name) if claims is not None else None

    def cached_slices(self) -> list[dict[str, Any]]:
        slices = self.caches.slices
        return slices.values() if slices is not None else []

    def cached_claims(self) -> list[dict[str, Any]]:
        claims = self.caches.claims
        return claims.values() if claims is not None else []
