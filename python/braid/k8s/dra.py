"""Dynamic Resource Allocation (resource.k8s.io/v1): the devices a pod's ResourceClaims
allocated, for the NADs annotated with a resourceName.

The pod names its claims in ``spec.resourceClaims``: directly (``resourceClaimName``), or
through a template, whose generated claim ``status.resourceClaimStatuses`` names. A claim's
allocation (``status.allocation.devices.results``) names each device by driver, pool and
device; the node's ResourceSlices publish the device's attributes, of which braid reads two:
``k8s.cni.cncf.io/resourceName``, the resourceName of the NADs the device serves, and
``k8s.cni.cncf.io/deviceID``, the ID its delegate gets. A device without both is not a
network device (a GPU of the same claim, say) and is left out. A driver's
``status.devices[].networkData`` for the device becomes network-status ``ips`` and ``mac``.

``ClaimReader`` reads through ``DraCaches`` (the daemon's watches) when it has them, and the
API server when they miss or look stale (a claim not yet allocated, or not reserved for the
pod); a claim still not allocated at the API server fails the ADD with code 11.

The pod's extended-resource claim (``status.extendedResourceClaimStatus``) is read the same
way, its devices checked against the pod's request mappings (``braid.k8s.dra_extended``).

A device another pod holds is refused (code 11). Another pod holds a device when a claim of
that pod is reserved for it and allocates the device: either the device's own claim is
reserved for another pod too, or another claim allocates it. Such another claim is looked for
among the claims the other pods of the pod's node name (``spec.resourceClaims``, and
``status.resourceClaimStatuses`` for those made from a template): a network device is a
node's, and only a pod of that node can take it into its network namespace; kubelet prepares
a claim for a pod only when the pod names it. That set is bounded by the node's pods (kubelet's
``maxPods``) and the API server's 32 claims a pod, whatever the cluster holds, and it is
complete: the pods come from the daemon's cache of its node's pods, or from one paginated LIST
with the field selector ``spec.nodeName`` in ``braid-thin``. Each such claim is read from the
daemon's claim cache, or live (``braid-thin``, a claim the cache does not hold, and one the
cache shows allocating the device, so that a cache behind a deallocation refuses nothing).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol
from urllib.parse import quote

import msgspec

from braid.errors import TRY_AGAIN_LATER, CniError
from braid.k8s.client import KubeClient
from braid.k8s.dra_extended import check_owner, extended_claim, mapped_devices
from braid.k8s.dra_objects import (
    DeviceKey,
    allocated,
    claim_names,
    claims_path,
    device_attributes,
    field_at,
    named_claims,
    network_data,
    reserved_for,
    slices_path,
    trim_pod_claims,
    trim_slice,
)
from braid.k8s.errors import ApiError
from braid.k8s.listing import list_all
from braid.k8s.objects import check_uid, pod_info
from braid.k8s.retry import RetryPolicy, call_with_retries
from braid.nad.devices import ClaimedDevice

log = logging.getLogger("braid.k8s")


class DraCaches(Protocol):
    """The daemon's watches: the node's pods, every ResourceClaim, the node's slices."""

    def cached_pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def cached_pods(self) -> list[dict[str, Any]]: ...
    def cached_claim(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def cached_slices(self) -> list[dict[str, Any]]: ...


class ClaimReader:
    """The claimed devices of one pod: through ``caches`` when given, else (and on a miss)
    live GETs with ``retry``."""

    def __init__(
        self, client: KubeClient, *, retry: RetryPolicy, caches: DraCaches | None = None
    ) -> None:
        self.client, self.retry, self.caches = client, retry, caches

    def get_object(
        self, path: str, what: str, query: dict[str, str] | None = None
    ) -> dict[str, Any] | None:
        def attempt() -> dict[str, Any] | None:
            try:
                return self.client.json("GET", path, query=query or {}, what=what)
            except ApiError as exc:
                if exc.status == 404:
                    return None
                raise

        return call_with_retries(attempt, self.retry)

    def devices(self, namespace: str, name: str, uid: str) -> list[ClaimedDevice]:
        what = f"pod {namespace}/{name}"
        pod, names = self._pod(namespace, name, uid, what)
        extended = extended_claim(pod, what) if pod is not None else None
        if pod is None or not (names or extended):
            return []
        node = field_at(pod, "spec", "nodeName")
        slices = _Slices(self, node if isinstance(node, str) else "")
        found: list[ClaimedDevice] = []
        for claim_name in names or []:
            claim = self._claim(namespace, claim_name, uid)
            found.extend(self._claim_devices(claim, f"{namespace}/{claim_name}", name, uid, slices))
        if extended is not None:  # braid.k8s.dra_extended
            ref = f"{namespace}/{extended.name}"
            claim = self._claim(namespace, extended.name, uid)
            check_owner(claim, name, uid, f"ResourceClaim {ref}")
            mine = self._claim_devices(claim, ref, name, uid, slices)
            found.extend(mapped_devices(mine, claim, extended, f"ResourceClaim {ref}"))
        held = _Holders(self, namespace, name, uid, node if isinstance(node, str) else "")
        return held.mark(found)

    def _pod(
        self, namespace: str, name: str, uid: str, what: str
    ) -> tuple[dict[str, Any] | None, list[str] | None]:
        if self.caches is not None:
            pod = self.caches.cached_pod(namespace, name)
            fresh = pod is not None and (not uid or field_at(pod, "metadata", "uid") == uid)
            if pod is not None and fresh:
                names = claim_names(pod, what)
                if names is not None:
                    return pod, names
        path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
        pod = self.get_object(path, f"GET pod {namespace}/{name}")
        if pod is None:
            return None, None
        check_uid(pod_info(pod, namespace, name), uid)  # a pod recreated: not this sandbox's
        names = claim_names(pod, what)
        if names is None:
            raise CniError(
                TRY_AGAIN_LATER,
                f"{what}: a claim made from a ResourceClaimTemplate is not named in the pod's "
                "status.resourceClaimStatuses yet; the ADD is to be retried",
            )
        return pod, names

    def _claim(self, namespace: str, name: str, uid: str) -> dict[str, Any]:
        what = f"ResourceClaim {namespace}/{name}"
        if self.caches is not None:
            cached = self.caches.cached_claim(namespace, name)
            if cached is not None and _ready(cached, uid, what):
                return cached
        claim = self.get_object(claims_path(namespace, name), f"GET {what}")
        if claim is None:
            raise CniError(
                TRY_AGAIN_LATER,
                f"{what}, which the pod names, does not exist; the ADD is to be retried",
            )
        if allocated(claim, what) is None:
            raise CniError(
                TRY_AGAIN_LATER,
                f"{what} is not allocated yet, so braid cannot tell which devices the pod got; "
                "nothing was attached and the ADD is to be retried",
            )
        return claim

    def _claim_devices(
        self, claim: dict[str, Any], ref: str, pod: str, uid: str, slices: _Slices
    ) -> list[ClaimedDevice]:
        what = f"ResourceClaim {ref}"
        namespace = ref.split("/", 1)[0]
        others = tuple(
            f"{namespace}/{n}"
            for n, u in reserved_for(claim, what)
            if (u != uid if uid else n != pod)
        )
        found = []
        for key in allocated(claim, what) or []:
            attributes = slices.lookup(key)
            if attributes is None or not all(attributes):
                log.debug("%s: device %s is not a network device", what, "/".join(key))
                continue
            resource, device = attributes
            network = network_data(claim, key, what)
            found.append(ClaimedDevice(resource, device, ref, network, others, key))
        return found


class _Holders:
    """The other pods of the node that hold a device through another claim (module doc)."""

    def __init__(self, reader: ClaimReader, namespace: str, pod: str, uid: str, node: str):
        self.reader = reader
        self.namespace, self.pod, self.uid, self.node = namespace, pod, uid, node

    def mark(self, found: list[ClaimedDevice]) -> list[ClaimedDevice]:
        """``found`` with, for each device another claim allocates to another pod, that pod
        in ``others``."""
        if not found:
            return found
        wanted = {c.key for c in found}
        holders: dict[DeviceKey, list[str]] = {}
        for ref, claim in self._other_claims({c.claim for c in found}, wanted):
            what = f"ResourceClaim {ref}"
            namespace = ref.split("/", 1)[0]
            pods = [
                f"{namespace}/{n}"
                for n, u in reserved_for(claim, what)
                if (u != self.uid if self.uid else (namespace, n) != (self.namespace, self.pod))
            ]
            for key in set(allocated(claim, what) or []) & wanted:
                holders.setdefault(key, []).extend(pods)
        return [
            msgspec.structs.replace(c, others=(*c.others, *holders[c.key]))
            if holders.get(c.key)
            else c
            for c in found
        ]

    def _other_claims(
        self, mine: set[str], wanted: set[DeviceKey]
    ) -> list[tuple[str, dict[str, Any]]]:
        """(namespace/name, claim) of the claims the node's other pods name that allocate one
        of ``wanted``, each as the API server has it (a claim gone is left out)."""
        caches = self.reader.caches
        found = []
        for ref in self._named(mine):
            namespace, name = ref.split("/", 1)
            cached = caches.cached_claim(namespace, name) if caches is not None else None
            if cached is not None and not _allocates(cached, ref, wanted):
                continue
            claim = self.reader.get_object(claims_path(namespace, name), f"GET ResourceClaim {ref}")
            if claim is not None and _allocates(claim, ref, wanted):
                found.append((ref, claim))
        return found

    def _named(self, mine: set[str]) -> list[str]:
        """namespace/name of each claim the node's other pods name, but ``mine``."""
        refs: dict[str, None] = {}
        for pod in self._node_pods():
            namespace = field_at(pod, "metadata", "namespace")
            name = field_at(pod, "metadata", "name")
            if (namespace, name) == (self.namespace, self.pod) or not isinstance(namespace, str):
                continue
            for claim in named_claims(pod):
                ref = f"{namespace}/{claim}"
                if ref not in mine:
                    refs[ref] = None
        return list(refs)

    def _node_pods(self) -> list[dict[str, Any]]:
        caches = self.reader.caches
        if caches is not None:
            return caches.cached_pods()
        if not self.node:
            return []
        return list_all(
            self.reader.client,
            "/api/v1/pods",
            keep=_pod_claims,
            query={"fieldSelector": f"spec.nodeName={self.node}"},
            retry=self.reader.retry,
        )


def _pod_claims(obj: dict[str, Any]) -> dict[str, Any]:
    """What the check keeps of a listed pod: its key and claims."""
    meta = obj.get("metadata")
    keep = {k: meta.get(k) for k in ("namespace", "name")} if isinstance(meta, dict) else {}
    return {"metadata": keep, **trim_pod_claims(obj)}


def _allocates(claim: dict[str, Any], ref: str, wanted: set[DeviceKey]) -> bool:
    """Whether the claim allocates one of ``wanted``; a claim braid cannot read does not."""
    try:
        devices = allocated(claim, f"ResourceClaim {ref}") or []
    except CniError:
        return False
    return not wanted.isdisjoint(devices)


def _ready(claim: dict[str, Any], uid: str, what: str) -> bool:
    """Whether a cached claim can be used as it is: allocated, and reserved for the pod."""
    if allocated(claim, what) is None:
        return False
    return not uid or any(u == uid for _, u in reserved_for(claim, what))


class _Slices:
    """The node's slices of each driver: the caches', then one live LIST per driver."""

    def __init__(self, reader: ClaimReader, node: str) -> None:
        self.reader, self.node = reader, node
        self.live: dict[str, list[dict[str, Any]]] = {}

    def lookup(self, key: DeviceKey) -> tuple[str, str] | None:
        caches = self.reader.caches
        if caches is not None:
            found = device_attributes(caches.cached_slices(), key)
            if found is not None:
                return found
        driver = key[0]
        if driver not in self.live:
            self.live[driver] = self._list(driver)
        return device_attributes(self.live[driver], key)

    def _list(self, driver: str) -> list[dict[str, Any]]:
        selector = f"spec.driver={driver}"
        if self.node:
            selector = f"spec.nodeName={self.node},{selector}"
        return list_all(
            self.reader.client,
            slices_path(),
            keep=trim_slice,
            query={"fieldSelector": selector},
            retry=self.reader.retry,
        )
