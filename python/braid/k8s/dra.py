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
"""

from __future__ import annotations

import logging
from typing import Any, Protocol
from urllib.parse import quote

import msgspec

from braid.errors import TRY_AGAIN_LATER, CniError
from braid.k8s.client import KubeClient
from braid.k8s.dra_objects import (
    DeviceKey,
    allocated,
    claim_names,
    claims_path,
    device_attributes,
    field_at,
    network_data,
    reserved_for,
    slices_path,
)
from braid.k8s.errors import ApiError
from braid.k8s.objects import check_uid, pod_info
from braid.k8s.retry import RetryPolicy, call_with_retries
from braid.nad.devices import ClaimedDevice

log = logging.getLogger("braid.k8s")
# Without the daemon's caches, every claim is listed live to find a device another pod holds:
# this many a page, at most this many pages.
CLAIM_LIST_PAGE = 500
CLAIM_LIST_PAGES = 20


class DraCaches(Protocol):
    """The daemon's watches: the node's pods, every ResourceClaim, the node's slices."""

    def cached_pod(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def cached_claim(self, namespace: str, name: str) -> dict[str, Any] | None: ...
    def cached_slices(self) -> list[dict[str, Any]]: ...
    def cached_claims(self) -> list[dict[str, Any]]: ...


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
        if pod is None or not names:
            return []
        node = field_at(pod, "spec", "nodeName")
        slices = _Slices(self, node if isinstance(node, str) else "")
        found: list[ClaimedDevice] = []
        for claim_name in names:
            claim = self._claim(namespace, claim_name, uid)
            found.extend(self._claim_devices(claim, f"{namespace}/{claim_name}", name, uid, slices))
        return self._held_elsewhere(found, name, uid)

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

    def _held_elsewhere(
        self, found: list[ClaimedDevice], pod: str, uid: str
    ) -> list[ClaimedDevice]:
        """``found`` with, for each device another claim also allocates to another pod, that
        pod in ``others``. The other claims come from the caches, each read live first so that
        a cache behind a deallocation refuses nothing; without caches, from a live LIST of
        every claim (``CLAIM_LIST_PAGE`` a page, at most ``CLAIM_LIST_PAGES`` pages)."""
        if not found:
            return found
        wanted = {c.key: c for c in found}
        mine = {c.claim for c in found}
        if self.caches is not None:
            refs = _claims_allocating(self.caches.cached_claims(), set(wanted), mine)
            others = [(ref, self._read_claim(ref)) for ref in refs]
        else:
            listed = dict(self._list_claims())
            refs = _claims_allocating(list(listed.values()), set(wanted), mine)
            others = [(ref, listed[ref]) for ref in refs]
        holders: dict[tuple[str, str, str], list[str]] = {}
        for ref, claim in others:
            if claim is None:
                continue
            what = f"ResourceClaim {ref}"
            namespace = ref.split("/", 1)[0]
            pods = [
                f"{namespace}/{n}"
                for n, u in reserved_for(claim, what)
                if (u != uid if uid else n != pod)
            ]
            for key in set(allocated(claim, what) or []) & wanted.keys():
                holders.setdefault(key, []).extend(pods)
        return [
            msgspec.structs.replace(c, others=(*c.others, *holders[c.key]))
            if holders.get(c.key)
            else c
            for c in found
        ]

    def _read_claim(self, ref: str) -> dict[str, Any] | None:
        namespace, name = ref.split("/", 1)
        return self.get_object(claims_path(namespace, name), f"GET ResourceClaim {ref}")

    def _list_claims(self) -> list[tuple[str, dict[str, Any]]]:
        """Every claim of the cluster, live, as (namespace/name, claim)."""
        claims: list[tuple[str, dict[str, Any]]] = []
        token = ""
        for page in range(CLAIM_LIST_PAGES):
            query = {"limit": str(CLAIM_LIST_PAGE), **({"continue": token} if token else {})}
            listed = self.get_object(claims_path(), f"LIST ResourceClaims (page {page + 1})", query)
            items = listed.get("items") if listed else None
            for item in items if isinstance(items, list) else []:
                meta = item.get("metadata") if isinstance(item, dict) else None
                if isinstance(meta, dict):
                    claims.append((f"{meta.get('namespace')}/{meta.get('name')}", item))
            token = field_at(listed or {}, "metadata", "continue")
            if not isinstance(token, str) or not token:
                return claims
        log.warning(
            "more than %d ResourceClaims in the cluster: only those were checked for a device "
            "another pod holds (braid's daemon watches every claim)",
            len(claims),
        )
        return claims


def _claims_allocating(
    claims: list[dict[str, Any]], keys: set[DeviceKey], mine: set[str]
) -> list[str]:
    """namespace/name of each claim (not one of ``mine``) that allocates one of ``keys``;
    a claim braid cannot read is passed over."""
    found = []
    for claim in claims:
        meta = claim.get("metadata") or {}
        ref = f"{meta.get('namespace')}/{meta.get('name')}"
        if ref in mine:
            continue
        try:
            devices = allocated(claim, f"ResourceClaim {ref}") or []
        except CniError:
            continue
        if keys.intersection(devices):
            found.append(ref)
    return found


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
        what = f"LIST ResourceSlices ({selector})"
        listed = self.reader.get_object(slices_path(), what, {"fieldSelector": selector})
        items = listed.get("items") if listed else None
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
